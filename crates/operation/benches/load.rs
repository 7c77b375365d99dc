//! Many operations at once (prints figures, not a timed test): what a busy server's engine and
//! store do when hundreds or thousands of operations are in flight, most of them waiting on a
//! model.
//!
//! Workload per operation (the same as `bench/load/langgraph_load.py`'s): a user message;
//! `ROUNDS` rounds of one calculator call (allowed without asking); one `deploy/release` call,
//! an at-most-once effect that waits for a person's approval (the operation parks); once every
//! operation is parked, each is approved and resumed, runs the release and ends with the
//! model's answer. The scripted model takes `LATENCY` per call and streams its answer in pieces
//! spread over it.
//!
//! Reported per concurrency and backend (SQLite `NORMAL` and `FULL`, and PostgreSQL when
//! `REIN_BENCH_DATABASE_URL` or `REIN_TEST_DATABASE_URL` names a server):
//! - committed steps per second over the whole run (wall time from the first start to the last
//!   answer, the parked interval excluded);
//! - added latency per tool round, p50 and p99: from the end of one model call to the start of
//!   the operation's next (the model step's commit, the tool, the tool step's commit, the next
//!   request's context), everything rein adds between two model calls;
//! - process RSS per in-flight operation (peak while running, minus before) and per parked one;
//! - CPU (user + system) per committed step;
//! - database growth per committed step;
//! - on SQLite, step commits per write transaction (group commit).
//!
//! `cargo bench -p rein-operation --bench load` (`-- 100 1000 5000` to choose concurrencies,
//! default 100 and 1000; `-- normal full postgres` to choose backends, default all);
//! `bench/load/run.sh` adds LangGraph's same workload next to it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::ApprovalMode;
use rein_core::state::ModelRef;
use rein_core::tool::ToolManifest;
use rein_core::{OperationId, Role, TokenUsage};
use rein_model::provider::EventStream;
use rein_model::{
    Catalog, ChatRequest, ModelError, ModelEvent, ModelProvider, ModelResponse, StopReason,
};
use rein_operation::{Decision, Driver, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::{Effect, SqlStore, Store, Synchronous};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The allocator the `rein` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Calculator rounds before the release.
const ROUNDS: usize = 3;
/// One model call, start to last piece.
const LATENCY: Duration = Duration::from_millis(300);

/// When each operation's model calls ended and the gaps (rein's added time) between them.
#[derive(Default)]
struct Clock {
    ended: HashMap<String, Instant>,
    gaps: Vec<Duration>,
}

/// The scripted model: by the tool results in the request, a calculator call, the release, or
/// the answer; each call's events spread over [`LATENCY`].
struct Scripted {
    clock: Arc<Mutex<Clock>>,
}

fn turn(req: &ChatRequest) -> Vec<ModelEvent> {
    let results = req.messages.iter().filter(|m| m.role == Role::Tool).count();
    let mut out = vec![ModelEvent::Start {
        response_id: None,
        model: Some("load".into()),
    }];
    let call = |id: String, name: &str, arguments: String| {
        [
            ModelEvent::ToolCallStart {
                index: 0,
                id: Some(id),
                name: name.into(),
                thought_signature: None,
            },
            ModelEvent::ToolCallDelta {
                index: 0,
                arguments,
            },
            ModelEvent::ToolCallEnd { index: 0 },
        ]
    };
    let stop = if results < ROUNDS {
        out.extend(call(
            format!("call_{results}"),
            "calculator__evaluate",
            format!("{{\"expression\":\"6*7+{results}\"}}"),
        ));
        StopReason::ToolUse
    } else if results == ROUNDS {
        out.extend(call(
            "release".into(),
            "deploy__release",
            "{\"version\":\"1.2.0\"}".into(),
        ));
        StopReason::ToolUse
    } else {
        for piece in ["Released ", "1.2.0; ", "the answer ", "is 42."] {
            out.push(ModelEvent::TextDelta { text: piece.into() });
        }
        StopReason::EndTurn
    };
    out.push(ModelEvent::Usage {
        usage: TokenUsage {
            input: 200,
            output: 20,
            total: 220,
            ..Default::default()
        },
    });
    out.push(ModelEvent::Stop {
        reason: stop,
        raw: None,
    });
    out
}

impl ModelProvider for Scripted {
    fn id(&self) -> &str {
        "bench"
    }
    fn chat(&self, req: ChatRequest) -> EventStream {
        let key = req
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.text_content())
            .unwrap_or_default();
        let results = req.messages.iter().filter(|m| m.role == Role::Tool).count();
        let events = turn(&req);
        let piece = LATENCY / events.len() as u32;
        let clock = Arc::clone(&self.clock);
        {
            let mut c = clock.lock().unwrap();
            // The call after the release waited for a person: not rein's time.
            if let Some(end) = c.ended.get(&key).copied()
                && results != ROUNDS + 1
            {
                c.gaps.push(end.elapsed());
            }
        }
        futures::stream::iter(events)
            .then(move |e| {
                let clock = Arc::clone(&clock);
                let key = key.clone();
                async move {
                    tokio::time::sleep(piece).await;
                    if matches!(e, ModelEvent::Stop { .. }) {
                        clock.lock().unwrap().ended.insert(key, Instant::now());
                    }
                    e
                }
            })
            .boxed()
    }
    fn complete(&self, req: ChatRequest) -> BoxFuture<'static, ModelResponse> {
        let events = self.chat(req);
        async move { rein_model::collect(events).await }.boxed()
    }
    fn generate_object(
        &self,
        _: ChatRequest,
        _: &str,
        _: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>> {
        async { Err(ModelError::new(rein_model::ErrorKind::Unsupported, "bench")) }.boxed()
    }
    fn embed(
        &self,
        _: &str,
        _: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>> {
        async { Err(ModelError::new(rein_model::ErrorKind::Unsupported, "bench")) }.boxed()
    }
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        async { Ok(vec!["load".into()]) }.boxed()
    }
}

