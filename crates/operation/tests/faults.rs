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
    let end = driver(store, runs)
        .resume(id)
        .await
        .unwrap_or_else(|e| panic!("{what}: the resume failed: {e}"));
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

/// A write's time on the slow disk of the sweeps of operations committing together: long
/// enough that the others' commits queue while one transaction is written, as on a busy server.
const SLOW_WRITE: Duration = Duration::from_micros(300);

/// What one faulted run (of one operation, or of several at once) did.
#[derive(Debug, Default)]
struct Seen {
    /// Calls the fault failed.
    failed: u64,
    /// Every faulted run ended (the failed write or sync was one it does not depend on).
    ended: bool,
    /// A faulted run failed with a store error naming the fault.
    refused: bool,
    /// A run that failed had run its release first.
    released_before_restart: bool,
}

/// Start `together` operations on one store, run them at once with `fault` after `skip` writes
/// (syncs), then restart and resume each. Run together, their commits share the SQLite
/// writer's transactions (group commit), so one fault can fail several operations' commits.
async fn one(fault: Fault, skip: u64, sync: Synchronous, together: usize) -> Seen {
    let dir = std::env::temp_dir().join(format!("rein-faults-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("rein.db");
    let what = format!("{fault:?} after {skip} ({sync:?}, {together} at once)");
    if together > 1 {
        vfs::slow(&dir, Some(SLOW_WRITE));
    }
    let store = Arc::new(SqlStore::open(db.to_str().unwrap(), sync).await.unwrap());
    let runs: Vec<Arc<AtomicU32>> = (0..together).map(|_| Arc::default()).collect();
    let mut ids = Vec::new();
    for r in &runs {
        ids.push(
            driver(&store, r)
                .start("ship it", &options())
                .await
                .unwrap(),
        );
    }

    vfs::arm(&dir, fault, skip);
    let firsts = tokio::time::timeout(
        Duration::from_secs(60),
        futures::future::join_all(ids.iter().zip(&runs).map(|(id, r)| {
            let d = driver(&store, r);
            async move { d.run(*id).await }
        })),
    )
    .await
    .unwrap_or_else(|_| panic!("{what}: the run hung"));
    vfs::slow(&dir, None);
    let mut seen = Seen {
        failed: vfs::disarm(&dir),
        ended: true,
        ..Seen::default()
    };
    for (first, r) in firsts.iter().zip(&runs) {
        match first {
            Ok(RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }) => {}
            Ok(other) => panic!("{what}: the run ended as {other:?}"),
            Err(e) => {
                let text = e.to_string();
                assert!(
                    ["disk is full", "disk I/O error", "database or disk is full"]
                        .iter()
                        .any(|s| text.contains(s)),
                    "{what}: a failure that does not say what happened: {text}"
                );
                seen.ended = false;
                seen.refused = true;
                seen.released_before_restart |= r.load(Ordering::SeqCst) == 1;
            }
        }
    }
    assert_eq!(integrity(&db), "ok", "{what}: integrity");
    store.close().await;
    drop(store);

    // A restart: a new store on the same file; each operation continues from its last commit.
    let store = Arc::new(SqlStore::open(db.to_str().unwrap(), sync).await.unwrap());
    for (id, r) in ids.iter().zip(&runs) {
        settle(&store, *id, r, &what).await;
    }
    assert_eq!(integrity(&db), "ok", "{what}: integrity after the resume");
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    seen
}

/// The writes (or syncs) one fault-free run of `together` operations makes under its folder
/// (the points to fault), and how many transactions carried their commits.
async fn points(sync: Synchronous, together: usize) -> (u64, u64, rein_store::WriterStats) {
    let dir = std::env::temp_dir().join(format!("rein-faults-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), sync)
            .await
            .unwrap(),
    );
    if together > 1 {
        vfs::slow(&dir, Some(SLOW_WRITE));
    }
    let runs = Arc::new(AtomicU32::new(0));
    let mut ids = Vec::new();
    for _ in 0..together {
        ids.push(
            driver(&store, &runs)
                .start("ship it", &options())
                .await
                .unwrap(),
        );
    }
    vfs::count(&dir);
    let ends = futures::future::join_all(ids.iter().map(|id| {
        let d = driver(&store, &runs);
        async move { d.run(*id).await }
    }))
    .await;
    let counted = vfs::counted(&dir);
    for end in ends {
        assert!(matches!(end, Ok(RunEnd::Done { .. })), "{end:?}");
    }
    let stats = store.writer_stats().unwrap_or_default();
    store.close().await;
    vfs::slow(&dir, None);
    let _ = std::fs::remove_dir_all(&dir);
    (counted.0, counted.1, stats)
}

/// Fault every `stride`-th write (or sync) of a run of `together` operations, and the points
/// after its last one.
async fn sweep(sync: Synchronous, together: usize, stride: u64) {
    vfs::install();
    let (writes, syncs, stats) = points(sync, together).await;
    assert!(writes > 0, "the run wrote nothing under its folder");
    println!(
        "{sync:?}, {together} at once: {} step commits in {} transactions{}",
        stats.commits,
        stats.transactions,
        if stats.commits > stats.transactions {
            ""
        } else {
            " (NOTE: no commits shared a transaction this time; the sweep ran without group commit)"
        }
    );
    for fault in Fault::ALL {
        let n = if fault == Fault::SyncError {
            syncs
        } else {
            writes
        };
        let mut tally = (0, 0, 0, 0);
        for skip in (0..=n).step_by(stride as usize) {
            let seen = one(fault, skip, sync, together).await;
            tally.0 += u32::from(seen.refused);
            tally.1 += u32::from(seen.ended && seen.failed > 0);
            tally.2 += u32::from(seen.failed == 0);
            tally.3 += u32::from(seen.released_before_restart && seen.refused);
        }
        println!(
            "{sync:?} {fault:?}, {together} at once: {} points of {}; failed visibly {}, absorbed {}, \
             not reached {}, released then failed (settled on resume, not repeated) {}",
            n / stride + 1,
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
    sweep(Synchronous::Normal, 1, 1).await;
}

/// Three operations committing at once on a slow disk share the writer's transactions (group
/// commit): a fault at a write or sync (every 20th, to bound the time) fails the commits its
/// transaction carried (each run says so), and every operation resumes whole.
#[tokio::test]
async fn writes_under_operations_committing_together_can_fail_and_each_resumes_whole() {
    sweep(Synchronous::Normal, 3, 20).await;
}

#[tokio::test]
async fn every_write_and_sync_of_a_run_can_fail_and_the_operation_resumes_whole_full() {
    sweep(Synchronous::Full, 1, 1).await;
}
