//! What task runs report back and what waits on it, through the dispatcher on a real store and
//! a manual clock: a failed heartbeat run gives an urgent error brief and `retry` runs the task
//! again; an unresolved urgent decision holds a schedule's fires (`human_waiting`) until it is
//! resolved; `feedback` reaches the next run's prompt, and only that run's, with the handoffs
//! of the runs before; a task that depends on another runs only once that one completed, and a
//! cycle is refused.

use chrono::{DateTime, Duration, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_scheduler::{
    Automation, Dispatcher, Launcher, ManualClock, NewTask, RunState, Task, TaskError, TaskService,
};
use rein_store::{
    Brief, BriefKind, BriefPriority, Briefs, DeliveryStatus, SqlStore, Synchronous, TaskStore,
    Tasks,
};
use std::sync::{Arc, Mutex};

/// Runs that end at once, succeeding or not; every launch's prompt and trigger kept.
struct Instant {
    success: Mutex<bool>,
    launches: Mutex<Vec<(String, String)>>,
}

impl Instant {
    fn new(success: bool) -> Arc<Self> {
        Arc::new(Self {
            success: Mutex::new(success),
            launches: Mutex::default(),
        })
    }
    fn launches(&self) -> Vec<(String, String)> {
        self.launches.lock().unwrap().clone()
    }
}

impl Launcher for Instant {
    fn launch<'a>(
        &'a self,
        task: &'a Task,
        trigger: rein_store::RunTrigger,
    ) -> BoxFuture<'a, Result<String, rein_scheduler::LaunchError>> {
        async move {
            let mut l = self.launches.lock().unwrap();
            l.push((task.prompt(), trigger.to_string()));
            Ok(format!("op{}", l.len()))
        }
        .boxed()
    }
    fn state<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<RunState, rein_scheduler::RunError>> {
        async move {
            let success = *self.success.lock().unwrap();
            Ok(RunState::Ended {
                outcome: if success { "completed" } else { "error" }.into(),
                success,
                brief: Some(
                    if success {
                        "3 new items."
                    } else {
                        "The feed timed out."
                    }
                    .into(),
                ),
                cost: rein_core::Usd::ZERO,
                answer: success.then(|| {
                    "3 new items.\n- item 7 is new\n- item 9 changed\nNext run: start with item 9.".into()
                }),
            })
        }
        .boxed()
    }
    fn cancel<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), rein_scheduler::RunError>> {
        async move { Ok(()) }.boxed()
    }
}

struct Env {
    store: Arc<SqlStore>,
    clock: Arc<ManualClock>,
    service: TaskService,
}