/// The release: an at-most-once effect; it counts its runs.
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

/// Resident memory of this process, KiB.
fn rss_kib() -> f64 {
    status_kib("VmRSS:")
}

/// Resident anonymous memory of this process (its heap and stacks: not SQLite's file pages it
/// maps, which the kernel's page cache holds and can drop), KiB.
fn anon_kib() -> f64 {
    status_kib("RssAnon:")
}

fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0)
}

/// CPU time of this process (user + system), from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at `state`.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the line: 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

#[derive(Clone)]
enum Target {
    Sqlite(PathBuf, Synchronous),
    Postgres(String),
}

impl Target {
    fn label(&self) -> String {
        match self {
            Target::Sqlite(_, sync) => format!("synchronous={sync:?}"),
            Target::Postgres(_) => "postgres".into(),
        }
    }

    async fn open(&self) -> SqlStore {
        match self {
            Target::Sqlite(path, sync) => {
                let _ = std::fs::remove_file(path);
                SqlStore::open(path.to_str().unwrap(), *sync).await.unwrap()
            }
            Target::Postgres(url) => SqlStore::open(url, Synchronous::Normal).await.unwrap(),
        }
    }

    async fn size(&self) -> f64 {
        match self {
            Target::Sqlite(path, _) => ["", "-wal"]
                .iter()
                .filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok())
                .map(|m| m.len() as f64)
                .sum(),
            Target::Postgres(url) => {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                let bytes: i64 = sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(&mut conn)
                    .await
                    .unwrap();
                bytes as f64
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

async fn load(target: &Target, operations: usize) {
    let store = Arc::new(target.open().await);
    let clock = Arc::new(Mutex::new(Clock::default()));
    let runs = Arc::new(AtomicU32::new(0));
    let driver = Arc::new(
        Driver::new(
            store.clone(),
            Arc::new(Scripted {
                clock: Arc::clone(&clock),
            }),
            ModelRef {
                provider: "bench".into(),
                model: "load".into(),
            },
            Arc::new(Catalog::builtin().unwrap()),
        )
        .with_tool(Arc::new(Deploy { runs: runs.clone() })),
    );
    let opts = Arc::new(StartOptions {
        spec: rein_operation::OperationSpec {
            approval: ApprovalMode::AllowList,
            allow: vec!["calculator".into()],
            max_steps: Some(50),
            ..Default::default()
        },
        ..Default::default()
    });
    let size_before = target.size().await;
    let stats_before = store.writer_stats().unwrap_or_default();
    let rss_before = rss_kib();
    let anon_before = anon_kib();
    let peak = Arc::new(Mutex::new(rss_before));
    let sampling = {
        let peak = Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let now = rss_kib();
                let mut p = peak.lock().unwrap();
                *p = p.max(now);
            }
        })
    };
    let cpu_before = cpu();

