//! Every native protocol through `rein run`, as a user runs it: the local provider server
//! answers in each protocol's wire format with a parallel batch of two calculator calls (after
//! the model's reasoning, where the protocol has it), then a shell call that needs approval
//! (so the run parks and `rein approve` continues it from another process), then an answer.
//! Each test asserts the requests that follow a tool result: every result paired with its
//! call's id, in call order, and what the protocol requires to be sent back unchanged (Gemini's
//! thought signature, Anthropic's thinking block with its signature, the Responses reasoning
//! item with its encrypted content); and the usage and cost recorded on the operation.

use rein_core::OperationId;
use rein_model::testing::streams::{anthropic, gemini, ollama, responses};
use rein_model::testing::{Canned, ENCRYPTED_REASONING, Recorded, Server, serve};
use rein_store::{SqlStore, Store, Synchronous};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::process::Command;

/// Gemini's signature of the reasoning behind its first function call.
const THOUGHT_SIGNATURE: &str = "c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0LWJlaGluZC1jYWxsLTE=";
/// Anthropic's signature of its thinking block.
const THINKING_SIGNATURE: &str = "EqQCCkgIARACGAIiQL9d+ZbXy0n2kRcVc3aXlU5mY1q2V6o8bQ==";
const THINKING: &str = "Two products first, then the listing.";

struct Env {
    dir: PathBuf,
    server: Server,
    /// `PROVIDER_BASE_URL`-style variables pointing the protocol's provider at the server.
    vars: Vec<(String, String)>,
}

async fn env(responses: Vec<Canned>, vars: &[(&str, &str)]) -> Env {
    let dir = std::env::temp_dir().join(format!("rein-protocols-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = serve(responses, 9).await;
    let vars = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.replace("{base}", &server.base)))
        .collect();
    Env { dir, server, vars }
}

impl Env {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(["--db", &self.dir.join("rein.db").to_string_lossy()])
            .args(args)
            .env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", &self.dir)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c
    }

    async fn rein(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().await.unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// Run `model` through the three turns; the requests the server received, and the
/// operation's recorded tokens and whether it was charged.
async fn three_turns(e: &Env, model: &str) -> (Vec<Recorded>, u64, bool) {
    let (code, _, err) = e
        .rein(&["run", "--model", model, "Multiply, then list the files."])
        .await;
    assert_eq!(code, 3, "parks on the shell call: {err}");
    let store = SqlStore::open(
        &e.dir.join("rein.db").to_string_lossy(),
        Synchronous::Normal,
    )
    .await
    .unwrap();
    let id = store.list_operations(&Default::default()).await.unwrap()[0].id;
    // Another process continues it.
    let (code, out, err) = e.rein(&["approve", &id.to_string(), "--all"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("42 and 5; the folder has rein.db."), "{out}");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 3, "three model calls");
    let record = store.operation(id).await.unwrap().unwrap();
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.state.usage.llm.calls, 3);
    (requests, record.total_tokens, !record.cost.is_zero())
}

/// What each turn's tools return, in call order, as every protocol carries them: in the data
/// blocks spotlighting marks tool output with.
const RESULTS: [&str; 2] = [
    "<data source=\"tool calculator.evaluate\">\n42\n</data>",
    "<data source=\"tool calculator.evaluate\">\n5\n</data>",
];

// ---- OpenAI Chat (and an OpenAI-compatible preset) ----------------------------------------

