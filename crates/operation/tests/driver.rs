//! The driver end to end: a scripted OpenAI-protocol server on loopback, a SQLite file, and
//! every path an operation can take.

#[path = "driver/archive.rs"]
mod archive;
#[path = "driver/budgets.rs"]
mod budgets;
#[path = "driver/cancels.rs"]
mod cancels;
use crate::common;
#[path = "driver/fork.rs"]
mod fork;
#[path = "driver/grants.rs"]
mod grants;
#[path = "driver/pipelined.rs"]
mod pipelined;
#[path = "driver/queue.rs"]
mod queue;
#[path = "driver/replay.rs"]
mod replay;

use common::assert_consistent;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::event::EventKind;
use rein_core::intervention::{ApprovalMode, InterventionConfig, InterventionPolicy};
use rein_core::state::{Budget, FinishReason, ModelRef, Status};
use rein_core::tool::ToolManifest;
use rein_core::{OperationId, Role, ToolStatus, Usd};
use rein_model::testing::{Canned, Server, serve};
use rein_model::{Catalog, Provider, RetryPolicy};
use rein_operation::{
    Decision, Driver, FORCE_FINISH_PROMPT, RunEnd, StartOptions, Tool, ToolContext,
};
use rein_store::{Effect, ExecStatus, InterventionStatus, SqlStore, Store};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A side-effecting tool that needs approval, runs at most once, and counts its runs.
struct Deploy {
    runs: Arc<AtomicU32>,
    block: bool,
    policy: InterventionPolicy,
}

impl Tool for Deploy {
    fn manifest(&self) -> ToolManifest {
        let mut m = rein_core::testing::manifest("deploy", &["release"]);
        m.intervention = Some(InterventionConfig::Policy(self.policy));
        m
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::AtMostOnce
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            if self.block {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            Ok(ToolOutput::ok(format!(
                "released {}",
                args["version"].as_str().unwrap_or("?")
            )))
        }
        .boxed()
    }
}

struct Env {
    server: Server,
    store: Arc<SqlStore>,
    runs: Arc<AtomicU32>,
}

async fn env(responses: Vec<Canned>) -> Env {
    let (_, store) = common::temp_store("rein-driver").await;
    Env {
        server: serve(responses, 7).await,
        store,
        runs: Arc::new(AtomicU32::new(0)),
    }
}

/// An OpenAI-protocol provider pointed at the scripted server.
fn openai_provider(e: &Env) -> Provider {
    common::openai_provider(&e.server.base)
}

fn driver(e: &Env, block: bool) -> Driver {
    driver_with(e, block, InterventionPolicy::Required)
}

fn driver_with(e: &Env, block: bool, policy: InterventionPolicy) -> Driver {
    let retry = RetryPolicy {
        base_delay: Duration::from_millis(5),
        ..Default::default()
    };
    let provider = openai_provider(e).with_retry(retry);
    let model = ModelRef {
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
    };
    Driver::new(
        e.store.clone(),
        Arc::new(provider),
        model,
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Deploy {
        runs: e.runs.clone(),
        block,
        policy,
    }))
}

