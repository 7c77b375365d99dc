//! Pipelined commits (`Durability::Pipelined`, the default) against synchronous ones: the same
//! operation commits the same history in both modes, on SQLite and on PostgreSQL, and a tool
//! with effects runs only once the model step that asked for it is on disk, even when that
//! commit is held up while the next step runs.
//! Crashes at every commit point of a pipelined run are the CLI's kill tests (`rein run`
//! pipelines by default) and the fault sweeps (`faults::`), which run on the default too.

use crate::common::assert_consistent;
use crate::common::in_process::{InProcessModel, answer, tool_call};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::ApprovalMode;
use rein_core::state::{FinishReason, ModelRef};
use rein_core::tool::ToolManifest;
use rein_core::{OperationId, Role};
use rein_model::{Catalog, ChatRequest, ModelEvent, StopReason};
use rein_operation::{Driver, Durability, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::{Effect, SqlStore, Store, Synchronous};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Two calculator rounds, then the release, then the answer: each turn decided by the results
/// already in the request (a call asked again after a crash gets the same answer). Before it
/// answers the turn that asks for the release, `hold` (when set) is called: the test holds up
/// the commits from then on.
fn turn(req: &ChatRequest, hold: &(dyn Fn() + Send + Sync)) -> Vec<ModelEvent> {
    let results = req.messages.iter().filter(|m| m.role == Role::Tool).count();
    match results {
        0 | 1 => answer(
            tool_call(
                &format!("c{results}"),
                "calculator__evaluate",
                r#"{"expression":"6*7"}"#,
            ),
            StopReason::ToolUse,
        ),
        2 => {
            hold();
            answer(
                tool_call("d1", "deploy__release", r#"{"version":"1.2.0"}"#),
                StopReason::ToolUse,
            )
        }
        _ => answer(
            vec![ModelEvent::TextDelta {
                text: "Released 1.2.0.".into(),
            }],
            StopReason::EndTurn,
        ),
    }
}

/// A release that notes, when it runs, whether the commit of the call asking for it has
/// landed (the commit hook has seen it: it is on disk).
struct Deploy {
    effect: Effect,
    runs: Arc<AtomicU32>,
    asked_landed: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<bool>>>,
}

impl Tool for Deploy {
    fn manifest(&self) -> ToolManifest {
        rein_core::testing::manifest("deploy", &["release"])
    }
    fn effect(&self, _: &str) -> Effect {
        self.effect
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        _: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let landed = self.asked_landed.load(Ordering::SeqCst);
            self.seen.lock().unwrap().push(landed);
            self.runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("released 1.2.0"))
        }
        .boxed()
    }
}

/// What a run committed, without ids and times: per step its status and instructions, the
/// events' kinds in order, the messages' roles and texts, the tokens counted.
#[derive(Debug, PartialEq)]
struct History {
    steps: Vec<String>,
    events: Vec<String>,
    messages: Vec<(Role, String)>,
    total_tokens: u64,
}

async fn history(store: &SqlStore, id: OperationId) -> History {
    let steps = store
        .steps(id)
        .await
        .unwrap()
        .iter()
        .map(|s| format!("{} {:?} {:?}", s.step_index, s.status, s.instructions))
        .collect();
    let events = store
        .events(id, None)
        .await
        .unwrap()
        .iter()
        .map(|e| {
            let v = serde_json::to_value(e).unwrap();
            format!("{} {} {}", e.seq, e.step, v["type"].as_str().unwrap_or("?"))
        })
        .collect();
    let op = store.load_operation(id).await.unwrap().unwrap();
    History {
        steps,
        events,
        messages: op
            .state
            .messages
            .iter()
            .map(|m| (m.role, m.text_content()))
            .collect(),
        total_tokens: op.record.total_tokens,
    }
}

struct Outcome {
    history: History,
    runs: u32,
    asked_on_disk: Vec<bool>,
}

