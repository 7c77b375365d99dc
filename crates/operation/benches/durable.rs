//! Durable loop figures (prints, not a timed test), all measured in one run so their ratios
//! hold on a noisy machine:
//! - the reference loop (user input, N rounds of one calculator call, final answer) run
//!   through the driver with every step committed: µs per tool round and per committed step,
//!   10 and 50 rounds, SQLite with `synchronous=NORMAL` and `FULL`, and PostgreSQL when
//!   `REIN_BENCH_DATABASE_URL` (or `REIN_TEST_DATABASE_URL`) names a server;
//! - the floors: a one-row insert + commit loop through sqlx with the same settings, and on
//!   SQLite the same loop on a connection in this thread (rusqlite: the disk's and SQLite's
//!   own cost), and each loop's ratio to them; the store's commit of one step alone;
//! - 10,000 operations parked on an approval: process RSS, database size, time to list one
//!   page and all of them, time to approve and resume one;
//!
//! Compaction under load is `rein-server`'s `retention` bench (it serves the API meanwhile).
//!
//! `cargo bench -p rein-operation --bench durable`; `bench/durable/run.sh` adds LangGraph's
//! same loop next to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rein_core::OperationId;
use rein_core::intervention::ApprovalMode;
use rein_core::state::{ModelRef, Status};
use rein_model::Catalog;
use rein_operation::{Decision, Driver, Durability, RunEnd, StartOptions};
use rein_store::{SqlStore, Store, Synchronous};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

fn db_size(path: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", path.display())).ok())
        .map(|m| m.len())
        .sum()
}

/// The allocator the `rein` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Resident memory of this process from `/proc/self/status`, MiB: in all, anonymous (heap),
/// and file-backed (SQLite's memory-mapped pages, which the kernel can drop); zeros where there
/// is no such file.
fn rss_mib() -> (f64, f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"))
}

/// Where a loop runs: a SQLite file with a durability setting, or a PostgreSQL database.
#[derive(Clone)]
enum Target {
    Sqlite(std::path::PathBuf, Synchronous),
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
                SqlStore::open(path.to_str().unwrap(), *sync).await.unwrap()
            }
            Target::Postgres(url) => SqlStore::open(url, Synchronous::Normal).await.unwrap(),
        }
    }
}

async fn driver(store: Arc<SqlStore>, rounds: usize, durability: Durability) -> Driver {
    let model = ModelRef {
        provider: "bench".into(),
        model: "loop".into(),
    };
    Driver::new(
        store,
        Arc::new(rein_model::testing::ToolLoop { rounds }),
        model,
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_durability(durability)
}

/// µs per tool round and per committed step of the reference loop, with commits `durability`
/// (lines of the default, pipelined, carry no prefix).
async fn reference_loop(
    target: &Target,
    rounds: usize,
    operations: usize,
    durability: Durability,
) -> (f64, f64) {
    let store = Arc::new(target.open().await);
    let d = driver(Arc::clone(&store), rounds, durability).await;
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            max_steps: Some(200),
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
        commits += store.operation(id).await.unwrap().unwrap().commit_seq;
    }
    let us = start.elapsed().as_secs_f64() * 1e6;
    let per_step = us / commits as f64;
    let per_round = us / (operations * rounds) as f64;
    let mut prefix = if rounds == 10 {
        String::new()
    } else {
        format!("{rounds} rounds, ")
    };
    if durability == Durability::Sync {
        prefix = format!("sync commits, {prefix}");
    }
    println!(
        "{prefix}{}: {operations} operations, {:.0} µs per operation, {:.1} µs per tool round, {:.1} µs per committed step",
        target.label(),
        us / operations as f64,
        per_round,
        per_step
    );
    store.close().await;
    (per_round, per_step)
}