/// A spec whose requests do not depend on the day or the machine, allowed `tools`.
fn steady(tools: &[&str]) -> StartOptions {
    StartOptions {
        spec: rein_core::spec::OperationSpec {
            allowed_tools: Some(tools.iter().map(|t| (*t).to_owned()).collect()),
            context: rein_core::spec::ContextSettings {
                date: false,
                workspace: false,
                memories: false,
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

fn calc(id: &str, expr: &str) -> (String, String, String) {
    (
        id.into(),
        "calculator__evaluate".into(),
        serde_json::json!({"expression": expr}).to_string(),
    )
}

fn tools(calls: &[(String, String, String)]) -> Canned {
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    Canned::openai_tools(&refs)
}

fn deploy(id: &str) -> (String, String, String) {
    (
        id.into(),
        "deploy__release".into(),
        r#"{"version":"1.2.0"}"#.into(),
    )
}

/// An egress allow-list takes the shell's own network away, and the stored spec (what a
/// process continuing the operation reads) says so, as the state does.
#[tokio::test]
async fn an_egress_list_leaves_the_shell_without_network_in_the_stored_spec_too() {
    let e = env(vec![]).await;
    let d = driver(&e, false);
    let mut spec = rein_operation::OperationSpec::default();
    spec.sandbox.network = true;
    spec.egress = Some(vec!["docs.rs".into()]);
    let id = d
        .start(
            "hi",
            &StartOptions {
                spec: spec.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert!(!op.spec.sandbox.network, "{:?}", op.spec.sandbox);
    assert_eq!(
        op.spec.egress.as_deref(),
        Some(&["docs.rs".to_string()][..])
    );
    assert!(!op.state.metadata.sandbox.unwrap().network);
    // Without a list, the network the spec asked for stays.
    spec.egress = None;
    let id = d
        .start(
            "hi",
            &StartOptions {
                spec,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert!(op.spec.sandbox.network);
    assert!(op.state.metadata.sandbox.unwrap().network);
}

#[tokio::test]
async fn a_tool_round_trip_is_committed_step_by_step() {
    let e = env(vec![
        tools(&[calc("c1", "17*23")]),
        Canned::openai_text("17 × 23 = 391."),
    ])
    .await;
    let d = driver(&e, false);
    let id = d
        .start("What is 17*23?", &StartOptions::default())
        .await
        .unwrap();
    // Accepted only after commit: the operation is on disk before anything runs.
    assert_eq!(
        e.store
            .load_operation(id)
            .await
            .unwrap()
            .unwrap()
            .record
            .status,
        Status::Idle
    );
    let end = d.run(id).await.unwrap();
    assert_eq!(
        end,
        RunEnd::Done {
            reason: FinishReason::Completed,
            detail: Some("Model answered without tool calls".into())
        }
    );
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let roles: Vec<Role> = op.state.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(op.state.messages[2].text_content(), "391");
    assert_eq!(op.state.messages[3].text_content(), "17 × 23 = 391.");
    assert_eq!((op.record.step_count, op.record.commit_seq), (3, 4));
    assert!(op.record.cost > Usd::ZERO, "priced from the catalog");
    let exec = e.store.tool_execution(id, "c1").await.unwrap().unwrap();
    assert_eq!(
        (exec.status, exec.effect),
        (ExecStatus::Succeeded, Effect::Pure)
    );
    assert_eq!(e.store.steps(id).await.unwrap().len(), 4);
    // The second request went through the context pipeline: a system message naming the model
    // and today's date first, then the tool result paired with its call.
    let second = &e.server.requests()[1].body;
    assert_eq!(second["messages"][0]["role"], "system");
    let head = second["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(head.contains("You are the model openai/"), "{head}");
    let now = chrono::Utc::now();
    let dated = [now, now - chrono::Duration::minutes(1)]
        .iter()
        .any(|t| head.contains(&t.format("%Y-%m-%d").to_string()));
    assert!(dated, "{head}");
    assert_eq!(second["messages"][3]["role"], "tool");
    assert_eq!(second["messages"][3]["tool_call_id"], "c1");
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn a_parallel_batch_runs_both_calls() {
    let e = env(vec![
        tools(&[calc("a", "2+2"), calc("b", "3*3")]),
        Canned::openai_text("4 and 9"),
    ])
    .await;
    let d = driver(&e, false);
    let id = d.start("two sums", &StartOptions::default()).await.unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let results: Vec<String> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text_content())
        .collect();
    assert_eq!(results, ["4", "9"]);
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn approval_parks_durably_then_an_approval_resumes_and_decisions_are_single_use() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("Released."),
    ])
    .await;
    let id = driver(&e, false)
        .start("ship it", &StartOptions::default())
        .await
        .unwrap();
    let end = driver(&e, false).run(id).await.unwrap();
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("expected a park, got {end:?}")
    };
    assert_eq!(&*pending[0].id, "d1");
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
    let iv = e.store.interventions(id).await.unwrap();
    assert_eq!(iv[0].status, InterventionStatus::Pending);

    // A different process (a new driver) approves.
    let end = driver(&e, false)
        .decide(id, None, Decision::Approve, Some("alice"))
        .await
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    assert_eq!(e.runs.load(Ordering::SeqCst), 1);
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let tool = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(
        (tool.tool_status, tool.text_content().as_str()),
        (Some(ToolStatus::Succeeded), "released 1.2.0")
    );
    assert_eq!(
        e.store.interventions(id).await.unwrap()[0]
            .decided_by
            .as_deref(),
        Some("alice")
    );
    let again = driver(&e, false)
        .decide(id, Some(&["d1".into()]), Decision::Approve, None)
        .await;
    assert!(again.is_err(), "a second decision is refused");
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn a_rejection_with_a_reason_reaches_the_model() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("Understood, not releasing."),
    ])
    .await;
    let d = driver(&e, false);
    let id = d.start("ship it", &StartOptions::default()).await.unwrap();
    d.run(id).await.unwrap();
    let end = d
        .decide(
            id,
            None,
            Decision::Reject {
                reason: Some("freeze until Monday".into()),
                halt: false,
            },
            None,
        )
        .await
        .unwrap();
    assert!(matches!(
        end,
        RunEnd::Done {
            reason: FinishReason::Completed,
            ..
        }
    ));
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
    let second = &e.server.requests()[1].body;
    let tool_msg = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("freeze until Monday")
    );
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn headless_answers_an_always_policy_with_a_blocked_result() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("I cannot release without approval."),
    ])
    .await;
    // Headless runs `required` calls (nobody could approve them) but never `always` ones.
    let d = driver_with(&e, false, InterventionPolicy::Always);
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            approval: ApprovalMode::Headless,
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("ship it", &opts).await.unwrap();
    assert!(matches!(
        d.run(id).await.unwrap(),
        RunEnd::Done {
            reason: FinishReason::Completed,
            ..
        }
    ));
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert!(
        op.state
            .messages
            .iter()
            .any(|m| m.tool_status == Some(ToolStatus::Blocked))
    );
}

#[tokio::test]
async fn max_steps_forces_a_final_call_without_tools() {
    let e = env(vec![
        tools(&[calc("c1", "1+1")]),
        Canned::openai_text("Summary: 2."),
    ])
    .await;
    let d = driver(&e, false);
    let id = d
        .start(
            "keep going",
            &StartOptions {
                spec: rein_operation::OperationSpec {
                    max_steps: Some(2),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::MaxStepsCompleted,
                ..
            }
        ),
        "{end:?}"
    );
    let reqs = e.server.requests();
    assert!(reqs[0].body.get("tools").is_some());
    // The forced final call lets the model call no tool, the tools still defined (a history
    // with tool calls and no tools is refused by Anthropic).
    assert_eq!(reqs[1].body["tool_choice"], "none");
    assert!(
        reqs[1].body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(reqs.iter().all(|r| r.refused.is_none()));
    let system = reqs[1].body["messages"][0].clone();
    assert_eq!(system["role"], "system");
    assert!(
        system["content"]
            .as_str()
            .unwrap()
            .contains(FORCE_FINISH_PROMPT),
        "{system}"
    );
}

#[tokio::test]
async fn a_cost_limit_stops_visibly() {
    let e = env(vec![
        tools(&[calc("c1", "1+1")]),
        Canned::openai_text("never"),
    ])
    .await;
    let d = driver(&e, false);
    let budget = Budget {
        max_cost: Some(Usd::from_dollars(0.000_01)),
        ..Default::default()
    };
    let id = d
        .start(
            "spend",
            &StartOptions {
                spec: rein_operation::OperationSpec {
                    budget,
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::CostLimitExceeded,
                ..
            }
        ),
        "{end:?}"
    );
    assert_eq!(e.server.requests().len(), 1);
}

#[tokio::test]
async fn a_rate_limit_is_retried_and_reported() {
    let mut limited = Canned::json(
        429,
        &serde_json::json!({"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}),
    );
    limited.headers.push(("retry-after-ms".into(), "20".into()));
    let e = env(vec![limited, Canned::openai_text("ok")]).await;
    let d = driver(&e, false);
    let id = d.start("hi", &StartOptions::default()).await.unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let events = e.store.events(id, None).await.unwrap();
    assert!(events.iter().any(|ev| matches!(&ev.kind, EventKind::StreamRetry { delay_ms: 20, error_kind: Some(k), .. } if k == "rate_limit")));
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn a_deleted_parent_fails_before_any_token_is_spent() {
    let e = env(vec![Canned::openai_text("never")]).await;
    let d = driver(&e, false);
    let id = d.start("hi", &StartOptions::default()).await.unwrap();
    let user = e
        .store
        .load_operation(id)
        .await
        .unwrap()
        .unwrap()
        .state
        .messages[0]
        .id;
    e.store.delete_message(user).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(end, RunEnd::Error { ref message } if message.starts_with("conversation_parent_missing")),
        "{end:?}"
    );
    assert!(e.server.requests().is_empty(), "no model call");
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.record.status, Status::Error, "the failure is durable");
    assert!(
        op.record
            .error
            .unwrap()
            .starts_with("conversation_parent_missing")
    );
}

#[tokio::test]
async fn a_crash_while_an_at_most_once_tool_runs_is_settled_not_repeated() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("The release may have happened; please check."),
    ])
    .await;
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            approval: ApprovalMode::AutoRun,
            ..Default::default()
        },
        ..Default::default()
    };
    let id = driver(&e, true).start("ship it", &opts).await.unwrap();
    // The tool blocks; "kill" the process while it runs.
    let crashed = driver(&e, true);
    let run = tokio::spawn(async move { crashed.run(id).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while e.runs.load(Ordering::SeqCst) != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the at-most-once tool never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    run.abort();
    let _ = run.await;
    assert_eq!(
        e.store
            .tool_execution(id, "d1")
            .await
            .unwrap()
            .unwrap()
            .status,
        ExecStatus::Running
    );

    let end = driver(&e, false).resume(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    assert_eq!(
        e.runs.load(Ordering::SeqCst),
        1,
        "an at-most-once tool never runs twice"
    );
    let exec = e.store.tool_execution(id, "d1").await.unwrap().unwrap();
    assert_eq!(exec.status, ExecStatus::Interrupted);
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let tool = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(
        tool.text_content().contains("was interrupted"),
        "{}",
        tool.text_content()
    );
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn cancelling_a_parked_operation_settles_its_calls() {
    let e = env(vec![tools(&[deploy("d1")])]).await;
    let d = driver(&e, false);
    let id = d.start("ship it", &StartOptions::default()).await.unwrap();
    d.run(id).await.unwrap();
    let end = driver(&e, false).cancel(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::UserRequested,
                ..
            }
        ),
        "{end:?}"
    );
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert!(
        op.state
            .messages
            .iter()
            .any(|m| m.tool_status == Some(ToolStatus::Aborted))
    );
    assert_consistent(&e.store, id).await;
}

/// Wakes a waiter at the first streamed text of a model answer.
struct OnText(Arc<tokio::sync::Notify>);

impl rein_core::engine::EventSink for OnText {
    fn publish(&self, event: &rein_core::AgentEvent) {
        if matches!(event.kind, rein_core::event::EventKind::LlmStream { .. }) {
            self.0.notify_one();
        }
    }
}

#[tokio::test]
async fn cancelling_during_a_model_stream_keeps_the_partial_answer() {
    let mut stalled = Canned::openai_text("Here is the first half of a long answer, and then");
    stalled.stall_after = Some(stalled.body.len() * 2 / 3);
    let e = env(vec![stalled]).await;
    // Cancel once the first streamed text has reached the driver's live sink: the partial
    // answer then exists, whatever the machine's speed.
    let streamed = Arc::new(tokio::sync::Notify::new());
    let d = driver(&e, false).with_sink(Arc::new(OnText(Arc::clone(&streamed))));
    let id = d
        .start("tell me everything", &StartOptions::default())
        .await
        .unwrap();
    let cancel = d.cancel_token();
    let cancel_after_text = async {
        tokio::time::timeout(Duration::from_secs(30), streamed.notified())
            .await
            .expect("streamed text reaches the sink");
        cancel.cancel();
    };
    let (end, ()) = tokio::join!(d.run(id), cancel_after_text);
    let end = end.unwrap();
    assert!(matches!(end, RunEnd::Interrupted { .. }), "{end:?}");
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.record.status, Status::Interrupted);
    let partial = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .expect("partial answer saved");
    assert!(
        partial.text_content().starts_with("Here is the first"),
        "{}",
        partial.text_content()
    );
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn an_expired_approval_ends_the_operation_visibly() {
    let e = env(vec![tools(&[deploy("d1")])]).await;
    let d = driver(&e, false);
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            approval_timeout_secs: Some(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("ship it", &opts).await.unwrap();
    assert!(matches!(
        d.run(id).await.unwrap(),
        RunEnd::WaitingForHuman { .. }
    ));
    let iv = e.store.interventions(id).await.unwrap();
    let expires_at = iv[0].expires_at.expect("the request carries its deadline");
    common::wait_past(expires_at).await;
    // A late approval finds the deadline passed: the operation ends, the tool never runs.
    let end = driver(&e, false)
        .decide(id, None, Decision::Approve, Some("late"))
        .await
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Timeout,
                ..
            }
        ),
        "{end:?}"
    );
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        e.store.interventions(id).await.unwrap()[0].status,
        InterventionStatus::Expired
    );
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert!(
        op.state
            .messages
            .iter()
            .any(|m| m.tool_status == Some(ToolStatus::Aborted))
    );
    assert_consistent(&e.store, id).await;
}