/// Run the operation on `store` with `durability`, the release having `effect`; with `hold`,
/// from the turn that asks for the release on, each commit waits 200 ms before it is written
/// (the test must run on a current-thread runtime: the delay is the thread's).
async fn run(store: &Arc<SqlStore>, durability: Durability, effect: Effect, hold: bool) -> Outcome {
    let runs = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let asked_landed = Arc::new(AtomicBool::new(false));
    let hold = move || {
        if hold {
            crate::simulation::executor::install();
            crate::simulation::executor::delay_commits(Some(Duration::from_millis(200)));
        }
    };
    let landed = asked_landed.clone();
    let driver = Driver::new(
        store.clone(),
        Arc::new(InProcessModel::new(move |req| turn(req, &hold))),
        ModelRef {
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
        },
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_durability(durability)
    .with_commit_hook(Arc::new(move |_, events| {
        if events
            .iter()
            .any(|e| serde_json::to_string(e).unwrap().contains("\"d1\""))
        {
            landed.store(true, Ordering::SeqCst);
        }
    }))
    .with_tool(Arc::new(Deploy {
        effect,
        runs: runs.clone(),
        asked_landed,
        seen: seen.clone(),
    }));
    let options = StartOptions {
        spec: rein_operation::OperationSpec {
            approval: ApprovalMode::AutoRun,
            ..Default::default()
        },
        ..Default::default()
    };
    let id = driver.start("ship it", &options).await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(60), driver.run(id))
        .await
        .expect("the run ends")
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{durability:?}: {end:?}"
    );
    assert_consistent(store, id).await;
    let history = history(store, id).await;
    crate::simulation::executor::delay_commits(None);
    let asked_on_disk = seen.lock().unwrap().clone();
    Outcome {
        history,
        runs: runs.load(Ordering::SeqCst),
        asked_on_disk,
    }
}

fn assert_same(sync: &Outcome, pipelined: &Outcome, what: &str) {
    assert_eq!(sync.history, pipelined.history, "{what}");
    assert_eq!((sync.runs, pipelined.runs), (1, 1), "{what}: released once");
    assert_eq!(sync.history.steps.len(), 8, "{what}: {:#?}", sync.history);
    assert_eq!(
        pipelined.history.messages.last().map(|m| m.1.as_str()),
        Some("Released 1.2.0."),
        "{what}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_and_sync_commits_make_the_same_history_on_sqlite() {
    let (_dir, store) = crate::common::temp_store("rein-pipelined").await;
    let sync = run(&store, Durability::Sync, Effect::AtMostOnce, false).await;
    let pipelined = run(&store, Durability::Pipelined, Effect::AtMostOnce, false).await;
    assert_same(&sync, &pipelined, "SQLite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_and_sync_commits_make_the_same_history_on_postgres() {
    let Some(scratch) = rein_testkit::postgres_scratch("driver::pipelined", "rein_pipelined").await
    else {
        return;
    };
    let store = Arc::new(
        SqlStore::open(&scratch.url, Synchronous::Normal)
            .await
            .unwrap(),
    );
    let sync = run(&store, Durability::Sync, Effect::AtMostOnce, false).await;
    let pipelined = run(&store, Durability::Pipelined, Effect::AtMostOnce, false).await;
    store.close().await;
    scratch.drop().await;
    assert_same(&sync, &pipelined, "PostgreSQL");
}

/// The release's model step is committed while the release's step starts (pipelined), and
/// that commit waits 200 ms before it is written: the release waits for it, so the call it
/// runs is one a crash can no longer take back and ask differently. One thread runs both, and
/// nothing on the step's path to the release waits on anything else, so without that wait
/// the release would run first every time. For every effect that is not pure.
#[tokio::test]
async fn an_effect_waits_until_the_step_that_asked_for_it_is_on_disk() {
    for durability in [Durability::Pipelined, Durability::Sync] {
        for effect in [Effect::Idempotent, Effect::AtMostOnce] {
            let (_dir, store) = crate::common::temp_store("rein-pipelined-hold").await;
            let out = run(&store, durability, effect, true).await;
            assert_eq!(out.runs, 1, "{durability:?} {effect:?}");
            assert_eq!(
                out.asked_on_disk,
                [true],
                "{durability:?} {effect:?}: the release ran before the call asking for it was \
                 committed"
            );
        }
    }
}
