//! The soak: a busy server compressed in time. Clients run operations without pause (tool
//! rounds, approvals, sub-agents, step limits, conversations continued), a task fires every
//! second, devices connect and drop, files are ingested into a knowledge base, and the server
//! is restarted every few seconds or minutes, alternately killed (SIGKILL) and stopped
//! (SIGTERM), on the same database. Sampled meanwhile: the server's resident memory and open
//! descriptors, the database's size, each operation's latency.
//!
//! Whatever the length, the invariants are checked on the real system at the end: every
//! operation ended as its scenario says, every event stream was gapless across reconnections,
//! no effect ran twice, step limits held, every parked operation was resumed, each task due
//! time fired once, every accepted ingestion finished, no thread panicked. Runs of 30 minutes
//! or more also judge the resources: memory and descriptors flat after warm-up, latency p99
//! within 2× of the first ten minutes (`docs/reliability.md`).
//!
//! In the suite it runs 40 s (`REIN_SOAK_SECS`); the hour documented in `docs/reliability.md`:
//! `REIN_SOAK_SECS=3600 REIN_SOAK_CLIENTS=16 REIN_SOAK_RESTART_SECS=300 REIN_SOAK_BIN=<release
//! rein built with --features test-hooks> cargo test -p rein-cli --test cli-tests soak -- --nocapture`.
//! To see where the server's time goes, `REIN_SOAK_LOG=sqlx::query=debug` logs every statement
//! the servers run with its time, into `REIN_SOAK_LOG_FILE` (see `soak/server.rs`).

#[path = "soak/churn.rs"]
mod churn;
#[path = "soak/load.rs"]
mod load;
#[path = "soak/model.rs"]
mod model;
#[path = "soak/report.rs"]
mod report;
#[path = "soak/server.rs"]
mod server;

