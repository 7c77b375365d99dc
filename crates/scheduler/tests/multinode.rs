//! Three dispatchers (each with its own connection pool, as three processes would have) on one
//! PostgreSQL, a task due every second for a minute of simulated time, and a fourth dispatcher
//! that claims work and dies: every due second runs exactly once, the dead one's claims after
//! its lease. Needs `REIN_TEST_DATABASE_URL`; says so and passes without it.

use chrono::{DateTime, Duration, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_scheduler::{
    Automation, Clock, Dispatcher, Launcher, ManualClock, NewTask, RunState, Task, TaskService,
};
use rein_store::{DeliveryStatus, SqlStore, Synchronous, TaskStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Runs that end as soon as they start.
struct Instant(AtomicU64);

impl Launcher for Instant {
    fn cancel<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), rein_scheduler::RunError>> {
        async move { Ok(()) }.boxed()
    }
    fn launch<'a>(
        &'a self,
        _: &'a Task,
        _: rein_store::RunTrigger,
    ) -> BoxFuture<'a, Result<String, rein_scheduler::LaunchError>> {
        async move { Ok(format!("op{}", self.0.fetch_add(1, Ordering::SeqCst))) }.boxed()
    }
    fn state<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<RunState, rein_scheduler::RunError>> {
        async move {
            Ok(RunState::Ended {
                outcome: "completed".into(),
                success: true,
                brief: None,
                cost: rein_core::Usd::ZERO,
                answer: None,
            })
        }
        .boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_dispatchers_on_one_postgres_run_each_due_second_once() {
    let Some(scratch) =
        rein_testkit::postgres_scratch("three_dispatchers_on_one_postgres", "rein_sched").await
    else {
        return;
    };
    let scoped = scratch.url.clone();
    let mut stores = Vec::new();
    for _ in 0..4 {
        let s: Arc<dyn TaskStore> =
            Arc::new(SqlStore::open(&scoped, Synchronous::Normal).await.unwrap());
        stores.push(s);
    }
    let t0: DateTime<Utc> = "2026-05-01T12:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let launcher = Arc::new(Instant(AtomicU64::new(0)));
    let service = TaskService::new(Arc::clone(&stores[0]), clock.clone());
    let task = service
        .create(
            "u",
            NewTask {
                title: "every second".into(),
                instruction: "tick".into(),
                automation: Automation::Schedule {
                    pattern: "* * * * * *".into(),
                    tz: "UTC".into(),
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let dispatchers: Vec<Dispatcher> = ["n1", "n2", "n3"]
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let mut d =
                Dispatcher::new(Arc::clone(&stores[i]), clock.clone(), launcher.clone(), *w);
            d.lease = Duration::seconds(5);
            d
        })
        .collect();
    let mut dead_claims = 0;
    for second in 1..=60 {
        clock.advance(Duration::seconds(1));
        if second == 20 {
            // A fourth node plans (through n1's tick below) and claims, then dies holding them.
            dispatchers[0].tick().await.unwrap();
            clock.advance(Duration::milliseconds(1));
            let now = clock.now();
            stores[3]
                .add_delivery(&rein_store::Delivery {
                    task_id: task.id.clone(),
                    due_at: now,
                    kind: rein_store::RunTrigger::Schedule,
                    generation: task.generation.clone(),
                    status: DeliveryStatus::Pending,
                    claimed_by: None,
                    lease_until: None,
                    reason: None,
                    operation_id: None,
                    created_at: now,
                })
                .await
                .unwrap();
            dead_claims = stores[3]
                .claim_deliveries(now, "dead", now + Duration::seconds(5), 100)
                .await
                .unwrap()
                .len();
        }
        let (a, b, c) = tokio::join!(
            dispatchers[0].tick(),
            dispatchers[1].tick(),
            dispatchers[2].tick()
        );
        a.unwrap();
        b.unwrap();
        c.unwrap();
    }
    assert!(dead_claims >= 1, "the dead node held work");
    // Past every lease: whatever the dead node held is run now.
    clock.advance(Duration::seconds(10));
    for d in &dispatchers {
        d.tick().await.unwrap();
    }
    let runs = stores[0].runs(&task.id, 10_000).await.unwrap();
    let mut dues: Vec<i64> = runs
        .iter()
        .map(|r| r.due_at.unwrap().timestamp_micros())
        .collect();
    dues.sort_unstable();
    let before = dues.len();
    dues.dedup();
    assert_eq!(before, dues.len(), "a due time ran twice");
    // Every second of the minute and of the 10 s after it, plus the dead node's delivery.
    assert_eq!(dues.len(), 70 + 1, "{dues:?}");
    let deliveries = stores[0].deliveries(&task.id, 10_000).await.unwrap();
    assert!(
        deliveries
            .iter()
            .all(|d| d.status == DeliveryStatus::Dispatched),
        "{:?}",
        deliveries
            .iter()
            .filter(|d| d.status != DeliveryStatus::Dispatched)
            .collect::<Vec<_>>()
    );
    // Every delivery was dispatched by a live node (which ones depends on which dispatcher the
    // executor polls first, so no share is asserted), the dead node's included.
    let workers: std::collections::BTreeSet<_> = deliveries
        .iter()
        .filter_map(|d| d.claimed_by.as_deref())
        .collect();
    assert!(
        workers.iter().all(|w| ["n1", "n2", "n3"].contains(w)),
        "only live nodes dispatched, the dead node's claims were taken over: {workers:?}"
    );
    scratch.drop().await;
}