fn chat_turns() -> Vec<Canned> {
    vec![
        Canned::openai_tools(&[
            ("call_a", "calculator__evaluate", r#"{"expression":"6*7"}"#),
            ("call_b", "calculator__evaluate", r#"{"expression":"2+3"}"#),
        ]),
        Canned::openai_tools(&[("call_c", "shell__run", r#"{"command":"ls"}"#)]),
        Canned::openai_text("42 and 5; the folder has rein.db."),
    ]
}

/// The chat messages after the user's: each assistant turn's calls, then one tool message per
/// call with its id, in order.
fn assert_chat_pairing(requests: &[Recorded]) {
    let after_user = |r: &Recorded| -> Vec<Value> {
        let messages = r.body["messages"].as_array().unwrap();
        let user = messages.iter().position(|m| m["role"] == "user").unwrap();
        messages[user + 1..].to_vec()
    };
    let second = after_user(&requests[1]);
    let calls: Vec<&str> = second[0]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["call_a", "call_b"]);
    assert_eq!(
        second[1..],
        [
            json!({"role": "tool", "tool_call_id": "call_a", "content": RESULTS[0]}),
            json!({"role": "tool", "tool_call_id": "call_b", "content": RESULTS[1]}),
        ]
    );
    let third = after_user(&requests[2]);
    assert_eq!(third[..3], second[..]);
    assert_eq!(third[3]["tool_calls"][0]["id"], "call_c");
    assert_eq!(third[4]["tool_call_id"], "call_c");
    assert!(third[4]["content"].as_str().unwrap().contains("rein.db"));
}

#[tokio::test]
async fn openai_chat_pairs_every_result_with_its_call() {
    let e = env(
        chat_turns(),
        &[("OPENAI_BASE_URL", "{base}/v1"), ("OPENAI_API_KEY", "k")],
    )
    .await;
    let (requests, tokens, cost) = three_turns(&e, "openai/gpt-4o-mini").await;
    assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"));
    assert_chat_pairing(&requests);
    assert_eq!(tokens, 3 * 120);
    assert!(cost, "priced from the catalog");
}

#[tokio::test]
async fn an_openai_compatible_preset_speaks_the_same_protocol() {
    let e = env(
        chat_turns(),
        &[
            ("DEEPSEEK_BASE_URL", "{base}/v1"),
            ("DEEPSEEK_API_KEY", "k"),
        ],
    )
    .await;
    let (requests, tokens, cost) = three_turns(&e, "deepseek/deepseek-chat").await;
    assert!(
        requests[0]
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer k")
    );
    assert_chat_pairing(&requests);
    assert_eq!(tokens, 3 * 120);
    assert!(cost);
}

// ---- Anthropic ----------------------------------------------------------------------------

#[tokio::test]
async fn anthropic_sends_the_signed_thinking_back_before_the_tool_uses() {
    let e = env(
        vec![
            anthropic(
                &[
                    json!({"thinking": THINKING, "signature": THINKING_SIGNATURE}),
                    json!({"id": "toolu_a", "name": "calculator__evaluate", "input": {"expression": "6*7"}}),
                    json!({"id": "toolu_b", "name": "calculator__evaluate", "input": {"expression": "2+3"}}),
                ],
                "tool_use",
            ),
            anthropic(
                &[json!({"id": "toolu_c", "name": "shell__run", "input": {"command": "ls"}})],
                "tool_use",
            ),
            anthropic(&[json!({"text": "42 and 5; the folder has rein.db."})], "end_turn"),
        ],
        &[("ANTHROPIC_BASE_URL", "{base}/v1"), ("ANTHROPIC_API_KEY", "k")],
    )
    .await;
    let (requests, tokens, cost) = three_turns(&e, "anthropic/claude-sonnet-4-5").await;
    let second = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": THINKING, "signature": THINKING_SIGNATURE},
            {"type": "tool_use", "id": "toolu_a", "name": "calculator__evaluate", "input": {"expression": "6*7"}},
            {"type": "tool_use", "id": "toolu_b", "name": "calculator__evaluate", "input": {"expression": "2+3"}},
        ]})
    );
    // The last block of the conversation carries the request's cache breakpoint.
    assert_eq!(
        second[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": RESULTS[0]},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": RESULTS[1], "cache_control": {"type": "ephemeral"}},
        ]})
    );
    let third = requests[2].body["messages"].as_array().unwrap();
    // Anthropic caches up to the marks: the breakpoint moves on, the content stays.
    let unmarked = |m: &[Value]| {
        let mut m = m.to_vec();
        for msg in &mut m {
            for b in msg["content"].as_array_mut().into_iter().flatten() {
                if let Some(b) = b.as_object_mut() {
                    b.remove("cache_control");
                }
            }
        }
        m
    };
    assert_eq!(
        unmarked(&third[1..3]),
        unmarked(&second[1..3]),
        "the history is sent back unchanged"
    );
    assert_eq!(third[4]["content"][0]["tool_use_id"], "toolu_c");
    assert_eq!(tokens, 3 * 120);
    assert!(cost);
}

