//! Tasks, their deliveries (due fires) and their runs. The task itself is a JSON body the
//! scheduler defines; what the store guarantees is the delivery key: one row per
//! `(task, due time, kind)`, so a due time is never planned twice, and claims that a dead
//! worker's lease releases.
//! The SQL behind [`Tasks`] is `sql/tasks.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// A stored task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRow {
    /// Id.
    pub id: String,
    /// Owner's user id.
    pub owner: String,
    /// Everything else, as the scheduler defines it.
    pub body: serde_json::Value,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

rein_core::named_enum! {
    /// Where a delivery is.
    pub enum DeliveryStatus as "delivery status" {
        /// Due (now or later), not claimed.
        Pending = "pending",
        /// A dispatcher holds it until its lease ends.
        Claimed = "claimed",
        /// A run was started for it.
        Dispatched = "dispatched",
        /// Not run; `reason` says why.
        Skipped = "skipped",
    }
}

rein_core::named_enum! {
    /// What started a task's run.
    pub enum RunTrigger as "run trigger" {
        /// A person (`rein task run`, `POST /v1/tasks/{id}/run`, a brief's retry).
        Manual = "manual",
        /// A cron schedule's due time.
        Schedule = "schedule",
        /// A heartbeat's interval.
        Heartbeat = "heartbeat",
        /// The tasks it waits for completed.
        Dependency = "dependency",
    }
}

/// One due fire of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Delivery {
    /// Task.
    pub task_id: String,
    /// When it is due.
    pub due_at: DateTime<Utc>,
    /// `schedule` or `heartbeat`: the automation that planned it.
    pub kind: RunTrigger,
    /// The task's generation token when it was planned (a stale one is skipped).
    pub generation: String,
    /// Where it is.
    pub status: DeliveryStatus,
    /// The dispatcher holding it.
    pub claimed_by: Option<String>,
    /// Until when.
    pub lease_until: Option<DateTime<Utc>>,
    /// Why it was skipped.
    pub reason: Option<String>,
    /// The run it started.
    pub operation_id: Option<String>,
    /// Planned at.
    pub created_at: DateTime<Utc>,
}

/// What a run hands to the next run of its task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Handoff {
    /// The run (its operation).
    pub run: String,
    /// One line.
    pub title: String,
    /// What it did and found, in a few sentences.
    pub summary: String,
    /// The points worth carrying over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// What the next run should do first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
    /// How it was written: `extractive` (from the run's answer) or `model`.
    pub written_by: String,
}

/// One run of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskRun {
    /// The operation.
    pub operation_id: String,
    /// The task.
    pub task_id: String,
    /// What started it.
    pub trigger: RunTrigger,
    /// The due time it answered (not for manual runs).
    pub due_at: Option<DateTime<Utc>>,
    /// Started.
    pub started_at: DateTime<Utc>,
    /// Ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// How it ended (`completed`, `error`, ...).
    pub outcome: Option<String>,
    /// A short account of what it produced.
    pub brief: Option<String>,
    /// What it cost.
    #[serde(default)]
    pub cost: rein_core::Usd,
    /// What it handed to the next run, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
}

impl TaskRun {
    /// A run of `task_id` that operation `operation_id` started at `at`, answering `due_at`.
    pub fn started(
        operation_id: String,
        task_id: String,
        trigger: RunTrigger,
        due_at: Option<DateTime<Utc>>,
        at: DateTime<Utc>,
    ) -> Self {
        Self {
            operation_id,
            task_id,
            trigger,
            due_at,
            started_at: at,
            finished_at: None,
            outcome: None,
            brief: None,
            cost: rein_core::Usd::ZERO,
            handoff: None,
        }
    }
}

/// Tasks, deliveries and runs. Every method is one transaction.
pub trait Tasks: Send + Sync {
    /// Insert or replace a task.
    fn put_task<'a>(&'a self, task: &'a TaskRow) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Replace a task only if it was not changed since `expected` (its `updated_at` as read);
    /// `false` when it was (read it again and retry) or is gone.
    fn replace_task<'a>(
        &'a self,
        task: &'a TaskRow,
        expected: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Give a claimed delivery back (pending again, to be reconsidered later).
    fn release_delivery<'a>(
        &'a self,
        d: &'a Delivery,
        worker: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// One task.
    fn get_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRow>, StoreError>>;
    /// Tasks, oldest first: one owner's, or everyone's (`None`, for the dispatcher).
    fn list_tasks<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<TaskRow>, StoreError>>;
    /// Delete a task (its deliveries and runs stay as history); whether it existed.
    fn delete_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Plan a delivery; `false` when one with the same task, due time and kind exists.
    fn add_delivery<'a>(&'a self, d: &'a Delivery) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Claim up to `limit` deliveries due by `now` (pending ones, and claimed ones whose lease
    /// ended) for `worker` until `lease_until`; each is handed to one claimant only.
    fn claim_deliveries<'a>(
        &'a self,
        now: DateTime<Utc>,
        worker: &'a str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, StoreError>>;
    /// Settle a delivery `worker` holds; `false` when it no longer holds it.
    fn settle_delivery<'a>(
        &'a self,
        d: &'a Delivery,
        worker: &'a str,
        status: DeliveryStatus,
        reason: Option<&'a str>,
        operation_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// A task's deliveries, newest due first.
    fn deliveries<'a>(
        &'a self,
        task_id: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, StoreError>>;
    /// Record a run's start.
    fn add_run<'a>(&'a self, run: &'a TaskRun) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Record a run's end.
    fn finish_run<'a>(
        &'a self,
        operation_id: &'a str,
        finished_at: DateTime<Utc>,
        outcome: &'a str,
        brief: Option<&'a str>,
        cost: rein_core::Usd,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Keep what run `operation_id` hands to the next.
    fn set_run_handoff<'a>(
        &'a self,
        operation_id: &'a str,
        handoff: &'a Handoff,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Runs not finished yet, of every task, oldest first (the dispatcher watches them).
    fn open_runs(&self, limit: u32) -> BoxFuture<'_, Result<Vec<TaskRun>, StoreError>>;
    /// A task's runs, newest first.
    fn runs<'a>(
        &'a self,
        task_id: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<TaskRun>, StoreError>>;
}