/// Returns `words` words: a tool result of a known size (one o200k token per word).
struct Blob;

impl Tool for Blob {
    fn manifest(&self) -> ToolManifest {
        rein_core::testing::manifest("blob", &["fetch"])
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::Pure
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        let n = args["words"].as_u64().unwrap_or(0) as usize;
        async move { Ok(ToolOutput::ok("word ".repeat(n).trim_end().to_owned())) }.boxed()
    }
}

/// A paid search API: its manifest prices every call at 25 cents.
struct PaidSearch;

impl Tool for PaidSearch {
    fn manifest(&self) -> ToolManifest {
        let mut m = rein_core::testing::manifest("search", &["query"]);
        m.apis[0].cost = Some(Usd::from_dollars(0.25));
        m
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::Pure
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        _: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move { Ok(ToolOutput::ok("3 results")) }.boxed()
    }
}

#[tokio::test]
async fn a_priced_tool_is_charged_and_counts_against_the_cost_limit() {
    let search = |id: &str| (id.to_owned(), "search__query".to_owned(), "{}".to_owned());
    let e = env(vec![
        tools(&[search("s1")]),
        tools(&[search("s2")]),
        Canned::openai_text("never"),
    ])
    .await;
    let d = driver(&e, false).with_tool(Arc::new(PaidSearch));
    let budget = Budget {
        max_cost: Some(Usd::from_dollars(0.4)),
        ..Default::default()
    };
    let id = d
        .start(
            "search twice",
            &StartOptions {
                spec: rein_operation::OperationSpec {
                    budget,
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::CostLimitExceeded,
                ..
            }
        ),
        "{end:?}"
    );
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.state.cost.tools, Usd::from_dollars(0.5));
    assert_eq!(
        op.state.cost.by_tool.get("search/query").copied(),
        Some(Usd::from_dollars(0.5))
    );
    // The second search crossed the limit: the model was not called a third time.
    assert_eq!(e.server.requests().len(), 2);
    assert_consistent(&e.store, id).await;
}