    // Phase 1: every operation starts and runs until it parks on the release.
    let started = Instant::now();
    let tasks: Vec<_> = (0..operations)
        .map(|i| {
            let driver = Arc::clone(&driver);
            let opts = Arc::clone(&opts);
            tokio::spawn(async move {
                let id = driver
                    .start(
                        &format!("Operation {i}: compute 6*7, then release 1.2.0."),
                        &opts,
                    )
                    .await
                    .unwrap();
                let end = driver.run(id).await.unwrap();
                assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
                id
            })
        })
        .collect();
    let mut ids: Vec<OperationId> = Vec::with_capacity(operations);
    for t in tasks {
        ids.push(t.await.unwrap());
    }
    let running = started.elapsed();
    let peak_running = *peak.lock().unwrap();
    let rss_parked = rss_kib();
    let anon_parked = anon_kib();

    // Phase 2: each is approved and resumed to its answer.
    let resumed = Instant::now();
    let tasks: Vec<_> = ids
        .iter()
        .map(|id| {
            let driver = Arc::clone(&driver);
            let id = *id;
            tokio::spawn(async move {
                let end = driver
                    .decide(id, None, Decision::Approve, None)
                    .await
                    .unwrap();
                assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let finishing = resumed.elapsed();
    let cpu_used = cpu().saturating_sub(cpu_before);
    sampling.abort();
    let peak_all = *peak.lock().unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst) as usize,
        operations,
        "one release per operation"
    );

    let mut steps = 0u64;
    for id in &ids {
        steps += store.operation(*id).await.unwrap().unwrap().commit_seq;
    }
    let growth = target.size().await - size_before;
    let stats = store.writer_stats().unwrap_or_default();
    let mut gaps = std::mem::take(&mut clock.lock().unwrap().gaps);
    gaps.sort();
    let wall = running + finishing;
    let transactions = stats.transactions - stats_before.transactions;
    let grouped = if transactions > 0 {
        format!(
            ", {:.1} step commits per write transaction",
            (stats.commits - stats_before.commits) as f64 / transactions as f64
        )
    } else {
        String::new()
    };
    println!(
        "load {}, {operations} at once: {steps} committed steps in {:.2} s ({:.2} s to park, {:.2} s to finish), {:.0} committed steps/s; \
         added latency per tool round p50 {:.2} ms, p99 {:.2} ms ({} rounds); RSS {:.0} KiB per in-flight operation, {:.1} KiB per parked one ({:.1} KiB of it anonymous); \
         CPU {:.0} µs per committed step; database +{:.2} KiB per committed step{grouped}",
        target.label(),
        wall.as_secs_f64(),
        running.as_secs_f64(),
        finishing.as_secs_f64(),
        steps as f64 / wall.as_secs_f64(),
        percentile(&gaps, 0.5),
        percentile(&gaps, 0.99),
        gaps.len(),
        (peak_running.max(peak_all) - rss_before) / operations as f64,
        (rss_parked - rss_before).max(0.0) / operations as f64,
        (anon_parked - anon_before).max(0.0) / operations as f64,
        cpu_used.as_secs_f64() * 1e6 / steps as f64,
        growth / 1024.0 / steps as f64,
    );
    drop(driver);
    store.close().await;
}

fn main() {
    let concurrencies: Vec<usize> = {
        let given: Vec<usize> = std::env::args()
            .skip(1)
            .filter_map(|a| a.parse().ok())
            .collect();
        if given.is_empty() {
            vec![100, 1000]
        } else {
            given
        }
    };
    // A server's runtime on this machine: one worker per core.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Words among the arguments choose backends (`normal`, `full`, `postgres`); none: all.
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.parse::<usize>().is_err() && !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| chosen.is_empty() || chosen.iter().any(|c| c == name);
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("rein-load-{}", OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut targets = Vec::new();
        if wanted("normal") {
            targets.push(Target::Sqlite(
                dir.join("load-normal.db"),
                Synchronous::Normal,
            ));
        }
        if wanted("full") {
            targets.push(Target::Sqlite(dir.join("load-full.db"), Synchronous::Full));
        }
        if wanted("postgres")
            && let Ok(url) = std::env::var("REIN_BENCH_DATABASE_URL")
                .or_else(|_| std::env::var("REIN_TEST_DATABASE_URL"))
        {
            targets.push(Target::Postgres(url));
        }
        for n in &concurrencies {
            for target in &targets {
                load(target, *n).await;
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
