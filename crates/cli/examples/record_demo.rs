//! Records the demo cassette's exchanges by driving `rein serve --record` against model turns
//! in OpenAI's wire format: the calculator question's turns are the ones the cassette already
//! holds (recorded from a model), replayed against the requests rein sends now; the file read
//! in the demo folder and the approval-gated shell command (approved, and rejected with a
//! reason) are scripted, and so is the answer to a question the demo does not know, which
//! names the ones it does. What a person typed varies in a replay (the rejection's reason, the
//! unknown question): those places are marked `vary`, so every button of the web UI gets an
//! answer. The new exchanges replace every earlier one of the same questions in
//! `cassettes/demo.jsonl`. Run it when the requests rein sends change (a tool added or
//! described differently, the system role), after building the binary:
//!
//! ```sh
//! cargo build -p rein-cli && cargo run -p rein-cli --example record_demo -- target/debug/rein
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rein_model::testing::{Canned, serve};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The question whose model turns were recorded from a model (kept as recorded).
const RECORDED: &str = "What is 17 * 23?";

/// The first user message of a cassette exchange's request.
fn question_of(exchange: &Value) -> Option<&str> {
    exchange["request"]["body"]["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?["content"]
        .as_str()
}

/// The responses the cassette holds for `question`, in the order they were recorded.
fn recorded_turns(cassette: &[Value], question: &str) -> Vec<Canned> {
    cassette
        .iter()
        .filter(|e| question_of(e) == Some(question))
        .map(|e| {
            let r = &e["response"];
            Canned {
                status: r["status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok())
                    .unwrap(),
                // The scripted server frames the body itself.
                headers: vec![("content-type".into(), "text/event-stream".into())],
                body: r["body"].as_str().unwrap().as_bytes().to_vec(),
                max_piece: 7,
                stall_after: None,
                delay: None,
            }
        })
        .collect()
}

/// Stands for any question the demo does not know (its text is marked `vary`).
const UNKNOWN: &str = "Tell me a joke.";

/// What the recording does when the shell asks.
#[derive(Clone, Copy)]
enum Decide {
    Approve,
    /// Reject, giving this reason (it varies in the cassette).
    Reject(&'static str),
}

/// The demo's questions, with what to decide and the model's turns for each.
fn script(cassette: &[Value]) -> Vec<(&'static str, Decide, Vec<Canned>)> {
    let recorded = recorded_turns(cassette, RECORDED);
    assert_eq!(
        recorded.len(),
        2,
        "the cassette holds the two recorded turns of {RECORDED:?}"
    );
    vec![
        (RECORDED, Decide::Approve, recorded),
        (
            "What does notes.txt say?",
            Decide::Approve,
            vec![
                Canned::openai_tools(&[(
                    "call_read_notes",
                    "files__read",
                    r#"{"path":"notes.txt"}"#,
                )]),
                Canned::openai_text(
                    "notes.txt says that the model turns of this demo are replayed from a cassette, and that shell commands wait for your approval.",
                ),
            ],
        ),
        (
            "Say hello from the shell.",
            Decide::Approve,
            vec![
                Canned::openai_tools(&[(
                    "call_echo_hello",
                    "shell__run",
                    r#"{"command":"echo hello from rein"}"#,
                )]),
                Canned::openai_text("The shell says: hello from rein"),
            ],
        ),
        (
            "Say hello from the shell.",
            Decide::Reject("not now"),
            vec![
                Canned::openai_tools(&[(
                    "call_echo_hello",
                    "shell__run",
                    r#"{"command":"echo hello from rein"}"#,
                )]),
                Canned::openai_text(
                    "All right: the command was not run. (This is a replay: it answers a rejection, with any reason, this way.)",
                ),
            ],
        ),
        (
            UNKNOWN,
            Decide::Approve,
            vec![Canned::openai_text(
                "This demo replays recorded answers, so it can only answer its own questions: \"What is 17 * 23?\", \"What does notes.txt say?\" and \"Say hello from the shell.\". To ask anything else, run rein without --replay and with a provider key (OPENAI_API_KEY=... rein serve).",
            )],
        ),
    ]
}

/// Mark what a person typed in a recorded exchange as varying: the question the demo does not
/// know, and the result of a rejected call (its reason).
fn mark_vary(exchange: &mut Value) {
    let Some(messages) = exchange["request"]["body"]["messages"].as_array() else {
        return;
    };
    let mut vary = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let text = m["content"].as_str().unwrap_or_default();
        if (m["role"] == "user" && text == UNKNOWN)
            || (m["role"] == "tool" && text.starts_with("The user rejected this tool call"))
        {
            vary.push(format!("body.messages[{i}].content"));
        }
    }
    if !vary.is_empty() {
        exchange["request"]["vary"] = json!(vary);
    }
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

/// Wait (30 s at most, then fail saying so) until operation `op` is in one of `statuses`.
async fn until(http: &reqwest::Client, base: &str, op: &str, statuses: &[&str]) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let d = json_of(
            http.get(format!("{base}/v1/operations/{op}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        if statuses.iter().any(|s| d["operation"]["status"] == *s) {
            return d;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "operation {op} was not {statuses:?} within 30 s: {d}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() {
    let rein = std::env::args()
        .nth(1)
        .expect("usage: record_demo PATH_TO_REIN_BINARY");
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cassette = crate_dir.join("cassettes/demo.jsonl");
    let home = std::env::temp_dir().join(format!("rein-record-demo-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let recorded: PathBuf = home.join("recorded.jsonl");
    let old: Vec<Value> = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let script = script(&old);
    let turns: Vec<Canned> = script.iter().flat_map(|(_, _, t)| t.clone()).collect();
    let model = serve(turns, 1).await;
    let mut server = tokio::process::Command::new(&rein)
        .arg("--record")
        .arg(&recorded)
        .args(["--db", &home.join("rein.db").to_string_lossy()])
        .args(["serve", "--no-auth", "--addr", "127.0.0.1:0", "--workdir"])
        .arg(crate_dir.join("cassettes/demo"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", &home)
        .env("OPENAI_BASE_URL", format!("{}/v1", model.base))
        .env("OPENAI_API_KEY", "sk-recording")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("rein serve exited");
        if let Some(a) = line.strip_prefix("rein: listening on ") {
            break a.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let http = reqwest::Client::new();
    for (question, decide, _) in &script {
        let created = json_of(
            http.post(format!("{base}/v1/operations"))
                .header("content-type", "application/json")
                .body(json!({ "input": question }).to_string())
                .send()
                .await
                .unwrap(),
        )
        .await;
        let op = created["operation_id"].as_str().unwrap().to_owned();
        // The shell asks first: decide as the demo's user does.
        let d = until(&http, &base, &op, &["waiting_for_human", "done"]).await;
        if d["operation"]["status"] == "waiting_for_human" {
            let decisions: Vec<Value> = d["pending"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| match decide {
                    Decide::Approve => {
                        json!({"tool_call_id": p["call"]["id"], "decision": "approve"})
                    }
                    Decide::Reject(reason) => {
                        json!({"tool_call_id": p["call"]["id"], "decision": "reject", "reason": reason})
                    }
                })
                .collect();
            http.post(format!("{base}/v1/operations/{op}/interventions"))
                .header("content-type", "application/json")
                .body(json!({ "decisions": decisions }).to_string())
                .send()
                .await
                .unwrap();
        }
        until(&http, &base, &op, &["done"]).await;
    }
    drop(server);
    // Merge: the new exchanges replace every earlier one of the same questions.
    let new: Vec<Value> = std::fs::read_to_string(&recorded)
        .unwrap()
        .lines()
        .map(|l| {
            let mut e = serde_json::from_str(l).unwrap();
            mark_vary(&mut e);
            e
        })
        .collect();
    let asked: Vec<&str> = script.iter().map(|(q, _, _)| *q).collect();
    let mut kept: Vec<Value> = old
        .into_iter()
        .filter(|e| !question_of(e).is_some_and(|q| asked.contains(&q)))
        .collect();
    // The same request asked on two paths (the shell question, approved and rejected) is
    // kept once: a replay answers it with the first.
    for e in new {
        if !kept.iter().any(|k| k["request"] == e["request"]) {
            kept.push(e);
        }
    }
    let text: String = kept.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&cassette, text).unwrap();
    eprintln!("{}: {} exchanges", cassette.display(), kept.len());
    let _ = std::fs::remove_dir_all(&home);
}
