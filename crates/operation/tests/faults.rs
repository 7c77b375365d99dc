//! Faults injected under a running operation on the real SQLite backend: the disk filling up,
//! a write's I/O error and an fsync that fails, at every write (or sync) the run makes, through
//! a fault VFS every connection of the process uses (`faults/vfs.rs`). Whatever the fault hit,
//! the run either ends or fails visibly with a store error, the database passes SQLite's
//! integrity check, nothing is half-written (events gapless, each message once, usage counted
//! once), and after a restart (a new store on the same file) the operation resumes to its
//! answer with its at-most-once effect run at most once.

#[path = "faults/postgres.rs"]
mod postgres;
#[path = "faults/proxy.rs"]
mod proxy;
#[path = "faults/vfs.rs"]
mod vfs;

use crate::common::in_process::{InProcessModel, answer, tool_call};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::ApprovalMode;
use rein_core::state::{FinishReason, ModelRef};
use rein_core::tool::ToolManifest;
use rein_core::{OperationId, Role};
use rein_model::{Catalog, ChatRequest, ModelEvent, StopReason};
use rein_operation::{Driver, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::{Effect, ExecStatus, SqlStore, Store, Synchronous};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use vfs::Fault;

/// Asks for the calculator, then for the release, then answers: each turn decided by the
/// results already in the request, so a call re-issued after a failed commit gets the same
/// answer.
fn turn(req: &ChatRequest) -> Vec<ModelEvent> {
    let results = req.messages.iter().filter(|m| m.role == Role::Tool).count();
    match results {
        0 => answer(
            tool_call("c1", "calculator__evaluate", r#"{"expression":"6*7"}"#),
            StopReason::ToolUse,
        ),
        1 => answer(
            tool_call("d1", "deploy__release", r#"{"version":"1.2.0"}"#),
            StopReason::ToolUse,
        ),
        _ => answer(
            vec![ModelEvent::TextDelta {
                text: "Released 1.2.0.".into(),
            }],
            StopReason::EndTurn,
        ),
    }
}

/// A release: an effect that must not happen twice; it counts its runs.
struct Deploy {
    runs: Arc<AtomicU32>,
}

impl Tool for Deploy {
    fn manifest(&self) -> ToolManifest {
        rein_core::testing::manifest("deploy", &["release"])
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::AtMostOnce
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        _: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("released 1.2.0"))
        }
        .boxed()
    }
}

fn driver(store: &Arc<SqlStore>, runs: &Arc<AtomicU32>) -> Driver {
    let model = ModelRef {
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
    };
    Driver::new(
        store.clone(),
        Arc::new(InProcessModel::new(turn)),
        model,
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Deploy { runs: runs.clone() }))
}

