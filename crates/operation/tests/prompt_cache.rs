//! The prompt cache on Anthropic, asserted on the request bodies of multi-step operations
//! (tool calls, a plan written and rewritten; knowledge, memories, a skill activation and a
//! second user message): every request marks at most four breakpoints, where the rule says
//! (the last tool, the system prompt, the last block of the conversation before this step's
//! plan note), and each request's prefix up to its history breakpoint is the previous
//! request's, byte for byte, so the provider serves it from its cache; only a new user
//! message (new knowledge and memories for it) changes the head.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::state::ModelRef;
use rein_core::tool::ToolManifest;
use rein_model::testing::serve;
use rein_model::testing::streams::anthropic;
use rein_model::{Catalog, Protocol, Provider};
use rein_operation::{Driver, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::{Effect, Knowledge, Store};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::common;

/// Says back what it is given.
struct Echo;

impl Tool for Echo {
    fn manifest(&self) -> ToolManifest {
        rein_core::testing::manifest("echo", &["say"])
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::Pure
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move { Ok(ToolOutput::ok(format!("said {args}"))) }.boxed()
    }
}

/// What a request caches up to its history mark: tools, system prompt, message blocks (all
/// unmarked).
type Prefix = (Value, Value, Vec<(String, Value)>);

/// `value` without any `cache_control` marks.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// Every message block in order, as (role, block).
fn blocks(body: &Value) -> Vec<(String, Value)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| {
            let role = m["role"].as_str().unwrap().to_owned();
            m["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |b| (role.clone(), b.clone()))
        })
        .collect()
}

/// Where the marks are: (tools marked, system marked, indexes of marked message blocks).
fn marks(body: &Value) -> (Vec<usize>, bool, Vec<usize>) {
    let tools = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, t)| t.get("cache_control").is_some())
        .map(|(i, _)| i)
        .collect();
    let system = body["system"]
        .as_array()
        .is_some_and(|s| s.iter().any(|b| b.get("cache_control").is_some()));
    let history = blocks(body)
        .iter()
        .enumerate()
        .filter(|(_, (_, b))| b.get("cache_control").is_some())
        .map(|(i, _)| i)
        .collect();
    (tools, system, history)
}

#[tokio::test]
async fn anthropic_requests_mark_the_stable_prefix_and_each_repeats_the_last_ones() {
    let plan = |first: &str, second: &str| {
        json!({"id": format!("toolu_plan_{first}"), "name": "todo__write", "input": {"items": [
            {"text": "Echo twice", "status": first}, {"text": "Answer", "status": second}
        ]}})
    };
    let echo =
        |n: u32| json!({"id": format!("toolu_echo_{n}"), "name": "echo__say", "input": {"n": n}});
    let server = serve(
        vec![
            anthropic(
                &[json!({"text": "Planning."}), plan("in_progress", "pending")],
                "tool_use",
            ),
            anthropic(&[echo(1)], "tool_use"),
            anthropic(&[echo(2)], "tool_use"),
            anthropic(&[plan("done", "in_progress")], "tool_use"),
            anthropic(&[json!({"text": "Echoed twice."})], "end_turn"),
        ],
        11,
    )
    .await;
    let (_, store) = common::temp_store("rein-cache").await;
    let d = Driver::new(
        store.clone(),
        Arc::new(anthropic_provider(&server.base)),
        claude(),
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Echo));
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            system_role: Some("You echo, with a plan.".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("Echo twice, then answer.", &opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let mut previous: Option<Prefix> = None;
    for (i, r) in requests.iter().enumerate() {
        assert!(r.refused.is_none(), "request {i}: {:?}", r.refused);
        let prefix = marked_where_the_rule_says(i, &r.body);
        if let Some(earlier) = &previous {
            assert_repeats(i, &prefix, earlier);
        }
        previous = Some(prefix);
    }
    // The context reports measured it: from the second call on, the prefix is stable.
    let events = store.events(id, None).await.unwrap();
    let stable: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            rein_core::event::EventKind::ContextReport { report, .. } => {
                Some(report.stable_prefix_tokens)
            }
            _ => None,
        })
        .collect();
    assert_eq!(stable.len(), 5);
    assert_eq!(stable[0], 0, "{stable:?}");
    assert!(stable[1..].iter().all(|s| *s > 0), "{stable:?}");
}