// ---- Gemini -------------------------------------------------------------------------------

#[tokio::test]
async fn gemini_sends_the_thought_signature_back_on_its_call() {
    let call = |expr: &str| json!({"name": "calculator__evaluate", "args": {"expression": expr}});
    let e = env(
        vec![
            gemini(&[
                json!({"text": "Two products first.", "thought": true}),
                json!({"functionCall": call("6*7"), "thoughtSignature": THOUGHT_SIGNATURE}),
                json!({"functionCall": call("2+3")}),
            ]),
            gemini(&[json!({"functionCall": {"name": "shell__run", "args": {"command": "ls"}}})]),
            gemini(&[json!({"text": "42 and 5; the folder has rein.db."})]),
        ],
        &[
            ("GEMINI_BASE_URL", "{base}/v1beta"),
            ("GEMINI_API_KEY", "k"),
        ],
    )
    .await;
    let (requests, tokens, cost) = three_turns(&e, "gemini/gemini-2.5-flash").await;
    assert!(
        requests[0]
            .path
            .ends_with("/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        "{}",
        requests[0].path
    );
    let contents = requests[1].body["contents"].as_array().unwrap();
    // The model's turn as it was sent: the signature on the call it came with, unchanged.
    let model_parts: Vec<&Value> = contents[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p.get("functionCall").is_some())
        .collect();
    assert_eq!(
        model_parts,
        [
            &json!({"functionCall": call("6*7"), "thoughtSignature": THOUGHT_SIGNATURE}),
            &json!({"functionCall": call("2+3")}),
        ]
    );
    // One function response per call, in call order (Gemini pairs them by position and name).
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "calculator__evaluate", "response": {"content": RESULTS[0]}}},
            {"functionResponse": {"name": "calculator__evaluate", "response": {"content": RESULTS[1]}}},
        ]})
    );
    let third = requests[2].body["contents"].as_array().unwrap();
    assert_eq!(third[1..3], contents[1..3]);
    assert_eq!(
        third[4]["parts"][0]["functionResponse"]["name"],
        "shell__run"
    );
    assert_eq!(tokens, 3 * 120);
    assert!(cost);
}

// ---- Ollama -------------------------------------------------------------------------------