use load::{Outcome, Reach};
use rein_core::OperationId;
use server::{Launch, Server, Stop};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long and how hard the soak runs (environment, with the suite's defaults).
#[derive(Clone, Debug)]
pub struct Plan {
    pub secs: u64,
    pub clients: usize,
    pub restart_every: Duration,
    pub model_delay: Duration,
    pub sample_every: Duration,
    pub ingest_every: Duration,
}

impl Plan {
    fn from_env() -> Self {
        let var = |k: &str, default: u64| {
            std::env::var(k)
                .ok()
                .map(|v| {
                    v.parse()
                        .unwrap_or_else(|_| panic!("{k}={v} is not a whole number"))
                })
                .unwrap_or(default)
        };
        let secs = var("REIN_SOAK_SECS", 40);
        Self {
            secs,
            clients: var("REIN_SOAK_CLIENTS", 3) as usize,
            restart_every: Duration::from_secs(var("REIN_SOAK_RESTART_SECS", 12)),
            model_delay: Duration::from_millis(var("REIN_SOAK_MODEL_MS", 50)),
            sample_every: Duration::from_secs((secs / 120).max(2)),
            ingest_every: Duration::from_secs((secs / 60).clamp(2, 10)),
        }
    }

    /// Long enough for the resource verdicts to mean something.
    pub fn judges_resources(&self) -> bool {
        self.secs >= 1800
    }
}

/// What the sampler read at one moment.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: f64,
    /// The server's lifetime it was read in (restarts before it).
    pub lifetime: u64,
    pub resources: server::Resources,
    pub db: Option<server::DbSize>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_server_keeps_every_invariant_through_restarts() {
    let plan = Plan::from_env();
    let dir = std::env::temp_dir().join(format!("rein-soak-{}", OperationId::new()));
    std::fs::create_dir_all(dir.join("device")).unwrap();
    let db = rein_testkit::E2eDatabase::new(&dir).await;
    let model = model::start(plan.model_delay).await;
    let launch = Launch {
        bin: std::env::var_os("REIN_SOAK_BIN")
            .map_or_else(|| env!("CARGO_BIN_EXE_rein").into(), Into::into),
        db: db.url.clone(),
        home: dir.clone(),
        model: model.base.clone(),
    };
    let token = launch.token(&["--user", "soak"]).await;
    let mut device_tokens = Vec::new();
    for k in 0..churn::DEVICES {
        device_tokens.push(
            launch
                .token(&["--user", "soak", "--device", &format!("dev{k}")])
                .await,
        );
    }
    let server = Server::new(launch);
    server.start().await;
    let start = Instant::now();
    let restarts = Arc::new(AtomicU64::new(0));
    let reach = Reach {
        http: reqwest::Client::new(),
        base: server.base.subscribe(),
        token,
        restarts: Arc::clone(&restarts),
        start,
    };
    reach
        .call(
            reqwest::Method::POST,
            "/v1/knowledge",
            Some(&serde_json::json!({"name": "soak"})),
        )
        .await;
    let task = churn::every_second(&reach).await;
    eprintln!("soak: {plan:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..plan.clients)
        .map(|id| {
            tokio::spawn(load::client(
                reach.clone(),
                id,
                Arc::clone(&stop),
                Arc::clone(&seen),
            ))
        })
        .collect();
    let devices = {
        let (server, reach, stop) = (Arc::clone(&server), reach.clone(), Arc::clone(&stop));
        let workdir = dir.join("device");
        tokio::spawn(async move {
            churn::devices(server.launch(), reach, device_tokens, &workdir, stop).await
        })
    };
    let ingests = tokio::spawn(churn::ingests(
        reach.clone(),
        "soak",
        plan.ingest_every,
        Arc::clone(&stop),
    ));

    // Sample and restart until the time is up.
    let mut samples: Vec<Sample> = Vec::new();
    let mut restarted_at = Vec::new();
    let end = start + Duration::from_secs(plan.secs);
    let mut next_restart = start + plan.restart_every;
    while Instant::now() < end {
        tokio::time::sleep(plan.sample_every.min(end - Instant::now())).await;
        if let Some(resources) = server.sample() {
            samples.push(Sample {
                at: start.elapsed().as_secs_f64(),
                lifetime: restarts.load(Ordering::SeqCst),
                resources,
                db: server::database_size(&db.url),
            });
        }
        if Instant::now() >= next_restart && Instant::now() < end {
            let n = restarts.fetch_add(1, Ordering::SeqCst);
            let how = if n.is_multiple_of(2) {
                Stop::Kill
            } else {
                Stop::Term
            };
            restarted_at.push((start.elapsed().as_secs_f64(), how));
            server.restart(how).await;
            next_restart = Instant::now() + plan.restart_every;
        }
    }

    // Stop the load; each client finishes the operation under way.
    stop.store(true, Ordering::SeqCst);
    let mut failed_clients = Vec::new();
    for c in clients {
        // Its panic (a refused request) was printed as it happened; what it saw before is kept.
        if let Err(e) = c.await {
            failed_clients.push(format!("a client stopped: {e}"));
        }
    }
    let outcomes: Vec<Outcome> = std::mem::take(&mut *seen.lock().unwrap());
    let connections = devices.await.expect("the devices ran to their end");
    let jobs = ingests.await.expect("the ingests ran to their end");
    reach
        .call(
            reqwest::Method::POST,
            &format!("/v1/tasks/{task}/pause"),
            None,
        )
        .await;

    let facts = report::settle(&reach, &task, &jobs, server.launch()).await;
    let mut failures = report::check(&outcomes, &facts, &server.panics());
    failures.extend(failed_clients);
    report::print(
        &plan,
        &outcomes,
        &samples,
        &restarted_at,
        &facts,
        connections,
    );
    let verdicts = if plan.judges_resources() {
        report::judge(&plan, &outcomes, &samples)
    } else {
        Vec::new()
    };
    server.stop(Stop::Term).await;
    server.flush_log();
    if let Some(log) = server::log_file() {
        println!("soak: the servers' log is {}", log.display());
    }
    assert!(
        failures.is_empty() && verdicts.is_empty(),
        "the soak found (its database and ledger are kept in {}):\n- {}\n\nthe server's last lines:\n{}",
        dir.display(),
        failures
            .iter()
            .chain(&verdicts)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n- "),
        server.last_lines()
    );
    assert!(
        model.answered.load(Ordering::Relaxed) > 0,
        "the model was asked"
    );
    // A long run's database takes gigabytes; a failing run's is kept (above).
    let _ = std::fs::remove_dir_all(&dir);
}
