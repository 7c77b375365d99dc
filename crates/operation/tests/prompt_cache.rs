//! The prompt cache on Anthropic, asserted on the request bodies of a multi-step operation
//! (tool calls, a plan written and rewritten): every request marks at most four breakpoints,
//! where the rule says (the last tool, the system prompt, the last block of the conversation
//! before this step's plan note), and each request's prefix up to its history breakpoint is
//! the previous request's, byte for byte, so the provider serves it from its cache.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::state::ModelRef;
use rein_core::tool::ToolManifest;
use rein_model::registry::{ProviderConfig, Quirks};
use rein_model::testing::serve;
use rein_model::testing::streams::anthropic;
use rein_model::transport::Timeouts;
use rein_model::{Catalog, Protocol, Provider, ReqwestTransport};
use rein_operation::{Driver, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::{Effect, Store};
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
    let config = ProviderConfig {
        id: "anthropic".into(),
        protocol: Protocol::Anthropic,
        base_url: format!("{}/v1", server.base),
        api_key: Some("k".into()),
        headers: Default::default(),
        quirks: Quirks::default(),
    };
    let provider = Provider::new(
        config,
        Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap()),
    );
    let (_, store) = common::temp_store("rein-cache").await;
    let d = Driver::new(
        store.clone(),
        Arc::new(provider),
        ModelRef {
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
        },
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
        let body = &r.body;
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
        // The mark is on the last block before this step's plan note (or the last block
        // when there is no plan yet).
        let planned = all
            .last()
            .is_some_and(|(_, b)| b["text"].as_str().is_some_and(|t| t.contains("Your plan")));
        let expected = if planned {
            all.len() - 2
        } else {
            all.len() - 1
        };
        assert_eq!(history[0], expected, "request {i}: {body:#}");
        let prefix: Prefix = (
            unmarked(&body["tools"]),
            unmarked(&body["system"]),
            all[..=history[0]]
                .iter()
                .map(|(r, b)| (r.clone(), unmarked(b)))
                .collect::<Vec<_>>(),
        );
        if let Some((tools, system, earlier)) = &previous {
            assert_eq!(
                &prefix.0, tools,
                "request {i}: the tools are the last request's"
            );
            assert_eq!(
                &prefix.1, system,
                "request {i}: the system prompt is the last request's"
            );
            assert!(prefix.2.len() > earlier.len());
            assert_eq!(
                &prefix.2[..earlier.len()],
                &earlier[..],
                "request {i} repeats the last request's cached history"
            );
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