fn blob(id: &str, words: u32) -> (String, String, String) {
    (
        id.into(),
        "blob__fetch".into(),
        serde_json::json!({ "words": words }).to_string(),
    )
}

#[tokio::test]
async fn a_long_operation_is_compressed_with_the_compression_model_and_continues() {
    let e = env(vec![
        tools(&[blob("b1", 2_000)]),
        tools(&[blob("b2", 2_000)]),
        tools(&[blob("b3", 2_000)]),
        Canned::openai_text("SUMMARY: two blobs of words fetched so far"),
        Canned::openai_text("All three fetched."),
    ])
    .await;
    // Window 10,000, threshold 55%: under it after two results (~4,000 tokens plus the one
    // offered schema), over it after the third. Newest kept verbatim: at most a quarter of the
    // window, which fits the third call and its result but not the second result.
    let agent = rein_core::agent::GeneralChatAgentConfig {
        compression: rein_core::agent::CompressionConfig {
            window_tokens: 10_000,
            threshold_ratio: Some(0.55),
            ..Default::default()
        },
        ..Default::default()
    };
    let d = driver(&e, false)
        .with_tool(Arc::new(Blob))
        .with_agent(agent);
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            allowed_tools: Some(vec!["blob".into()]),
            // Summaries by another model of the same provider.
            compression_model: Some(ModelRef {
                provider: "openai".into(),
                model: "summary-model".into(),
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("Fetch three blobs.", &opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(end, RunEnd::Done { .. }),
        "{end:?} {:?}",
        e.server
            .requests()
            .iter()
            .map(|r| (r.path.clone(), r.body.get("input").cloned()))
            .collect::<Vec<_>>()
    );
    let requests = e.server.requests();
    assert_eq!(requests.len(), 5);
    // The fourth request is the summary, made with the compression model over the older turns.
    let summary_req = &requests[3].body;
    assert_eq!(summary_req["model"], "summary-model");
    let asked = summary_req["messages"][1]["content"].as_str().unwrap();
    assert!(
        asked.contains("[assistant called blob/fetch"),
        "{asked:.300}"
    );
    assert!(
        !asked.contains("[user] Fetch three blobs."),
        "the instruction is kept, not summarized"
    );
    assert!(
        !asked.contains("b3"),
        "the newest round is kept, not summarized"
    );
    // The next call carries the summary, the person's instruction and the newest round
    // verbatim: a user turn after the system prompt, every call with its result.
    let next = &requests[4].body;
    assert_eq!(next["model"], "gpt-4o-mini");
    let msgs = next["messages"].as_array().unwrap();
    let head = msgs[0]["content"].as_str().unwrap();
    assert!(
        head.contains("SUMMARY: two blobs of words fetched so far"),
        "{head}"
    );
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(msgs[1]["content"], "Fetch three blobs.");
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "b3");
    assert_eq!(msgs[3]["tool_call_id"], "b3");
    assert!(requests.iter().all(|r| r.refused.is_none()));
    // The state keeps the summary as a message of its own kind, and the summary model's usage.
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(
        op.state
            .messages
            .iter()
            .filter(|m| m.kind == rein_core::message::MessageKind::CompressionSummary)
            .count(),
        1
    );
    assert!(op.state.usage.by_model.contains_key("openai/summary-model"));
    assert_consistent(&e.store, id).await;
}

/// A tool result larger than the model's whole window (gpt-4o-mini: 128k tokens; this one is
/// ~1 MB) is cut to half the window with a note saying so, and the operation goes on to its
/// answer instead of failing at every later call.
#[tokio::test]
async fn a_tool_result_larger_than_the_window_is_cut_with_a_note_and_the_operation_continues() {
    let e = env(vec![
        tools(&[blob("b1", 200_000)]),
        Canned::openai_text("It was long."),
    ])
    .await;
    let d = driver(&e, false).with_tool(Arc::new(Blob));
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            allowed_tools: Some(vec!["blob".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("Fetch a huge blob.", &opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let requests = e.server.requests();
    let sent = requests.last().unwrap().tool_result("b1");
    assert!(sent.len() <= 128_000 * 2 + 200, "{} bytes sent", sent.len());
    assert!(
        sent.contains("bytes of tool output omitted"),
        "a visible note"
    );
    // The result itself is kept whole in the history.
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let kept = op
        .state
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("b1"))
        .unwrap();
    assert_eq!(kept.text_content().len(), "word ".len() * 200_000 - 1);
}

fn summarizer(e: &Env, window_tokens: Option<u64>) -> rein_operation::ModelSummarizer {
    rein_operation::ModelSummarizer {
        provider: Arc::new(openai_provider(e)),
        provider_id: "openai".into(),
        model: "gpt-4o-mini".into(),
        window_tokens,
        pricing: rein_operation::pricing::Pricing::new(
            Arc::new(Catalog::builtin().unwrap()),
            &Default::default(),
        ),
        cancel: Default::default(),
    }
}

/// The transcript a summary request asked to summarize, and the notes it was given.
fn summary_asked(r: &rein_model::testing::Recorded) -> String {
    r.body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A summary request the model refuses as too long is split in two: the first half is
/// summarized, the second merged into those notes; nothing given is left out and the usage of
/// every call is counted.
#[tokio::test]
async fn an_overflowing_summary_request_is_summarized_in_halves_nothing_dropped() {
    use rein_core::engine::ports::Summarizer;
    let e = env(vec![
        Canned::json(
            400,
            &serde_json::json!({"error": {
                "message": "This model's maximum context length is 8192 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded"
            }}),
        ),
        Canned::openai_text("notes on m0 to m3"),
        Canned::openai_text("notes on m0 to m7"),
    ])
    .await;
    let messages: Vec<_> = (0..8)
        .map(|i| Arc::new(rein_core::Message::user(format!("m{i}"))))
        .collect();
    let s = summarizer(&e, None)
        .summarize(&messages, Some("notes before"))
        .await
        .unwrap();
    assert_eq!(s.text, "notes on m0 to m7");
    assert_eq!(s.model_key, "openai/gpt-4o-mini");
    assert_eq!(s.usage.input, 200, "both answered calls counted");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 3);
    let [whole, first, second] = [0, 1, 2].map(|i| summary_asked(&requests[i]));
    assert!(whole.contains("[user] m0") && whole.contains("[user] m7"));
    assert!(
        first.starts_with("Previous summary:\nnotes before"),
        "{first}"
    );
    assert!(first.contains("[user] m0") && first.contains("[user] m3"));
    assert!(!first.contains("[user] m4"));
    assert!(
        second.starts_with("Previous summary:\nnotes on m0 to m3"),
        "{second}"
    );
    assert!(second.contains("[user] m4") && second.contains("[user] m7"));
    assert!(!second.contains("[user] m3"));
}

/// A transcript longer than half the summarizing model's window is summarized in chunks from
/// the start, each merged into the notes before it, without a refused request; one message
/// the model still refuses is cut shorter, never dropped.
#[tokio::test]
async fn a_transcript_beyond_the_summary_window_is_chunked_and_a_lone_message_cut() {
    use rein_core::engine::ports::Summarizer;
    let too_long = Canned::json(
        400,
        &serde_json::json!({"error": {
            "message": "This model's maximum context length is 1000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded"
        }}),
    );
    let e = env(vec![
        Canned::openai_text("notes 1"),
        Canned::openai_text("notes 2"),
        too_long,
        Canned::openai_text("notes 3"),
    ])
    .await;
    // A window of 1,000 tokens: chunks of at most 1,500 bytes of transcript.
    let messages: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|w| Arc::new(rein_core::Message::user(format!("{w} ").repeat(600))))
        .collect();
    let s = summarizer(&e, Some(1_000))
        .summarize(&messages, None)
        .await
        .unwrap();
    assert_eq!(s.text, "notes 3");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 4);
    let asked: Vec<String> = requests.iter().map(summary_asked).collect();
    assert!(asked[0].starts_with("Conversation to summarize:") && asked[0].contains("a a a"));
    assert!(asked[1].starts_with("Previous summary:\nnotes 1") && asked[1].contains("b b b"));
    // The third message was refused whole, then sent cut to half its length.
    assert!(asked[2].contains(&"c ".repeat(600)));
    assert!(asked[3].starts_with("Previous summary:\nnotes 2"));
    assert!(asked[3].contains("c c c") && asked[3].contains(" [...]"));
    assert!(asked[3].len() < asked[2].len());
}

#[tokio::test]
async fn progressive_disclosure_lists_tools_until_the_model_activates_them() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "t1",
            "tools__activate_tools",
            r#"{"tools":["blob","nope"]}"#,
        )]),
        tools(&[blob("b1", 3)]),
        Canned::openai_text("Fetched: word word word"),
    ])
    .await;
    let d = driver(&e, false).with_tool(Arc::new(Blob));
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            tools_disclosure: rein_core::spec::ToolDisclosure::Progressive,
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("Fetch a blob.", &opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let requests = e.server.requests();
    let offered = |i: usize| -> Vec<String> {
        let mut names: Vec<String> = requests[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    let head = |i: usize| {
        requests[i].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(offered(0), ["tools__activate_tools"]);
    for listed in [
        "- blob:",
        "- calculator:",
        "- files:",
        "- shell:",
        "- web:",
        "activate_tools",
    ] {
        assert!(
            head(0).contains(listed),
            "{listed} not listed in {}",
            head(0)
        );
    }
    assert!(offered(1).contains(&"blob__fetch".to_owned()));
    assert!(!offered(1).iter().any(|n| n.starts_with("files__")));
    assert!(!head(1).contains("- blob:") && head(1).contains("- files:"));
    // The activation result tells the model what was not found.
    let result = requests[1].tool_result("t1");
    assert!(
        result.contains("Activated: blob") && result.contains("Not found: nope"),
        "{result}"
    );
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let activated: Vec<&str> = op
        .state
        .activated_tools
        .iter()
        .map(|a| a.identifier.as_str())
        .collect();
    assert_eq!(activated, ["blob"]);
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn the_plan_written_with_todo_is_kept_in_state_and_shown_at_every_step() {
    let plan = r#"{"items":[{"text":"Compute 17*23","status":"in_progress"},{"text":"Answer","status":"pending"}]}"#;
    let e = env(vec![
        Canned::openai_tools(&[("p1", "todo__write", plan)]),
        tools(&[calc("c1", "17*23")]),
        Canned::openai_text("391"),
    ])
    .await;
    let d = driver(&e, false);
    let id = d
        .start("What is 17*23?", &StartOptions::default())
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let requests = e.server.requests();
    let last_text = |i: usize| {
        let msgs = requests[i].body["messages"].as_array().unwrap();
        msgs.last().unwrap()["content"].to_string()
    };
    assert!(!last_text(0).contains("Your plan"));
    for i in [1, 2] {
        let note = last_text(i);
        assert!(
            note.contains("[>] Compute 17*23") && note.contains("[ ] Answer"),
            "{note}"
        );
    }
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let texts: Vec<&str> = op.state.todos.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(texts, ["Compute 17*23", "Answer"]);
    assert_consistent(&e.store, id).await;
}

#[tokio::test]
async fn memories_and_notes_outlive_the_operation_and_memories_return_when_relevant() {
    let e = env(vec![
        Canned::openai_tools(&[
            (
                "m1",
                "memory__remember",
                r#"{"fact":"The user prefers metric units"}"#,
            ),
            (
                "n1",
                "notes__create",
                r#"{"title":"Trip ideas","content":"Lyon in May"}"#,
            ),
        ]),
        Canned::openai_text("Noted."),
        Canned::openai_tools(&[("n2", "notes__list", "{}")]),
        Canned::openai_text("8 km; your note: Trip ideas."),
    ])
    .await;
    let d = driver(&e, false);
    let first = d
        .start(
            "Remember I like metric units; note Lyon in May.",
            &StartOptions::default(),
        )
        .await
        .unwrap();
    assert!(matches!(d.run(first).await.unwrap(), RunEnd::Done { .. }));
    let second = d
        .start(
            "How far is 5 miles in metric units?",
            &StartOptions::default(),
        )
        .await
        .unwrap();
    assert!(matches!(d.run(second).await.unwrap(), RunEnd::Done { .. }));
    let requests = e.server.requests();
    assert_eq!(requests.len(), 4);
    let system = |i: usize| {
        requests[i].body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(!system(0).contains("What you remember"));
    assert!(
        system(2).contains("What you remember about the user:\n- The user prefers metric units"),
        "{}",
        system(2)
    );
    let listed = requests[3].tool_result("n2");
    assert!(listed.contains(": Trip ideas"), "{listed}");
    // Stored per user and agent in the store.
    let notes = e
        .store
        .list_documents(
            rein_core::document::DocumentKind::Note,
            "user:local/agent:default",
            10,
        )
        .await
        .unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].body, "Lyon in May");
}

#[tokio::test]
async fn with_an_embedding_model_memories_are_found_by_meaning_not_only_by_words() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "m1",
            "memory__remember",
            r#"{"fact":"The user loves rail travel"}"#,
        )]),
        // The fact's embedding, made as it is stored. The operation's next request recalls
        // nothing: memories are recalled once per user message, and there were none then.
        Canned::openai_embeddings(&[&[0.9, 0.1, 0.0]]),
        Canned::openai_text("Noted."),
        // The second request's embedding (close to the fact's), then the answer.
        Canned::openai_embeddings(&[&[1.0, 0.0, 0.05]]),
        Canned::openai_text("A TGV, then."),
        // The third request's embedding, unrelated; then a recall by the tool, whose query
        // is embedded too, nowhere near the fact either.
        Canned::openai_embeddings(&[&[0.0, 1.0, 0.0]]),
        Canned::openai_tools(&[("r1", "memory__recall", r#"{"query":"allergies"}"#)]),
        Canned::openai_embeddings(&[&[0.0, 0.0, 1.0]]),
        Canned::openai_text("Nothing on allergies."),
    ])
    .await;
    let model = ModelRef {
        provider: "openai".into(),
        model: "text-embedding-3-small".into(),
    };
    let d = driver(&e, false).with_embedder(Arc::new(openai_provider(&e)), model);
    let first = d
        .start(
            "Remember that I love rail travel.",
            &StartOptions::default(),
        )
        .await
        .unwrap();
    assert!(matches!(d.run(first).await.unwrap(), RunEnd::Done { .. }));
    // No word in common with the memory: only its meaning connects them.
    let second = d
        .start("Book me a TGV to Paris.", &StartOptions::default())
        .await
        .unwrap();
    assert!(matches!(d.run(second).await.unwrap(), RunEnd::Done { .. }));
    let third = d
        .start("Any food I must avoid?", &StartOptions::default())
        .await
        .unwrap();
    let end = d.run(third).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");

    let requests = e.server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/v1/embeddings",
            "/v1/chat/completions",
            "/v1/embeddings",
            "/v1/chat/completions",
            "/v1/embeddings",
            "/v1/chat/completions",
            "/v1/embeddings",
            "/v1/chat/completions",
        ],
        "one embedding per stored fact and per operation's question, none while nothing is stored"
    );
    assert_eq!(
        requests[1].body,
        serde_json::json!({"model": "text-embedding-3-small", "input": ["The user loves rail travel"]})
    );
    assert_eq!(requests[3].body["input"][0], "Book me a TGV to Paris.");
    let system = requests[4].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        system.contains("What you remember about the user:\n- The user loves rail travel"),
        "{system}"
    );
    // The third question is unrelated by words and by meaning: nothing injected at either
    // of its model calls (its embedding was made once and reused), nothing recalled.
    for i in [6, 8] {
        let system = requests[i].body["messages"][0].to_string();
        assert!(!system.contains("rail travel"), "{system}");
    }
    assert_eq!(requests[7].body["input"][0], "allergies");
    let recalled = requests[8].tool_result("r1");
    assert_eq!(recalled, "Nothing remembered matches.");
    let stored = e
        .store
        .list_documents(
            rein_core::document::DocumentKind::Memory,
            "user:local/agent:default",
            10,
        )
        .await
        .unwrap();
    let embedding = stored[0].embedding.as_ref().unwrap();
    assert_eq!(embedding.model, "openai/text-embedding-3-small");
    assert_eq!(embedding.vector, [0.9, 0.1, 0.0]);
}