/// Checks that `body` (request `i`) marks the last tool, the system prompt and the last block
/// before this step's plan note (the last block when there is none), four marks at most;
/// returns what it caches.
fn marked_where_the_rule_says(i: usize, body: &Value) -> Prefix {
    let (tools, system, history) = marks(body);
    let all = blocks(body);
    assert_eq!(
        tools,
        [body["tools"].as_array().unwrap().len() - 1],
        "request {i}: the last tool, only"
    );
    assert!(system, "request {i}: the system prompt");
    assert_eq!(history.len(), 1, "request {i}: one history mark");
    assert!(tools.len() + 1 + history.len() <= 4);
    let planned = all
        .last()
        .is_some_and(|(_, b)| b["text"].as_str().is_some_and(|t| t.contains("Your plan")));
    let expected = if planned {
        all.len() - 2
    } else {
        all.len() - 1
    };
    assert_eq!(history[0], expected, "request {i}: {body:#}");
    (
        unmarked(&body["tools"]),
        unmarked(&body["system"]),
        all[..=history[0]]
            .iter()
            .map(|(r, b)| (r.clone(), unmarked(b)))
            .collect::<Vec<_>>(),
    )
}

/// Request `i` caches what the request before it cached, and more.
fn assert_repeats(i: usize, prefix: &Prefix, earlier: &Prefix) {
    assert_eq!(
        prefix.0, earlier.0,
        "request {i}: the tools are the last request's"
    );
    assert_eq!(
        prefix.1, earlier.1,
        "request {i}: the system prompt is the last request's"
    );
    assert!(prefix.2.len() > earlier.2.len());
    assert_eq!(
        &prefix.2[..earlier.2.len()],
        &earlier.2[..],
        "request {i} repeats the last request's cached history"
    );
}

/// The text of the `tool_result` block answering `call` in an Anthropic request.
fn anthropic_result(body: &Value, call: &str) -> String {
    let (_, block) = blocks(body)
        .into_iter()
        .find(|(_, b)| b["type"] == "tool_result" && b["tool_use_id"] == call)
        .unwrap_or_else(|| panic!("no result for {call} in {body:#}"));
    match &block["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => panic!("{other}"),
    }
}