fn options() -> StartOptions {
    StartOptions {
        spec: rein_operation::OperationSpec {
            approval: ApprovalMode::AutoRun,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// SQLite's own verdict on the file, from a connection of its own.
fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .unwrap()
}

/// Nothing half-written: what every committed operation satisfies, and one stored step per
/// commit.
async fn assert_whole(store: &SqlStore, id: OperationId, what: &str) {
    crate::common::assert_consistent(store, id).await;
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(
        store.steps(id).await.unwrap().len() as u64,
        op.record.commit_seq,
        "{what}: one stored step per commit"
    );
}

/// After a fault and a restart: the operation is whole, resumes to its answer, and its release
/// ran at most once (exactly once if recorded as succeeded).
async fn settle(store: &Arc<SqlStore>, id: OperationId, runs: &Arc<AtomicU32>, what: &str) {
    assert_whole(store, id, what).await;
    let end = driver(store, runs).resume(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{what}: resumed to {end:?}"
    );
    assert_whole(store, id, what).await;
    let released = runs.load(Ordering::SeqCst);
    assert!(released <= 1, "{what}: released {released} times");
    let op = store.load_operation(id).await.unwrap().unwrap();
    let shown = || {
        op.state
            .messages
            .iter()
            .map(|m| format!("{:?} {}", m.role, m.text_content()))
            .collect::<Vec<_>>()
    };
    let Some(exec) = store.tool_execution(id, "d1").await.unwrap() else {
        panic!("{what}: no record of the release; messages {:?}", shown());
    };
    match exec.status {
        ExecStatus::Succeeded => assert_eq!(released, 1, "{what}: succeeded without running"),
        ExecStatus::Interrupted => {}
        other => panic!("{what}: the release ended {other:?}"),
    }
    let last = op.state.messages.last().unwrap();
    assert_eq!(
        (last.role, last.text_content().as_str()),
        (Role::Assistant, "Released 1.2.0."),
        "{what}: {:?}",
        shown()
    );
}

/// What one faulted run did.
#[derive(Debug, Default)]
struct Seen {
    /// Calls the fault failed.
    failed: u64,
    /// The faulted run ended (the failed write or sync was one it does not depend on).
    ended: bool,
    /// The faulted run failed with a store error naming the fault.
    refused: bool,
    /// The release ran in the faulted run.
    released_before_restart: bool,
}

/// Start an operation, run it with `fault` after `skip` writes (syncs), then restart and resume.
async fn one(fault: Fault, skip: u64, sync: Synchronous) -> Seen {
    let dir = std::env::temp_dir().join(format!("rein-faults-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("rein.db");
    let what = format!("{fault:?} after {skip} ({sync:?})");
    let store = Arc::new(SqlStore::open(db.to_str().unwrap(), sync).await.unwrap());
    let runs = Arc::new(AtomicU32::new(0));
    let id = driver(&store, &runs)
        .start("ship it", &options())
        .await
        .unwrap();

    vfs::arm(&dir, fault, skip);
    let first = tokio::time::timeout(Duration::from_secs(60), driver(&store, &runs).run(id))
        .await
        .unwrap_or_else(|_| panic!("{what}: the run hung"));
    let mut seen = Seen {
        failed: vfs::disarm(&dir),
        released_before_restart: runs.load(Ordering::SeqCst) == 1,
        ..Seen::default()
    };
    match &first {
        Ok(RunEnd::Done {
            reason: FinishReason::Completed,
            ..
        }) => seen.ended = true,
        Ok(other) => panic!("{what}: the run ended as {other:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(
                ["disk is full", "disk I/O error", "database or disk is full"]
                    .iter()
                    .any(|s| text.contains(s)),
                "{what}: a failure that does not say what happened: {text}"
            );
            seen.refused = true;
        }
    }
    assert_eq!(integrity(&db), "ok", "{what}: integrity");
    store.close().await;
    drop(store);

    // A restart: a new store on the same file; the operation continues from its last commit.
    let store = Arc::new(SqlStore::open(db.to_str().unwrap(), sync).await.unwrap());
    settle(&store, id, &runs, &what).await;
    assert_eq!(integrity(&db), "ok", "{what}: integrity after the resume");
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    seen
}

/// The writes (or syncs) one fault-free run makes under its folder: the points to fault.
async fn points(sync: Synchronous) -> (u64, u64) {
    let dir = std::env::temp_dir().join(format!("rein-faults-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), sync)
            .await
            .unwrap(),
    );
    let runs = Arc::new(AtomicU32::new(0));
    let id = driver(&store, &runs)
        .start("ship it", &options())
        .await
        .unwrap();
    vfs::count(&dir);
    let end = driver(&store, &runs).run(id).await.unwrap();
    let counted = vfs::counted(&dir);
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    counted
}

async fn sweep(sync: Synchronous) {
    vfs::install();
    let (writes, syncs) = points(sync).await;
    assert!(writes > 0, "the run wrote nothing under its folder");
    for fault in Fault::ALL {
        let n = if fault == Fault::SyncError {
            syncs
        } else {
            writes
        };
        let mut tally = (0, 0, 0, 0);
        for skip in 0..=n {
            let seen = one(fault, skip, sync).await;
            tally.0 += u32::from(seen.refused);
            tally.1 += u32::from(seen.ended && seen.failed > 0);
            tally.2 += u32::from(seen.failed == 0);
            tally.3 += u32::from(seen.released_before_restart && seen.refused);
        }
        println!(
            "{sync:?} {fault:?}: {} points; failed visibly {}, absorbed {}, not reached {}, \
             released then failed (settled on resume, not repeated) {}",
            n + 1,
            tally.0,
            tally.1,
            tally.2,
            tally.3
        );
    }
}

#[tokio::test]
async fn every_write_and_sync_of_a_run_can_fail_and_the_operation_resumes_whole_normal() {
    sweep(Synchronous::Normal).await;
}

#[tokio::test]
async fn every_write_and_sync_of_a_run_can_fail_and_the_operation_resumes_whole_full() {
    sweep(Synchronous::Full).await;
}
