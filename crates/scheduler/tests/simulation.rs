//! Simulated weeks of scheduling on a real store with a hand-moved clock: random edits,
//! pauses, resumes, mode changes, manual runs, duplicated and stale deliveries, two
//! dispatchers ticking in random order, runs that end, fail or wait for a human. After every
//! run the invariants are checked against what the store recorded.

use chrono::{DateTime, Duration, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rein_scheduler::{
    Automation, Dispatcher, Launcher, ManualClock, NewTask, Overlap, RunState, Task, TaskService,
    TaskStatus,
};
use rein_store::{Delivery, DeliveryStatus, SqlStore, Synchronous, TaskStore, Tasks};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// A run's fate, decided when it starts.
struct FakeRun {
    ends_at: DateTime<Utc>,
    success: bool,
    waits_until: Option<DateTime<Utc>>,
}

struct FakeLauncher {
    clock: Arc<ManualClock>,
    rng: Mutex<StdRng>,
    runs: Mutex<HashMap<String, FakeRun>>,
    /// `(task, trigger, status at launch)` of every launch.
    launches: Mutex<Vec<(String, String, TaskStatus)>>,
    next: Mutex<u64>,
}

impl Launcher for FakeLauncher {
    fn cancel<'a>(
        &'a self,
        operation_id: &'a str,
    ) -> BoxFuture<'a, Result<(), rein_scheduler::RunError>> {
        async move {
            let now = rein_scheduler::Clock::now(&*self.clock);
            if let Some(run) = self.runs.lock().unwrap().get_mut(operation_id) {
                run.ends_at = now;
                run.success = false;
            }
            Ok(())
        }
        .boxed()
    }

    fn launch<'a>(
        &'a self,
        task: &'a Task,
        trigger: rein_store::RunTrigger,
    ) -> BoxFuture<'a, Result<String, rein_scheduler::LaunchError>> {
        async move {
            let now = rein_scheduler::Clock::now(&*self.clock);
            let mut rng = self.rng.lock().unwrap();
            let id = {
                let mut n = self.next.lock().unwrap();
                *n += 1;
                format!("op{n}")
            };
            let run = FakeRun {
                ends_at: now + Duration::minutes(rng.random_range(0..40)),
                success: rng.random_bool(0.8),
                waits_until: rng
                    .random_bool(0.05)
                    .then(|| now + Duration::minutes(rng.random_range(10..120))),
            };
            self.runs.lock().unwrap().insert(id.clone(), run);
            self.launches
                .lock()
                .unwrap()
                .push((task.id.clone(), trigger.to_string(), task.status));
            Ok(id)
        }
        .boxed()
    }

    fn state<'a>(
        &'a self,
        operation_id: &'a str,
    ) -> BoxFuture<'a, Result<RunState, rein_scheduler::RunError>> {
        async move {
            let now = rein_scheduler::Clock::now(&*self.clock);
            let runs = self.runs.lock().unwrap();
            let run = runs
                .get(operation_id)
                .ok_or_else(|| rein_scheduler::RunError::Unknown(operation_id.to_owned()))?;
            if run.waits_until.is_some_and(|w| now < w) {
                return Ok(RunState::WaitingForHuman {
                    pending: vec![rein_scheduler::PendingCall {
                        id: "call_1".into(),
                        what: "shell/run({\"command\":\"deploy\"})".into(),
                    }],
                });
            }
            let end = run.waits_until.map_or(run.ends_at, |w| w.max(run.ends_at));
            Ok(if now < end {
                RunState::Running
            } else {
                RunState::Ended {
                    outcome: if run.success { "completed" } else { "error" }.into(),
                    success: run.success,
                    brief: Some(format!("brief of {operation_id}")),
                    cost: rein_core::Usd::ZERO,
                    answer: Some(format!("answer of {operation_id}")),
                }
            })
        }
        .boxed()
    }
}

