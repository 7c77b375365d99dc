//! Durable loop figures (prints, not a timed test):
//! - the reference loop (user input, 10 rounds of one calculator call, final answer) run
//!   through the driver with every step committed to SQLite: µs per tool round with
//!   `synchronous=NORMAL` and `FULL`;
//! - 10,000 operations parked on an approval: database size, time to list them, time to
//!   approve and finish one.
//!
//! `cargo bench -p rein-operation --bench durable`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use rein_core::intervention::ApprovalMode;
use rein_core::state::{ModelRef, Status};
use rein_core::{OperationId, Role, TokenUsage};
use rein_model::provider::EventStream;
use rein_model::{
    Catalog, ChatRequest, ModelError, ModelEvent, ModelProvider, ModelResponse, StopReason,
};
use rein_operation::{Decision, Driver, RunEnd, StartOptions};
use rein_store::{SqlStore, Store, Synchronous};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const ROUNDS: usize = 10;

/// Asks for the calculator until ten results are in, then answers; or, for "park", asks for
/// a call that needs approval first.
struct LoopModel;

fn turn(req: &ChatRequest) -> Vec<ModelEvent> {
    let results = req.messages.iter().filter(|m| m.role == Role::Tool).count();
    let usage = ModelEvent::Usage {
        usage: TokenUsage {
            input: 200,
            output: 20,
            total: 220,
            ..Default::default()
        },
    };
    let mut out = vec![ModelEvent::Start {
        response_id: None,
        model: Some("loop".into()),
    }];
    if results < ROUNDS {
        out.push(ModelEvent::ToolCallStart {
            index: 0,
            id: Some(format!("call_{results}")),
            name: "calculator__evaluate".into(),
            thought_signature: None,
        });
        out.push(ModelEvent::ToolCallDelta {
            index: 0,
            arguments: format!("{{\"expression\":\"6*7+{results}\"}}"),
        });
        out.push(ModelEvent::ToolCallEnd { index: 0 });
        out.push(usage);
        out.push(ModelEvent::Stop {
            reason: StopReason::ToolUse,
            raw: None,
        });
    } else {
        out.push(ModelEvent::TextDelta {
            text: "The answer is 42.".into(),
        });
        out.push(usage);
        out.push(ModelEvent::Stop {
            reason: StopReason::EndTurn,
            raw: None,
        });
    }
    out
}

impl ModelProvider for LoopModel {
    fn id(&self) -> &str {
        "bench"
    }
    fn chat(&self, req: ChatRequest) -> EventStream {
        futures::stream::iter(turn(&req)).boxed()
    }
    fn complete(&self, req: ChatRequest) -> BoxFuture<'static, ModelResponse> {
        let events = turn(&req);
        async move { rein_model::collect(futures::stream::iter(events)).await }.boxed()
    }
    fn generate_object(
        &self,
        _: ChatRequest,
        _: &str,
        _: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>> {
        async {
            Err(ModelError::new(
                rein_model::ErrorKind::Unsupported,
                "bench model",
            ))
        }
        .boxed()
    }
    fn embed(
        &self,
        _: &str,
        _: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>> {
        async {
            Err(ModelError::new(
                rein_model::ErrorKind::Unsupported,
                "bench model",
            ))
        }
        .boxed()
    }
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        async { Ok(vec!["loop".into()]) }.boxed()
    }
}

fn db_size(path: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok())
        .map(|m| m.len())
        .sum()
}

async fn driver(path: &Path, sync: Synchronous) -> (Driver, Arc<SqlStore>) {
    let store = Arc::new(SqlStore::open(path.to_str().unwrap(), sync).await.unwrap());
    let model = ModelRef {
        provider: "bench".into(),
        model: "loop".into(),
    };
    (
        Driver::new(
            store.clone(),
            Arc::new(LoopModel),
            model,
            Arc::new(Catalog::builtin().unwrap()),
        ),
        store,
    )
}

async fn reference_loop(dir: &Path, sync: Synchronous, operations: usize) {
    let path = dir.join(format!("loop-{sync:?}.db"));
    let (d, store) = driver(&path, sync).await;
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            max_steps: Some(100),
            ..Default::default()
        },
        ..Default::default()
    };
    let start = Instant::now();
    let mut commits = 0;
    for _ in 0..operations {
        let id = d.start("Compute 6*7 ten times.", &opts).await.unwrap();
        let end = d.run(id).await.unwrap();
        assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
        commits += store
            .load_operation(id)
            .await
            .unwrap()
            .unwrap()
            .record
            .commit_seq;
    }
    let us = start.elapsed().as_secs_f64() * 1e6;
    println!(
        "synchronous={sync:?}: {operations} operations, {:.0} µs per operation, {:.1} µs per tool round, {:.1} µs per committed step",
        us / operations as f64,
        us / (operations * ROUNDS) as f64,
        us / commits as f64
    );
}

async fn parked(dir: &Path, count: usize) {
    let path = dir.join("parked.db");
    let (d, store) = driver(&path, Synchronous::Normal).await;
    // Allow-list mode with an empty list: every calculator call waits for approval.
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            approval: ApprovalMode::AllowList,
            max_steps: Some(100),
            ..Default::default()
        },
        ..Default::default()
    };
    let start = Instant::now();
    let mut last = None;
    for _ in 0..count {
        let id = d.start("Compute 6*7 ten times.", &opts).await.unwrap();
        assert!(matches!(
            d.run(id).await.unwrap(),
            RunEnd::WaitingForHuman { .. }
        ));
        last = Some(id);
    }
    let created = start.elapsed();
    let t = Instant::now();
    let listed = store
        .list_operations(&rein_store::OperationFilter {
            status: Some(Status::WaitingForHuman),
            limit: u32::try_from(count).unwrap(),
            ..Default::default()
        })
        .await
        .unwrap();
    let list_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(listed.len(), count);
    let id: OperationId = last.unwrap();
    let t = Instant::now();
    let end = d.decide(id, None, Decision::Approve, None).await.unwrap();
    let resume_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{count} parked operations: created in {:.1} s, database {:.1} MiB, list all parked {list_ms:.1} ms, approve + resume one {resume_ms:.2} ms (ends {})",
        created.as_secs_f64(),
        db_size(&path) as f64 / (1024.0 * 1024.0),
        match end {
            RunEnd::WaitingForHuman { .. } => "parked again on its next call",
            _ => "finished",
        }
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::env::temp_dir().join(format!("rein-bench-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    reference_loop(&dir, Synchronous::Normal, 200).await;
    reference_loop(&dir, Synchronous::Full, 200).await;
    parked(&dir, 10_000).await;
    let _ = std::fs::remove_dir_all(&dir);
}