#[tokio::test]
async fn ollama_pairs_results_by_tool_name_in_call_order() {
    let call = |expr: &str| json!({"function": {"name": "calculator__evaluate", "arguments": {"expression": expr}}});
    let e = env(
        vec![
            ollama(Some(THINKING), "", &[call("6*7"), call("2+3")]),
            ollama(
                None,
                "",
                &[json!({"function": {"name": "shell__run", "arguments": {"command": "ls"}}})],
            ),
            ollama(None, "42 and 5; the folder has rein.db.", &[]),
        ],
        &[("OLLAMA_HOST", "{base}")],
    )
    .await;
    let (requests, tokens, cost) = three_turns(&e, "ollama/qwen3:8b").await;
    assert!(requests.iter().all(|r| r.path == "/api/chat"));
    let messages = requests[1].body["messages"].as_array().unwrap();
    let user = messages.iter().position(|m| m["role"] == "user").unwrap();
    let turn = &messages[user + 1];
    assert_eq!(
        turn["thinking"], THINKING,
        "the thinking goes back with its turn"
    );
    let sent: Vec<&Value> = turn["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["function"]["arguments"])
        .collect();
    assert_eq!(
        sent,
        [&json!({"expression": "6*7"}), &json!({"expression": "2+3"})]
    );
    assert_eq!(
        messages[user + 2..],
        [
            json!({"role": "tool", "tool_name": "calculator__evaluate", "content": RESULTS[0]}),
            json!({"role": "tool", "tool_name": "calculator__evaluate", "content": RESULTS[1]}),
        ]
    );
    let third = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(third[user + 1..user + 4], messages[user + 1..]);
    assert_eq!(third[user + 5]["tool_name"], "shell__run");
    assert_eq!(tokens, 3 * 120);
    assert!(!cost, "a local model costs nothing");
}

// ---- OpenAI Responses ---------------------------------------------------------------------

#[tokio::test]
async fn openai_responses_sends_the_encrypted_reasoning_back_and_pairs_outputs_by_call_id() {
    let e = env(
        vec![
            responses(
                Some("Two products first."),
                "",
                &[
                    ("call_a", "calculator__evaluate", r#"{"expression":"6*7"}"#),
                    ("call_b", "calculator__evaluate", r#"{"expression":"2+3"}"#),
                ],
            ),
            responses(None, "", &[("call_c", "shell__run", r#"{"command":"ls"}"#)]),
            responses(None, "42 and 5; the folder has rein.db.", &[]),
        ],
        &[
            ("OPENAI_RESPONSES_BASE_URL", "{base}/v1"),
            ("OPENAI_API_KEY", "k"),
        ],
    )
    .await;
    let (requests, tokens, cost) = three_turns(&e, "openai-responses/o4-mini").await;
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    // o4-mini reasons (the catalog says so): its reasoning is asked for in encrypted form.
    for r in &requests {
        assert_eq!(r.body["store"], false);
        assert_eq!(r.body["include"], json!(["reasoning.encrypted_content"]));
    }
    // After the user's message: the reasoning item as it came, the calls, their outputs.
    let after_user = |r: &Recorded| -> Vec<Value> {
        let input = r.body["input"].as_array().unwrap();
        let user = input.iter().position(|i| i["role"] == "user").unwrap();
        input[user + 1..].to_vec()
    };
    let second = after_user(&requests[1]);
    assert_eq!(
        second,
        [
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two products first."}], "encrypted_content": ENCRYPTED_REASONING}),
            json!({"type": "function_call", "call_id": "call_a", "name": "calculator__evaluate", "arguments": r#"{"expression":"6*7"}"#}),
            json!({"type": "function_call", "call_id": "call_b", "name": "calculator__evaluate", "arguments": r#"{"expression":"2+3"}"#}),
            json!({"type": "function_call_output", "call_id": "call_a", "output": RESULTS[0]}),
            json!({"type": "function_call_output", "call_id": "call_b", "output": RESULTS[1]}),
        ]
    );
    let third = after_user(&requests[2]);
    assert_eq!(third[..5], second[..]);
    assert_eq!(third[5]["call_id"], "call_c");
    assert_eq!(third[6]["call_id"], "call_c");
    assert!(third[6]["output"].as_str().unwrap().contains("rein.db"));
    assert_eq!(tokens, 3 * 120);
    assert!(cost, "priced as OpenAI's model");
}

// ---- Force-finish on every protocol ------------------------------------------------------

/// A protocol as the force-finish and MCP tests drive it: its model, the variables that point
/// it at the local server, a turn calling tools (`(id, function name, arguments)`; ids are
/// dropped where the protocol has none), and an answer.
struct Protocol {
    model: &'static str,
    vars: &'static [(&'static str, &'static str)],
    calls: fn(&[(String, &str, Value)]) -> Canned,
    answer: fn(&str) -> Canned,
}

impl Protocol {
    /// A turn calling the calculator (call `n`).
    fn call(&self, n: usize) -> Canned {
        (self.calls)(&[(
            format!("call_{n}"),
            "calculator__evaluate",
            json!({"expression": "6*7"}),
        )])
    }
}

/// Every request the local server received is one the provider would take.
fn assert_accepted(what: &str, requests: &[Recorded]) {
    for r in requests {
        assert!(
            r.refused.is_none(),
            "{what}: the provider would refuse {}: {:?}\n{}",
            r.path,
            r.refused,
            r.body
        );
    }
}

/// `calls` with their arguments as JSON text, as the OpenAI builders take them.
fn text_arguments(
    calls: &[(String, &str, Value)],
    f: impl Fn(&[(&str, &str, &str)]) -> Canned,
) -> Canned {
    let args: Vec<String> = calls.iter().map(|(_, _, a)| a.to_string()).collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .zip(&args)
        .map(|((id, name, _), a)| (id.as_str(), *name, a.as_str()))
        .collect();
    f(&calls)
}

fn protocols() -> Vec<Protocol> {
    vec![
        Protocol {
            model: "openai/gpt-4o-mini",
            vars: &[("OPENAI_BASE_URL", "{base}/v1"), ("OPENAI_API_KEY", "k")],
            calls: |calls| text_arguments(calls, Canned::openai_tools),
            answer: Canned::openai_text,
        },
        Protocol {
            model: "anthropic/claude-sonnet-4-5",
            vars: &[
                ("ANTHROPIC_BASE_URL", "{base}/v1"),
                ("ANTHROPIC_API_KEY", "k"),
            ],
            calls: |calls| {
                let blocks: Vec<Value> = calls
                    .iter()
                    .map(|(id, name, a)| json!({"id": id.replace("call_", "toolu_"), "name": name, "input": a}))
                    .collect();
                anthropic(&blocks, "tool_use")
            },
            answer: |t| anthropic(&[json!({ "text": t })], "end_turn"),
        },
        Protocol {
            model: "gemini/gemini-2.5-flash",
            vars: &[
                ("GEMINI_BASE_URL", "{base}/v1beta"),
                ("GEMINI_API_KEY", "k"),
            ],
            calls: |calls| {
                let parts: Vec<Value> = calls
                    .iter()
                    .map(|(_, name, a)| json!({"functionCall": {"name": name, "args": a}}))
                    .collect();
                gemini(&parts)
            },
            answer: |t| gemini(&[json!({ "text": t })]),
        },
        Protocol {
            model: "ollama/qwen3:8b",
            vars: &[("OLLAMA_HOST", "{base}")],
            calls: |calls| {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|(_, name, a)| json!({"function": {"name": name, "arguments": a}}))
                    .collect();
                ollama(None, "", &calls)
            },
            answer: |t| ollama(None, t, &[]),
        },
        Protocol {
            model: "openai-responses/o4-mini",
            vars: &[
                ("OPENAI_RESPONSES_BASE_URL", "{base}/v1"),
                ("OPENAI_API_KEY", "k"),
            ],
            calls: |calls| text_arguments(calls, |c| responses(None, "", c)),
            answer: |t| responses(None, t, &[]),
        },
    ]
}

/// A model that calls a tool at every turn, with every step limit from 1 to 5: the operation
/// ends with the model's answer, its last request lets the model call no tool while keeping
/// the tools defined (as Anthropic requires of a history with tool calls), and the local
/// server, which refuses what the provider refuses, took every request.
#[tokio::test]
async fn force_finish_ends_with_an_answer_every_provider_takes_at_every_step_limit() {
    for p in protocols() {
        for steps in 1..=5 {
            let turns = (0..8).map(|n| p.call(n)).collect();
            let e = env(turns, p.vars).await;
            e.server
                .route_withdrawn(vec![(p.answer)("Stopped at the limit: 6*7 is 42.")]);
            let limit = steps.to_string();
            let (_, out, err) = e
                .rein(&[
                    "run",
                    "--model",
                    p.model,
                    "--max-steps",
                    &limit,
                    "Keep multiplying.",
                ])
                .await;
            let requests = e.server.requests();
            assert_accepted(&format!("{} --max-steps {steps}", p.model), &requests);
            assert!(
                out.contains("Stopped at the limit: 6*7 is 42."),
                "{} --max-steps {steps}: no answer\n{out}\n{err}",
                p.model
            );
            let last = requests.last().unwrap();
            let defined = last.body["tools"].as_array().is_some_and(|t| !t.is_empty());
            assert!(
                defined || p.model.starts_with("ollama/"),
                "{}: the final request keeps the tools defined",
                p.model
            );
        }
    }
}

// ---- MCP tools with real-world schemas on every protocol ---------------------------------

/// Every `$ref` in `schema` and whether it resolves to a definition at the schema's root.
fn references(schema: &Value) -> Vec<(String, bool)> {
    fn walk(v: &Value, root: &Value, out: &mut Vec<(String, bool)>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    let target = r
                        .strip_prefix("#/")
                        .map(|p| p.split('/').fold(root, |at, k| &at[k]));
                    out.push((r.clone(), target.is_some_and(|t| !t.is_null())));
                }
                m.values().for_each(|v| walk(v, root, out));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, root, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, schema, &mut out);
    out
}

/// The tool schemas a request offered, whatever its protocol: (function name, schema).
fn offered_schemas(r: &Recorded) -> Vec<(String, Value)> {
    let b = &r.body;
    let mut out = Vec::new();
    for t in b["tools"].as_array().into_iter().flatten() {
        if let Some(decls) = t["functionDeclarations"].as_array() {
            out.extend(decls.iter().map(|d| {
                (
                    d["name"].as_str().unwrap_or_default().to_owned(),
                    d["parameters"].clone(),
                )
            }));
        } else {
            let f = if t.get("function").is_some() {
                &t["function"]
            } else {
                t
            };
            let schema = f
                .get("parameters")
                .or_else(|| f.get("input_schema"))
                .cloned()
                .unwrap_or_default();
            out.push((f["name"].as_str().unwrap_or_default().to_owned(), schema));
        }
    }
    out
}

/// An MCP server written with the official Python SDK, whose tools take pydantic models
/// (`$defs` and `$ref`, a recursive tree, `anyOf` with null, a literal, a parameter named
/// `名前`), offered on every protocol: every request is one the provider takes (Gemini gets
/// the references inlined, Anthropic the non-ASCII name renamed), no reference dangles; the
/// model's first call breaks the tool's own schema and is refused before the server sees it,
/// naming what is wrong; the calls that follow reach the server with the arguments under the
/// names it declared.
#[tokio::test]
async fn mcp_tools_with_definitions_and_recursion_work_on_every_protocol() {
    let Some(python) = rein_testkit::python_with("MCP tools on every protocol", "mcp") else {
        return;
    };
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/planner_mcp.py");
    let mcp = format!("planner={} {}", python.display(), script.display());
    for p in protocols() {
        let first = (p.calls)(&[
            (
                "call_1".into(),
                "planner__outline",
                json!({"root": {"children": []}}),
            ),
            ("call_2".into(), "planner__greet", json!({"名前": "Ada"})),
        ]);
        let second = (p.calls)(&[
            (
                "call_3".into(),
                "planner__outline",
                json!({"root": {"title": "Plan", "children": [{"title": "A"}, {"title": "B", "children": [{"title": "B1"}]}]}}),
            ),
            (
                "call_4".into(),
                "planner__file_issue",
                json!({"title": "Fix", "labels": [{"name": "bug", "color": null}], "priority": "high"}),
            ),
        ]);
        let e = env(
            vec![first, second, (p.answer)("Outlined, greeted and filed.")],
            p.vars,
        )
        .await;
        let (code, out, err) = e
            .rein(&[
                "run",
                "--model",
                p.model,
                "--mcp",
                &mcp,
                "--tools",
                "planner",
                "--approval",
                "auto-run",
                "Outline the plan, greet Ada, file the issue.",
            ])
            .await;
        let requests = e.server.requests();
        assert_accepted(p.model, &requests);
        assert_eq!(code, 0, "{}: {out}\n{err}", p.model);
        assert!(
            out.contains("Outlined, greeted and filed."),
            "{}: {out}",
            p.model
        );
        assert_eq!(requests.len(), 3, "{}", p.model);
        let offered = offered_schemas(&requests[0]);
        let names: Vec<&str> = offered.iter().map(|(n, _)| n.as_str()).collect();
        for tool in ["planner__outline", "planner__greet", "planner__file_issue"] {
            assert!(names.contains(&tool), "{}: {names:?}", p.model);
        }
        for (name, schema) in &offered {
            for (r, resolves) in references(schema) {
                assert!(resolves, "{}: {name} has a dangling {r}: {schema}", p.model);
            }
        }
        // The broken call was refused by the tool's own schema, naming the missing field; the
        // greeting reached the server under its declared parameter name.
        assert!(
            requests[1].carries("\"title\" is a required property"),
            "{}: {}",
            p.model,
            requests[1].body
        );
        assert!(requests[1].carries("こんにちは, Ada"), "{}", p.model);
        assert!(
            requests[2].carries("stored an outline of 4 nodes"),
            "{}",
            p.model
        );
        assert!(
            requests[2].carries("filed 'Fix' (high) with 1 labels"),
            "{}: {}",
            p.model,
            requests[2].body
        );
    }
}