/// The text of a request's system prompt.
fn system_text(body: &Value) -> String {
    body["system"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

fn anthropic_provider(base: &str) -> Provider {
    common::provider_at("anthropic", Protocol::Anthropic, &format!("{base}/v1"))
}

fn claude() -> ModelRef {
    ModelRef {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
    }
}

#[tokio::test]
async fn knowledge_memories_and_a_skill_keep_the_prefix_until_the_next_user_message() {
    let echo =
        |n: u32| json!({"id": format!("toolu_echo_{n}"), "name": "echo__say", "input": {"n": n}});
    let plan = |first: &str| {
        json!({"id": format!("toolu_plan_{first}"), "name": "todo__write", "input": {"items": [
            {"text": "Install", "status": first}, {"text": "Answer", "status": "pending"}
        ]}})
    };
    let server = serve(
        vec![
            // First turn: a plan and a memory, a skill, a tool, the plan again, the answer.
            anthropic(
                &[
                    json!({"text": "Planning."}),
                    plan("in_progress"),
                    json!({"id": "toolu_mem", "name": "memory__remember",
                        "input": {"fact": "The user prefers metric units"}}),
                ],
                "tool_use",
            ),
            anthropic(
                &[json!({"id": "toolu_skill", "name": "skills__activate",
                    "input": {"name": "release-notes"}})],
                "tool_use",
            ),
            anthropic(&[echo(1)], "tool_use"),
            anthropic(&[plan("done")], "tool_use"),
            anthropic(&[json!({"text": "Installed."})], "end_turn"),
            // Second turn.
            anthropic(&[echo(2)], "tool_use"),
            anthropic(&[json!({"text": "Upgraded."})], "end_turn"),
        ],
        11,
    )
    .await;
    let (dir, store) = common::temp_store("rein-cache-turns").await;
    let kb = store.create_knowledge_base(None, "manuals").await.unwrap();
    let chunk = |line: u64, text: &str| rein_store::NewChunk {
        headings: vec![],
        line_start: line,
        line_end: line,
        text: text.into(),
    };
    store
        .put_knowledge_file(
            &kb.id,
            "guide.md",
            "h1",
            &[
                chunk(1, "Install rein with cargo install rein-cli."),
                chunk(5, "Upgrading keeps the database; migrations run at start."),
            ],
            None,
            None,
        )
        .await
        .unwrap();
    let skills = dir.join("skills/release-notes/SKILL.md");
    std::fs::create_dir_all(skills.parent().unwrap()).unwrap();
    std::fs::write(
        &skills,
        "---\nname: release-notes\ndescription: Write release notes.\n---\nGroup changes by kind.\n",
    )
    .unwrap();
    let catalog = rein_operation::skills::SkillCatalog::discover(&[dir.join("skills")]);
    let d = Driver::new(
        store.clone(),
        Arc::new(anthropic_provider(&server.base)),
        claude(),
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Echo))
    .with_skills(Arc::new(catalog));
    let spec = rein_operation::OperationSpec {
        system_role: Some("You install things.".into()),
        knowledge: vec!["manuals".into()],
        approval: rein_core::intervention::ApprovalMode::AutoRun,
        ..Default::default()
    };
    let first = d
        .start(
            "How do I install rein? Sizes in metric units, please.",
            &StartOptions {
                spec: spec.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(d.run(first).await.unwrap(), RunEnd::Done { .. }));
    let topic = store
        .load_operation(first)
        .await
        .unwrap()
        .unwrap()
        .record
        .topic_id;
    let second = d
        .start(
            "Upgrading: does it keep the database? Sizes in metric units, please.",
            &StartOptions {
                spec,
                topic_id: Some(topic),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(d.run(second).await.unwrap(), RunEnd::Done { .. }));
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let prefixes: Vec<Prefix> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert!(r.refused.is_none(), "request {i}: {:?}", r.refused);
            marked_where_the_rule_says(i, &r.body)
        })
        .collect();
    // Every step of a turn repeats the last one's prefix: the memory saved at the first
    // step and the skill activated at the second changed nothing before the history mark.
    for i in (1..5).chain(6..7) {
        assert_repeats(i, &prefixes[i], &prefixes[i - 1]);
    }
    let system: Vec<String> = requests.iter().map(|r| system_text(&r.body)).collect();
    assert!(
        system[0].contains("Install rein with cargo install"),
        "{}",
        system[0]
    );
    assert!(!system[4].contains("What you remember"), "{}", system[4]);
    let activated = anthropic_result(&requests[2].body, "toolu_skill");
    assert!(
        activated.contains("<skill name=\"release-notes\">\nGroup changes by kind.\n</skill>"),
        "{activated}"
    );
    assert!(
        !system[4].contains("Group changes by kind."),
        "{}",
        system[4]
    );
    // The next user message: the knowledge chosen for it and the memory saved meanwhile
    // arrive at the head (the skill's instructions stay in the history, where its result is).
    assert_ne!(prefixes[5].1, prefixes[4].1);
    assert!(
        system[5].contains("Upgrading keeps the database"),
        "{}",
        system[5]
    );
    assert!(
        system[5].contains("The user prefers metric units"),
        "{}",
        system[5]
    );
    assert!(
        !system[5].contains("Group changes by kind."),
        "{}",
        system[5]
    );
    assert_eq!(prefixes[5].0, prefixes[4].0, "the tools did not change");
}