fn automation(rng: &mut StdRng) -> Automation {
    match rng.random_range(0..5) {
        0 => Automation::None,
        1 => Automation::Schedule {
            pattern: "*/10 * * * *".into(),
            tz: "Europe/Berlin".into(),
        },
        2 => Automation::Schedule {
            pattern: "30 2 * * *".into(),
            tz: "Europe/Berlin".into(),
        },
        3 => Automation::Schedule {
            pattern: "0 * * * *".into(),
            tz: "America/New_York".into(),
        },
        _ => Automation::Heartbeat {
            every_secs: 60 * rng.random_range(3..30),
            timeout_secs: rng.random_bool(0.5).then_some(600),
        },
    }
}

async fn simulate(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = std::env::temp_dir().join(format!("rein-sched-{seed}-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    // Starts two days before Berlin's spring-forward night.
    let start: DateTime<Utc> = "2026-03-27T00:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let launcher = Arc::new(FakeLauncher {
        clock: Arc::clone(&clock),
        rng: Mutex::new(StdRng::seed_from_u64(seed ^ 0x5eed)),
        runs: Mutex::default(),
        launches: Mutex::default(),
        next: Mutex::new(0),
    });
    let tasks: Arc<dyn TaskStore> = store.clone();
    let service = TaskService::new(Arc::clone(&tasks), clock.clone());
    let dispatchers = [
        Dispatcher::new(Arc::clone(&tasks), clock.clone(), launcher.clone(), "a"),
        Dispatcher::new(Arc::clone(&tasks), clock.clone(), launcher.clone(), "b"),
    ];
    let mut ids = Vec::new();
    for i in 0..3 {
        let t = service
            .create(
                "u",
                NewTask {
                    title: format!("task {i}"),
                    instruction: "Summarize the news.".into(),
                    automation: automation(&mut rng),
                    max_executions: rng.random_bool(0.5).then(|| rng.random_range(1..8)),
                    overlap: [Overlap::Skip, Overlap::QueueOne, Overlap::Allow]
                        [rng.random_range(0..3)],
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        ids.push(t.id);
    }
    let mut stale_injected = Vec::new();
    for _step in 0..250 {
        clock.advance(Duration::minutes(rng.random_range(1..25)));
        let id = ids[rng.random_range(0..ids.len())].clone();
        match rng.random_range(0..20) {
            0 => {
                service.pause(&id).await.unwrap();
            }
            1 | 2 => {
                service.resume(&id).await.unwrap();
            }
            3 => {
                let a = automation(&mut rng);
                let cap = rng.random_bool(0.5).then(|| rng.random_range(1..6));
                service.set_automation(&id, a, cap).await.unwrap();
            }
            4 => {
                let _ = service.run_now(&id, &*launcher).await;
            }
            5 => {
                // A duplicate of a planned fire is refused by the store.
                if let Some(d) = store.deliveries(&id, 1).await.unwrap().first() {
                    let mut dup = d.clone();
                    dup.status = DeliveryStatus::Pending;
                    assert!(
                        !store.add_delivery(&dup).await.unwrap(),
                        "duplicate accepted"
                    );
                }
            }
            6 => {
                // A late heartbeat from an old generation.
                let now = rein_scheduler::Clock::now(&*clock);
                let stale = Delivery {
                    task_id: id.clone(),
                    due_at: now - Duration::seconds(rng.random_range(1..30)),
                    kind: rein_store::RunTrigger::Heartbeat,
                    generation: format!("stale-{}", rng.random::<u32>()),
                    status: DeliveryStatus::Pending,
                    claimed_by: None,
                    lease_until: None,
                    reason: None,
                    operation_id: None,
                    created_at: now,
                };
                if store.add_delivery(&stale).await.unwrap() {
                    stale_injected.push((id.clone(), stale.due_at));
                }
            }
            _ => {}
        }
        let order: Vec<usize> = if rng.random_bool(0.5) {
            vec![0, 1]
        } else {
            vec![1, 0]
        };
        for i in order {
            dispatchers[i].tick().await.unwrap();
        }
    }

    // Invariants.
    let launches = launcher.launches.lock().unwrap().clone();
    for (task, trigger, status) in &launches {
        if trigger != "manual" {
            assert_ne!(
                *status,
                TaskStatus::Paused,
                "seed {seed}: a paused task ran ({task})"
            );
        }
    }
    for id in &ids {
        let runs = store.runs(id, 10_000).await.unwrap();
        let mut seen = HashSet::new();
        for r in runs
            .iter()
            .filter(|r| r.trigger != rein_store::RunTrigger::Manual)
        {
            assert!(
                seen.insert((r.trigger, r.due_at)),
                "seed {seed}: two runs for {id} at {:?} ({})",
                r.due_at,
                r.trigger
            );
        }
        let deliveries = store.deliveries(id, 100_000).await.unwrap();
        for d in &deliveries {
            match d.status {
                DeliveryStatus::Skipped => {
                    assert!(d.reason.is_some(), "seed {seed}: a skip without a reason")
                }
                DeliveryStatus::Dispatched => assert!(
                    runs.iter()
                        .any(|r| Some(&r.operation_id) == d.operation_id.as_ref()),
                    "seed {seed}: a dispatched delivery without its run"
                ),
                _ => {}
            }
        }
        for (task, due) in stale_injected.iter().filter(|(t, _)| t == id) {
            let d = deliveries
                .iter()
                .find(|d| {
                    &d.task_id == task
                        && d.due_at.timestamp_micros() == due.timestamp_micros()
                        && d.kind == rein_store::RunTrigger::Heartbeat
                })
                .unwrap();
            assert_ne!(
                d.status,
                DeliveryStatus::Dispatched,
                "seed {seed}: a stale heartbeat ran"
            );
        }
        let task = service.get(id).await.unwrap();
        if let Some(cap) = task.max_executions {
            assert!(
                task.executions <= cap,
                "seed {seed}: {} runs over a cap of {cap}",
                task.executions
            );
        }
    }
    let mut reasons: HashMap<String, usize> = HashMap::new();
    for id in &ids {
        for d in store.deliveries(id, 100_000).await.unwrap() {
            *reasons
                .entry(d.reason.unwrap_or_else(|| format!("{:?}", d.status)))
                .or_default() += 1;
        }
    }
    // The run exercised the rechecks, not only the happy path.
    let rechecked = reasons
        .keys()
        .filter(|r| r.starts_with("the ") || r.starts_with("a "))
        .count();
    assert!(rechecked >= 2, "seed {seed}: {reasons:?}");
    assert!(
        launches.iter().any(|(_, t, _)| t != "manual"),
        "seed {seed}: the simulation never ran anything on its own"
    );
}

fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weeks_of_random_edits_never_double_run_or_run_paused_or_stale_fires() {
    for seed in 0..6 {
        simulate(seed).await;
    }
}

#[tokio::test]
async fn the_cap_completes_the_schedule_and_failures_pause_the_task() {
    let dir = std::env::temp_dir().join(format!("rein-sched-cap-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let clock = Arc::new(ManualClock::new("2026-06-01T00:00:00Z".parse().unwrap()));
    struct Always(bool);
    impl Launcher for Always {
        fn launch<'a>(
            &'a self,
            _: &'a Task,
            _: rein_store::RunTrigger,
        ) -> BoxFuture<'a, Result<String, rein_scheduler::LaunchError>> {
            async move { Ok(format!("op-{}", uuid_like())) }.boxed()
        }
        fn state<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<'a, Result<RunState, rein_scheduler::RunError>> {
            let success = self.0;
            async move {
                Ok(RunState::Ended {
                    outcome: if success { "completed" } else { "error" }.into(),
                    success,
                    brief: None,
                    cost: rein_core::Usd::ZERO,
                    answer: None,
                })
            }
            .boxed()
        }
        fn cancel<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), rein_scheduler::RunError>> {
            async move { Ok(()) }.boxed()
        }
    }
    let tasks: Arc<dyn TaskStore> = store.clone();
    let ok = Arc::new(Always(true));
    let service = TaskService::new(Arc::clone(&tasks), clock.clone());
    let capped = service
        .create(
            "u",
            NewTask {
                title: "capped".into(),
                instruction: "x".into(),
                automation: Automation::Schedule {
                    pattern: "*/5 * * * *".into(),
                    tz: "UTC".into(),
                },
                max_executions: Some(3),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let d = Dispatcher::new(Arc::clone(&tasks), clock.clone(), ok.clone(), "w");
    for _ in 0..10 {
        clock.advance(Duration::minutes(5));
        d.tick().await.unwrap();
    }
    let t = service.get(&capped.id).await.unwrap();
    assert_eq!((t.executions, t.status), (3, TaskStatus::Completed));
    assert_eq!(store.runs(&capped.id, 100).await.unwrap().len(), 3);
    // A manual run does not count and still works.
    service.run_now(&capped.id, &*ok).await.unwrap();

    let failing = Arc::new(Always(false));
    let service = TaskService::new(Arc::clone(&tasks), clock.clone());
    let flaky = service
        .create(
            "u",
            NewTask {
                title: "flaky".into(),
                instruction: "x".into(),
                automation: Automation::Heartbeat {
                    every_secs: 60,
                    timeout_secs: None,
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let d = Dispatcher::new(Arc::clone(&tasks), clock.clone(), failing, "w");
    for _ in 0..10 {
        clock.advance(Duration::minutes(1));
        d.tick().await.unwrap();
    }
    let t = service.get(&flaky.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::Paused);
    assert_eq!(
        t.status_reason.as_deref(),
        Some("paused after 3 failed runs in a row")
    );
    assert_eq!(
        store.runs(&flaky.id, 100).await.unwrap().len(),
        3,
        "nothing after the pause"
    );
}

#[tokio::test]
async fn a_fire_whose_agent_is_gone_is_skipped_as_agent_missing_and_not_counted() {
    let dir = std::env::temp_dir().join(format!("rein-sched-agent-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let clock = Arc::new(ManualClock::new("2026-06-01T00:00:00Z".parse().unwrap()));
    /// A launcher whose agents are all deleted.
    struct NoAgents(std::sync::atomic::AtomicUsize);
    impl Launcher for NoAgents {
        fn ready<'a>(
            &'a self,
            task: &'a Task,
        ) -> BoxFuture<'a, Result<(), rein_scheduler::LaunchError>> {
            let name = task.agent.clone().unwrap_or_default();
            async move { Err(rein_scheduler::LaunchError::AgentMissing(name)) }.boxed()
        }
        fn launch<'a>(
            &'a self,
            _: &'a Task,
            _: rein_store::RunTrigger,
        ) -> BoxFuture<'a, Result<String, rein_scheduler::LaunchError>> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok("op".to_owned()) }.boxed()
        }
        fn state<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<'a, Result<RunState, rein_scheduler::RunError>> {
            async move { Ok(RunState::Running) }.boxed()
        }
        fn cancel<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), rein_scheduler::RunError>> {
            async move { Ok(()) }.boxed()
        }
    }
    let tasks: Arc<dyn TaskStore> = store.clone();
    let service = TaskService::new(Arc::clone(&tasks), clock.clone());
    let task = service
        .create(
            "u",
            NewTask {
                title: "orphan".into(),
                instruction: "x".into(),
                agent: Some("deleted-agent".into()),
                automation: Automation::Heartbeat {
                    every_secs: 60,
                    timeout_secs: None,
                },
                max_executions: Some(5),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let launcher = Arc::new(NoAgents(Default::default()));
    let d = Dispatcher::new(Arc::clone(&tasks), clock.clone(), launcher.clone(), "w");
    clock.advance(Duration::minutes(1));
    let tick = d.tick().await.unwrap();
    assert_eq!((tick.started, tick.skipped), (0, 1));
    assert_eq!(launcher.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    let t = service.get(&task.id).await.unwrap();
    assert_eq!(t.executions, 0, "a skipped fire is not counted");
    let fires = store.deliveries(&task.id, 10).await.unwrap();
    let skipped = fires
        .iter()
        .find(|f| f.status == rein_store::DeliveryStatus::Skipped)
        .unwrap();
    assert_eq!(
        skipped.reason.as_deref(),
        Some("agent_missing: the task's agent `deleted-agent` no longer exists")
    );
    assert!(
        fires
            .iter()
            .any(|f| f.status == rein_store::DeliveryStatus::Pending && f.due_at > skipped.due_at),
        "the heartbeat keeps beating: {fires:?}"
    );
}