async fn env(start: &str) -> Env {
    let dir = std::env::temp_dir().join(format!("rein-briefs-{}", rein_core::OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let start: DateTime<Utc> = start.parse().unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let tasks: Arc<dyn TaskStore> = store.clone();
    Env {
        service: TaskService::new(tasks, clock.clone()),
        store,
        clock,
    }
}

impl Env {
    fn dispatcher(&self, launcher: Arc<Instant>) -> Dispatcher {
        Dispatcher::new(self.store.clone(), self.clock.clone(), launcher, "w")
    }
    /// An urgent decision brief of alice's on `task` offering one action.
    fn urgent_decision(&self, task: &str, id: &str, title: &str, action: (&str, &str)) -> Brief {
        Brief {
            id: id.into(),
            owner: "alice".into(),
            task_id: Some(task.to_owned()),
            operation_id: None,
            agent: None,
            kind: BriefKind::Decision,
            priority: BriefPriority::Urgent,
            title: title.into(),
            summary: "Only you can decide.".into(),
            artifacts: Vec::new(),
            actions: vec![rein_store::BriefAction {
                key: action.0.into(),
                label: action.1.into(),
            }],
            read_at: None,
            resolution: None,
            created_at: rein_scheduler::Clock::now(&*self.clock),
        }
    }
    async fn task(&self, automation: Automation) -> Task {
        self.service
            .create(
                "alice",
                NewTask {
                    title: "Feed watch".into(),
                    instruction: "Summarize the feed.".into(),
                    automation,
                    ..Default::default()
                },
            )
            .await
            .unwrap()
    }
    async fn briefs(&self, task: &str) -> Vec<Brief> {
        self.service
            .briefs("alice", Some(task), false, 100)
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_failed_heartbeat_run_gives_an_urgent_error_brief_and_retry_runs_it_again() {
    let e = env("2026-06-01T00:00:00Z").await;
    let task = e
        .task(Automation::Heartbeat {
            every_secs: 3600,
            timeout_secs: None,
        })
        .await;
    let launcher = Instant::new(false);
    let d = e.dispatcher(launcher.clone());
    e.clock.advance(Duration::hours(1));
    d.tick().await.unwrap(); // the first beat runs
    d.tick().await.unwrap(); // its end is reaped
    let briefs = e.briefs(&task.id).await;
    assert_eq!(briefs.len(), 1, "{briefs:?}");
    let b = &briefs[0];
    assert_eq!(
        (b.kind, b.priority),
        (BriefKind::Error, BriefPriority::Urgent)
    );
    assert_eq!(b.title, "Feed watch failed (error)");
    assert_eq!(b.summary, "The feed timed out.");
    assert_eq!(b.operation_id.as_deref(), Some("op1"));
    // Reaping again writes nothing twice.
    d.tick().await.unwrap();
    assert_eq!(e.briefs(&task.id).await.len(), 1);

    // Only offered actions; someone else's brief is not found.
    let err = e
        .service
        .resolve_brief("alice", &b.id, "approve", None, &*launcher)
        .await
        .unwrap_err();
    assert!(matches!(err, TaskError::BadResolution(_)), "{err:?}");
    let err = e
        .service
        .resolve_brief("mallory", &b.id, "retry", None, &*launcher)
        .await
        .unwrap_err();
    assert!(matches!(err, TaskError::BriefNotFound(_)), "{err:?}");

    let (resolved, started) = e
        .service
        .resolve_brief("alice", &b.id, "retry", Some("try again"), &*launcher)
        .await
        .unwrap();
    assert_eq!(started.as_deref(), Some("op2"), "retry ran the task");
    assert_eq!(launcher.launches()[1].1, "manual");
    let r = resolved.resolution.unwrap();
    assert_eq!(
        (r.action.as_str(), r.comment.as_deref()),
        ("retry", Some("try again"))
    );
    assert!(resolved.read_at.is_some(), "resolving reads it");
    let again = e
        .service
        .resolve_brief("alice", &b.id, "retry", None, &*launcher)
        .await
        .unwrap_err();
    assert!(matches!(again, TaskError::BriefResolved(_)), "{again:?}");
    assert_eq!(launcher.launches().len(), 2, "resolved once, run once");
}

#[tokio::test]
async fn an_unresolved_urgent_decision_holds_a_schedule_until_it_is_resolved() {
    let e = env("2026-06-01T08:59:00Z").await;
    let task = e
        .task(Automation::Schedule {
            pattern: "0 * * * *".into(),
            tz: "UTC".into(),
        })
        .await;
    let decision = e.urgent_decision(
        &task.id,
        "decide-1",
        "Which feed?",
        ("acknowledge", "Acknowledge"),
    );
    e.store.add_brief(&decision, None).await.unwrap();
    let launcher = Instant::new(true);
    let d = e.dispatcher(launcher.clone());
    e.clock.advance(Duration::minutes(1)); // 09:00 is due
    d.tick().await.unwrap();
    assert!(launcher.launches().is_empty(), "held");
    let fires = e.store.deliveries(&task.id, 10).await.unwrap();
    let skipped = fires
        .iter()
        .find(|f| f.status == DeliveryStatus::Skipped)
        .expect("the fire is skipped");
    let reason = skipped.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("human_waiting: brief decide-1 (Which feed?)"),
        "{reason}"
    );

    e.service
        .resolve_brief("alice", "decide-1", "acknowledge", None, &*launcher)
        .await
        .unwrap();
    e.clock.advance(Duration::hours(1)); // 10:00
    d.tick().await.unwrap();
    assert_eq!(launcher.launches().len(), 1, "runs again once resolved");
}

/// A heartbeat held by an urgent decision keeps beating (each beat skipped, the next one
/// planned an interval later) and runs at the first beat after the decision is made.
#[tokio::test]
async fn a_held_heartbeat_keeps_beating_and_runs_once_the_decision_is_made() {
    let e = env("2026-06-01T08:59:00Z").await;
    let task = e
        .task(Automation::Heartbeat {
            every_secs: 60,
            timeout_secs: None,
        })
        .await;
    let decision = e.urgent_decision(
        &task.id,
        "decide-2",
        "Restart job 7?",
        ("yes", "Restart it"),
    );
    e.store.add_brief(&decision, None).await.unwrap();
    let launcher = Instant::new(true);
    let d = e.dispatcher(launcher.clone());
    for _ in 0..3 {
        d.tick().await.unwrap();
        e.clock.advance(Duration::seconds(60));
    }
    assert!(launcher.launches().is_empty(), "held");
    let fires = e.store.deliveries(&task.id, 10).await.unwrap();
    let held = fires
        .iter()
        .filter(|f| {
            f.status == DeliveryStatus::Skipped
                && f.reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("human_waiting"))
        })
        .count();
    // The first beat is due one interval after the task was made (09:00), then 09:01.
    assert_eq!(held, 2, "every beat skipped, the chain kept: {fires:?}");
    e.service
        .resolve_brief("alice", "decide-2", "yes", None, &*launcher)
        .await
        .unwrap();
    d.tick().await.unwrap();
    let launches = launcher.launches();
    assert_eq!(launches.len(), 1, "the next beat runs");
    assert!(
        launches[0]
            .0
            .contains("the person chose `yes` (Restart it)"),
        "the choice reaches the run: {}",
        launches[0].0
    );
}

#[tokio::test]
async fn feedback_reaches_the_next_runs_prompt_and_only_that_run() {
    let e = env("2026-06-01T08:59:00Z").await;
    let task = e
        .task(Automation::Schedule {
            pattern: "0 * * * *".into(),
            tz: "UTC".into(),
        })
        .await;
    let launcher = Instant::new(true);
    let d = e.dispatcher(launcher.clone());
    e.clock.advance(Duration::minutes(1));
    d.tick().await.unwrap();
    d.tick().await.unwrap();
    let result = e.briefs(&task.id).await.remove(0);
    assert_eq!(
        (result.kind, result.priority),
        (BriefKind::Result, BriefPriority::Normal)
    );
    assert_eq!(result.summary, "3 new items.");
    let err = e
        .service
        .resolve_brief("alice", &result.id, "feedback", Some(" "), &*launcher)
        .await
        .unwrap_err();
    assert!(matches!(err, TaskError::BadResolution(_)), "{err:?}");
    e.service
        .resolve_brief(
            "alice",
            &result.id,
            "feedback",
            Some("Only the top 3, please."),
            &*launcher,
        )
        .await
        .unwrap();
    for _ in 0..2 {
        e.clock.advance(Duration::hours(1));
        d.tick().await.unwrap();
        d.tick().await.unwrap();
    }
    let prompts: Vec<String> = launcher.launches().into_iter().map(|(p, _)| p).collect();
    assert_eq!(prompts.len(), 3);
    assert_eq!(prompts[0], "Summarize the feed.");
    // The second run gets the first run's handoff and the feedback; the third the handoffs
    // of both, and no feedback (the second run took it).
    let handoff = |op: &str| {
        format!(
            "\n- Feed watch: run {op}: 3 new items. Next run: start with item 9.\n  - item 7 is new\n  - item 9 changed\n  Next: Next run: start with item 9."
        )
    };
    let handoffs = "\n\nHandoffs from the previous runs (oldest first; build on them):";
    let feedback = "\n\nFeedback from the person on earlier runs (take it into account):\n- Only the top 3, please.";
    assert_eq!(
        prompts[1],
        format!("Summarize the feed.{handoffs}{}{feedback}", handoff("op1"))
    );
    assert_eq!(
        prompts[2],
        format!(
            "Summarize the feed.{handoffs}{}{}",
            handoff("op1"),
            handoff("op2")
        ),
        "the feedback was taken by the run that got it"
    );
    let runs = e.store.runs(&task.id, 10).await.unwrap();
    let first = runs.iter().find(|r| r.operation_id == "op1").unwrap();
    let h = first
        .handoff
        .as_ref()
        .expect("the handoff is kept on the run");
    assert_eq!(h.findings, ["item 7 is new", "item 9 changed"]);
    assert_eq!(h.written_by, "extractive");
    let t = e.service.get(&task.id).await.unwrap();
    assert_eq!(t.feedback[0].taken_by.as_deref(), Some("op2"));
}

#[tokio::test]
async fn a_dependent_task_runs_only_after_its_dependency_completes_and_cycles_are_refused() {
    let e = env("2026-06-01T00:00:00Z").await;
    let a = e
        .service
        .create(
            "alice",
            NewTask {
                title: "Feed watch".into(),
                instruction: "Summarize the feed.".into(),
                automation: Automation::Heartbeat {
                    every_secs: 60,
                    timeout_secs: None,
                },
                max_executions: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let b = e
        .service
        .create(
            "alice",
            NewTask {
                title: "Report".into(),
                instruction: "Write the report.".into(),
                depends_on: vec![a.id.clone()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let launcher = Instant::new(true);
    let d = e.dispatcher(launcher.clone());
    // B cannot be run by hand while A has not completed.
    let err = e.service.run_now(&b.id, &*launcher).await.unwrap_err();
    assert!(
        err.to_string().starts_with(&format!(
            "blocked: waits for task {} (Feed watch), which is active",
            a.id
        )),
        "{err}"
    );
    // A's one run starts (reaching its cap completes A), but B waits for that run to end.
    e.clock.advance(Duration::minutes(1));
    d.tick().await.unwrap();
    let triggers = |l: &Instant| l.launches().into_iter().map(|(_, t)| t).collect::<Vec<_>>();
    assert_eq!(triggers(&launcher), ["heartbeat"]);
    // Its end is reaped, then B starts once.
    d.tick().await.unwrap();
    assert_eq!(triggers(&launcher), ["heartbeat", "dependency"]);
    for _ in 0..3 {
        e.clock.advance(Duration::minutes(1));
        d.tick().await.unwrap();
    }
    assert_eq!(
        triggers(&launcher),
        ["heartbeat", "dependency"],
        "started once, not on every tick"
    );

    // A cycle is refused, naming it; nothing changes.
    let err = e
        .service
        .edit(&a.id, |t| t.depends_on = vec![b.id.clone()])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "depends_on would make a cycle: {} (Feed watch) → {} (Report) → {} (Feed watch)",
            a.id, b.id, a.id
        )
    );
    assert!(e.service.get(&a.id).await.unwrap().depends_on.is_empty());
}