/// The floor: one-row insert + commit transactions through sqlx, on the same kind of pool
/// and settings the store uses; µs per commit.
async fn floor(target: &Target, commits: usize) -> f64 {
    sqlx::any::install_default_drivers();
    let (url, sync) = match target {
        Target::Sqlite(path, sync) => {
            let path = path.with_extension("floor.db");
            (
                format!("sqlite://{}?mode=rwc", path.display()),
                Some(if *sync == Synchronous::Full {
                    "FULL"
                } else {
                    "NORMAL"
                }),
            )
        }
        Target::Postgres(url) => (url.clone(), None),
    };
    let sqlite = sync.is_some();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(4)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if let Some(sync) = sync {
                    for pragma in [
                        "PRAGMA journal_mode=WAL".to_owned(),
                        "PRAGMA busy_timeout=10000".to_owned(),
                        format!("PRAGMA synchronous={sync}"),
                    ] {
                        sqlx::query(sqlx::AssertSqlSafe(pragma))
                            .execute(&mut *conn)
                            .await?;
                    }
                }
                Ok(())
            })
        })
        .connect(&url)
        .await
        .unwrap();
    sqlx::query("DROP TABLE IF EXISTS rein_bench_floor")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("CREATE TABLE rein_bench_floor (id BIGINT PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    let body = "x".repeat(200);
    let start = Instant::now();
    for i in 0..commits {
        let mut tx = if sqlite {
            pool.begin_with("BEGIN IMMEDIATE").await.unwrap()
        } else {
            pool.begin().await.unwrap()
        };
        sqlx::query("INSERT INTO rein_bench_floor (id, body) VALUES ($1, $2)")
            .bind(i64::try_from(i).unwrap())
            .bind(&body)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / commits as f64;
    println!(
        "floor, {}: {commits} one-row insert + commit transactions, {us:.1} µs per commit",
        target.label()
    );
    sqlx::query("DROP TABLE rein_bench_floor")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    us
}

/// The raw floor: one-row insert + commit transactions on a SQLite connection in this thread
/// (rusqlite, the same bundled SQLite), with the store's settings; µs per commit.
fn raw_sqlite_floor(path: &Path, sync: Synchronous, commits: usize) -> f64 {
    let conn = rusqlite::Connection::open(path.with_extension("raw.db")).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(
        None,
        "synchronous",
        if sync == Synchronous::Full {
            "FULL"
        } else {
            "NORMAL"
        },
    )
    .unwrap();
    conn.execute_batch(
        "DROP TABLE IF EXISTS floor; CREATE TABLE floor (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    )
    .unwrap();
    let body = "x".repeat(200);
    let start = Instant::now();
    for i in 0..commits {
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.prepare_cached("INSERT INTO floor (id, body) VALUES (?1, ?2)")
            .unwrap()
            .execute(rusqlite::params![i64::try_from(i).unwrap(), body])
            .unwrap();
        conn.execute_batch("COMMIT").unwrap();
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / commits as f64;
    println!(
        "raw floor, synchronous={sync:?}: {commits} one-row insert + commit transactions on SQLite in-thread, {us:.1} µs per commit"
    );
    us
}

/// The store's share of a committed step: `commit_step` alone for a typical tool-round step
/// (one new message, six events, one tool execution), in operations of 20 steps like the
/// reference loop's; µs per commit.
async fn store_commit(target: &Target, commits: usize) -> f64 {
    use rein_core::event::EventKind;
    use rein_store::{StateChanges, StepCommit};
    const STEPS: usize = 20;
    let store = target.open().await;
    let mut elapsed = std::time::Duration::ZERO;
    for _ in 0..commits.div_ceil(STEPS) {
        let mut state = rein_core::AgentState::new(OperationId::new())
            .with_message(rein_core::Message::user("Compute 6*7 ten times."));
        let id = state.operation_id;
        let topic = format!("topic_{id}");
        store
            .create_operation(&rein_store::NewOperation {
                prompt: None,
                state: state.clone(),
                topic_id: topic.clone(),
                agent: None,
                trigger: rein_store::Trigger::Cli,
                parent_operation: None,
                next_context: None,
                owner: None,
                spec: Default::default(),
                admission: None,
                thread: None,
                gate: None,
                response: None,
            })
            .await
            .unwrap();
        let start = Instant::now();
        for step in 1..=STEPS {
            let before = state.clone();
            state.step_count += 1;
            state.push_message(rein_core::Message::assistant(format!("step {step}")));
            let events = (0..6)
                .map(|i| rein_core::AgentEvent {
                    operation_id: id,
                    step: state.step_count,
                    seq: state.next_event_seq + i,
                    kind: EventKind::StepStart {
                        phase: "tool_result".into(),
                    },
                })
                .collect();
            state.next_event_seq += 6;
            let commit = StepCommit {
                thread_id: None,
                children: Vec::new(),
                operation_id: id,
                step_index: step as u64,
                topic_id: topic.clone(),
                changes: StateChanges::between(&before, &state),
                state: state.clone(),
                next_context: None,
                instructions: vec![rein_core::instruction::InstructionKind::CallToolsBatch.into()],
                events,
                tool_executions: vec![rein_store::ToolExecution {
                    operation_id: id,
                    tool_call_id: format!("call_{step}"),
                    step_index: step as u64,
                    tool: "calculator/evaluate".into(),
                    effect: rein_store::Effect::Pure,
                    status: rein_store::ExecStatus::Succeeded,
                    result: Some("42".into()),
                    job: None,
                }],
                interventions: Vec::new(),
            };
            store.commit_step(&commit).await.unwrap();
        }
        elapsed += start.elapsed();
    }
    let n = commits.div_ceil(STEPS) * STEPS;
    let us = elapsed.as_secs_f64() * 1e6 / n as f64;
    println!(
        "store commit alone, {}: {n} commits of tool-round steps, {us:.1} µs per commit",
        target.label()
    );
    store.close().await;
    us
}

/// A store at `dir/name` holding `count` operations of `rounds` calculator rounds each, run
/// under `approval` until they stop (each must end as `ends` says); the store, the ids and how
/// long making them took.
async fn filled(
    path: &Path,
    count: usize,
    rounds: usize,
    approval: ApprovalMode,
    ends: fn(&RunEnd) -> bool,
) -> (Arc<SqlStore>, Driver, Vec<OperationId>, std::time::Duration) {
    let store = Arc::new(
        SqlStore::open(path.to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let d = driver(Arc::clone(&store), rounds, Durability::default()).await;
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            approval,
            max_steps: Some(100),
            ..Default::default()
        },
        ..Default::default()
    };
    let start = Instant::now();
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        let id = d.start("Compute 6*7 a few times.", &opts).await.unwrap();
        let end = d.run(id).await.unwrap();
        assert!(ends(&end), "{end:?}");
        ids.push(id);
    }
    (store, d, ids, start.elapsed())
}

async fn parked(dir: &Path, count: usize) {
    let path = dir.join("parked.db");
    // Allow-list mode with an empty list: every calculator call waits for approval.
    let (store, d, ids, created) = filled(&path, count, 10, ApprovalMode::AllowList, |e| {
        matches!(e, RunEnd::WaitingForHuman { .. })
    })
    .await;
    let filter = |limit: usize| rein_store::OperationFilter {
        status: Some(Status::WaitingForHuman),
        limit: u32::try_from(limit).unwrap(),
        ..Default::default()
    };
    let t = Instant::now();
    let page = store.list_operations(&filter(50)).await.unwrap();
    let page_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(page.len(), 50);
    let t = Instant::now();
    let listed = store.list_operations(&filter(count)).await.unwrap();
    let list_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(listed.len(), count);
    drop(listed);
    // Approve 21 operations spread over the set, each parking again on its next call; the
    // median is reported.
    let mut times = Vec::new();
    let mut end = None;
    for id in ids.iter().step_by(count / 21 + 1).take(21) {
        let t = Instant::now();
        end = Some(d.decide(*id, None, Decision::Approve, None).await.unwrap());
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let resume_ms = times[times.len() / 2];
    let end = end.unwrap();
    println!(
        "{count} parked operations: created in {:.1} s, database {:.1} MiB, list all parked {list_ms:.1} ms, approve + resume one {resume_ms:.2} ms (median of {}; each ends {})",
        created.as_secs_f64(),
        db_size(&path) as f64 / (1024.0 * 1024.0),
        times.len(),
        match end {
            RunEnd::WaitingForHuman { .. } => "parked again on its next call",
            _ => "finished",
        }
    );
    let (rss, anon, file) = rss_mib();
    println!(
        "{count} parked operations: process RSS {rss:.1} MiB ({anon:.1} MiB anonymous, {file:.1} MiB file-backed), list a page of 50 {page_ms:.2} ms"
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::env::temp_dir().join(format!("rein-bench-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut targets = vec![
        Target::Sqlite(dir.join("loop-normal.db"), Synchronous::Normal),
        Target::Sqlite(dir.join("loop-full.db"), Synchronous::Full),
    ];
    if let Ok(url) = std::env::var("REIN_BENCH_DATABASE_URL")
        .or_else(|_| std::env::var("REIN_TEST_DATABASE_URL"))
    {
        targets.push(Target::Postgres(url));
    }
    for target in &targets {
        let ten = reference_loop(target, 10, 200, Durability::Pipelined).await;
        let fifty = reference_loop(target, 50, 40, Durability::Pipelined).await;
        let ten_sync = reference_loop(target, 10, 200, Durability::Sync).await;
        reference_loop(target, 50, 40, Durability::Sync).await;
        let floor = floor(target, 2000).await;
        let raw = match target {
            Target::Sqlite(path, sync) => Some(raw_sqlite_floor(path, *sync, 5000)),
            Target::Postgres(_) => None,
        };
        store_commit(target, 2000).await;
        println!(
            "ratios, {}: committed step / floor {:.1}×{}, tool round at 50 rounds / at 10 rounds {:.2}×, sync / pipelined per tool round {:.2}×",
            target.label(),
            ten.1 / floor,
            raw.map(|r| format!(", committed step / raw floor {:.1}×", ten.1 / r))
                .unwrap_or_default(),
            fifty.0 / ten.0,
            ten_sync.0 / ten.0
        );
    }
    parked(&dir, 10_000).await;
    let _ = std::fs::remove_dir_all(&dir);
}