#[tokio::test]
async fn a_process_without_the_operations_tools_or_model_refuses_and_changes_nothing() {
    let e = env(vec![tools(&[(
        "d1".into(),
        "deploy__release".into(),
        r#"{"version":"1.0"}"#.into(),
    )])])
    .await;
    let d = driver(&e, false);
    let id = d.start("ship it", &StartOptions::default()).await.unwrap();
    assert!(matches!(
        d.run(id).await.unwrap(),
        RunEnd::WaitingForHuman { .. }
    ));
    let before = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(before.spec.mcp_servers, ["deploy"]);
    // A process with only the built-in tools: the deploy tool the operation started with is
    // missing, so it refuses instead of continuing with fewer tools.
    let bare = Driver::new(
        e.store.clone(),
        Arc::new(openai_provider(&e)),
        ModelRef {
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
        },
        Arc::new(Catalog::builtin().unwrap()),
    );
    let err = bare
        .decide(id, None, Decision::Approve, Some("u"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, rein_operation::DriverError::MissingTools { tools, .. } if tools == &["deploy"]),
        "{err}"
    );
    assert!(err.to_string().contains("--mcp"), "{err}");
    // A process whose only provider is another one cannot reach the operation's model.
    let elsewhere = Driver::new(
        e.store.clone(),
        Arc::new(openai_provider(&e)),
        ModelRef {
            provider: "anthropic".into(),
            model: "claude".into(),
        },
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Deploy {
        runs: e.runs.clone(),
        block: false,
        policy: InterventionPolicy::Required,
    }));
    let err = elsewhere
        .decide(id, None, Decision::Approve, Some("u"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, rein_operation::DriverError::ModelUnavailable(_)),
        "{err}"
    );
    // Nothing was decided, run or written.
    let after = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(after.record.commit_seq, before.record.commit_seq);
    assert_eq!(after.state.status, Status::WaitingForHuman);
    assert!(
        e.store
            .interventions(id)
            .await
            .unwrap()
            .iter()
            .all(|i| i.status == InterventionStatus::Pending)
    );
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
}

/// A person's words with control characters in them (a NUL piped into `rein chat`) are stored
/// and sent with the characters shown, as every store takes them.
#[tokio::test]
async fn a_prompt_with_control_characters_is_stored_and_sent_shown() {
    let e = env(vec![Canned::openai_text("Seen.")]).await;
    let d = driver(&e, false);
    let id = d
        .start("look at a\0b\x07", &Default::default())
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let shown = "look at a\u{2400}b\u{2407}";
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let user = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .unwrap();
    assert_eq!(user.text_content(), shown);
    assert!(e.server.requests()[0].carries(shown));
}
