//! Tasks, their deliveries (due fires) and their runs. The task itself is a JSON body the
//! scheduler defines; what the store guarantees is the delivery key: one row per
//! `(task, due time, kind)`, so a due time is never planned twice, and claims that a dead
//! worker's lease releases.

use crate::StoreError;
use crate::sql::{SqlStore, from_micros, micros, parse_ts, ts};
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;

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

/// Where a delivery is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Due (now or later), not claimed.
    Pending,
    /// A dispatcher holds it until its lease ends.
    Claimed,
    /// A run was started for it.
    Dispatched,
    /// Not run; `reason` says why.
    Skipped,
}

impl DeliveryStatus {
    fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Claimed => "claimed",
            DeliveryStatus::Dispatched => "dispatched",
            DeliveryStatus::Skipped => "skipped",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "pending" => DeliveryStatus::Pending,
            "claimed" => DeliveryStatus::Claimed,
            "dispatched" => DeliveryStatus::Dispatched,
            "skipped" => DeliveryStatus::Skipped,
            other => return Err(StoreError::corrupt("delivery status", other)),
        })
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

fn opt_ts(row: &AnyRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    row.try_get::<Option<String>, _>(col)?
        .map(|t| parse_ts(&t, col))
        .transpose()
}

fn task_from(row: &AnyRow) -> Result<TaskRow, StoreError> {
    let body: String = row.try_get("body")?;
    Ok(TaskRow {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        body: serde_json::from_str(&body).map_err(|e| StoreError::corrupt("task", e))?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "task created_at")?,
        updated_at: parse_ts(&row.try_get::<String, _>("updated_at")?, "task updated_at")?,
    })
}

fn delivery_from(row: &AnyRow) -> Result<Delivery, StoreError> {
    Ok(Delivery {
        task_id: row.try_get("task_id")?,
        due_at: from_micros(row.try_get("due_at")?, "delivery due_at")?,
        kind: row
            .try_get::<String, _>("kind")?
            .parse()
            .map_err(|e| StoreError::corrupt("delivery kind", e))?,
        generation: row.try_get("generation")?,
        status: DeliveryStatus::parse(&row.try_get::<String, _>("status")?)?,
        claimed_by: row.try_get("claimed_by")?,
        lease_until: row
            .try_get::<Option<i64>, _>("lease_until")?
            .map(|us| from_micros(us, "delivery lease_until"))
            .transpose()?,
        reason: row.try_get("reason")?,
        operation_id: row.try_get("operation_id")?,
        created_at: parse_ts(
            &row.try_get::<String, _>("created_at")?,
            "delivery created_at",
        )?,
    })
}

fn run_from(row: &AnyRow) -> Result<TaskRun, StoreError> {
    Ok(TaskRun {
        operation_id: row.try_get("operation_id")?,
        task_id: row.try_get("task_id")?,
        trigger: row
            .try_get::<String, _>("trigger_kind")?
            .parse()
            .map_err(|e| StoreError::corrupt("run trigger", e))?,
        due_at: opt_ts(row, "due_at")?,
        started_at: parse_ts(&row.try_get::<String, _>("started_at")?, "run started_at")?,
        finished_at: opt_ts(row, "finished_at")?,
        outcome: row.try_get("outcome")?,
        brief: row.try_get("brief")?,
        cost: rein_core::Usd::from_nanos(
            row.try_get::<Option<i64>, _>("cost_nanos")?
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
        ),
        handoff: row
            .try_get::<Option<String>, _>("handoff")?
            .map(|t| serde_json::from_str(&t).map_err(|e| StoreError::corrupt("run handoff", e)))
            .transpose()?,
    })
}

const RUN_COLUMNS: &str = "operation_id, task_id, trigger_kind, due_at, started_at, finished_at, outcome, brief, cost_nanos, handoff";

const DELIVERY_COLUMNS: &str = "task_id, due_at, kind, generation, status, claimed_by, lease_until, reason, operation_id, created_at";

impl Tasks for SqlStore {
    fn put_task<'a>(&'a self, t: &'a TaskRow) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let body = serde_json::to_string(&t.body).map_err(|e| StoreError::corrupt("task", e))?;
            sqlx::query(
                "INSERT INTO tasks (id, owner, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
            )
            .bind(&t.id)
            .bind(&t.owner)
            .bind(body)
            .bind(ts(t.created_at))
            .bind(ts(t.updated_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn replace_task<'a>(
        &'a self,
        t: &'a TaskRow,
        expected: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let body =
                serde_json::to_string(&t.body).map_err(|e| StoreError::corrupt("task", e))?;
            let n = sqlx::query(
                "UPDATE tasks SET body = $1, updated_at = $2 WHERE id = $3 AND updated_at = $4",
            )
            .bind(body)
            .bind(ts(t.updated_at))
            .bind(&t.id)
            .bind(ts(expected))
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn release_delivery<'a>(
        &'a self,
        d: &'a Delivery,
        worker: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE task_deliveries SET status = 'pending', claimed_by = NULL, lease_until = NULL \
                 WHERE task_id = $1 AND due_at = $2 AND kind = $3 AND status = 'claimed' AND claimed_by = $4",
            )
            .bind(&d.task_id)
            .bind(micros(d.due_at))
            .bind(d.kind.as_str())
            .bind(worker)
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn get_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRow>, StoreError>> {
        async move {
            sqlx::query("SELECT id, owner, body, created_at, updated_at FROM tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
                .as_ref()
                .map(task_from)
                .transpose()
        }
        .boxed()
    }

    fn list_tasks<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<TaskRow>, StoreError>> {
        async move {
            let rows = match owner {
                Some(o) => {
                    sqlx::query("SELECT id, owner, body, created_at, updated_at FROM tasks WHERE owner = $1 ORDER BY created_at, id")
                        .bind(o)
                        .fetch_all(&self.pool)
                        .await?
                }
                None => {
                    sqlx::query("SELECT id, owner, body, created_at, updated_at FROM tasks ORDER BY created_at, id")
                        .fetch_all(&self.pool)
                        .await?
                }
            };
            rows.iter().map(task_from).collect()
        }
        .boxed()
    }

    fn delete_task<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("DELETE FROM tasks WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn add_delivery<'a>(&'a self, d: &'a Delivery) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO task_deliveries ({DELIVERY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 ON CONFLICT (task_id, due_at, kind) DO NOTHING"
            )))
            .bind(&d.task_id)
            .bind(micros(d.due_at))
            .bind(d.kind.as_str())
            .bind(&d.generation)
            .bind(d.status.as_str())
            .bind(d.claimed_by.clone())
            .bind(d.lease_until.map(micros))
            .bind(d.reason.clone())
            .bind(d.operation_id.clone())
            .bind(ts(d.created_at))
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn claim_deliveries<'a>(
        &'a self,
        now: DateTime<Utc>,
        worker: &'a str,
        lease_until: DateTime<Utc>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            // Rows another dispatcher is claiming right now are skipped, not waited for.
            let lock = self.dialect().claim_rows();
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {DELIVERY_COLUMNS} FROM task_deliveries \
                 WHERE (status = 'pending' AND due_at <= $1) OR (status = 'claimed' AND lease_until < $1) \
                 ORDER BY due_at, task_id LIMIT $2{lock}"
            )))
            .bind(micros(now))
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
            let mut claimed = Vec::with_capacity(rows.len());
            for row in &rows {
                let mut d = delivery_from(row)?;
                sqlx::query(
                    "UPDATE task_deliveries SET status = 'claimed', claimed_by = $1, lease_until = $2 \
                     WHERE task_id = $3 AND due_at = $4 AND kind = $5",
                )
                .bind(worker)
                .bind(micros(lease_until))
                .bind(&d.task_id)
                .bind(micros(d.due_at))
                .bind(d.kind.as_str())
                .execute(&mut *tx)
                .await?;
                d.status = DeliveryStatus::Claimed;
                d.claimed_by = Some(worker.to_owned());
                d.lease_until = Some(lease_until);
                claimed.push(d);
            }
            tx.commit().await?;
            Ok(claimed)
        }
        .boxed()
    }

    fn settle_delivery<'a>(
        &'a self,
        d: &'a Delivery,
        worker: &'a str,
        status: DeliveryStatus,
        reason: Option<&'a str>,
        operation_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE task_deliveries SET status = $1, reason = $2, operation_id = $3, lease_until = NULL \
                 WHERE task_id = $4 AND due_at = $5 AND kind = $6 AND status = 'claimed' AND claimed_by = $7",
            )
            .bind(status.as_str())
            .bind(reason)
            .bind(operation_id)
            .bind(&d.task_id)
            .bind(micros(d.due_at))
            .bind(d.kind.as_str())
            .bind(worker)
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn deliveries<'a>(
        &'a self,
        task_id: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {DELIVERY_COLUMNS} FROM task_deliveries WHERE task_id = $1 ORDER BY due_at DESC, kind LIMIT $2"
            )))
            .bind(task_id)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(delivery_from)
            .collect()
        }
        .boxed()
    }

    fn add_run<'a>(&'a self, r: &'a TaskRun) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO task_runs (operation_id, task_id, trigger_kind, due_at, started_at, finished_at, outcome, brief) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&r.operation_id)
            .bind(&r.task_id)
            .bind(r.trigger.as_str())
            .bind(r.due_at.map(ts))
            .bind(ts(r.started_at))
            .bind(r.finished_at.map(ts))
            .bind(r.outcome.clone())
            .bind(r.brief.clone())
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn finish_run<'a>(
        &'a self,
        operation_id: &'a str,
        finished_at: DateTime<Utc>,
        outcome: &'a str,
        brief: Option<&'a str>,
        cost: rein_core::Usd,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "UPDATE task_runs SET finished_at = $1, outcome = $2, brief = $3, cost_nanos = $4 WHERE operation_id = $5",
            )
            .bind(ts(finished_at))
            .bind(outcome)
            .bind(brief)
            .bind(i64::try_from(cost.nanos()).unwrap_or(i64::MAX))
            .bind(operation_id)
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn set_run_handoff<'a>(
        &'a self,
        operation_id: &'a str,
        handoff: &'a Handoff,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let text = serde_json::to_string(handoff)
                .map_err(|e| StoreError::corrupt("run handoff", e))?;
            sqlx::query("UPDATE task_runs SET handoff = $1 WHERE operation_id = $2")
                .bind(text)
                .bind(operation_id)
                .execute(&self.pool)
                .await?;
            Ok(())
        }
        .boxed()
    }

    fn open_runs(&self, limit: u32) -> BoxFuture<'_, Result<Vec<TaskRun>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {RUN_COLUMNS} FROM task_runs WHERE finished_at IS NULL ORDER BY started_at, operation_id LIMIT $1"
            )))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(run_from)
            .collect()
        }
        .boxed()
    }

    fn runs<'a>(
        &'a self,
        task_id: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<TaskRun>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {RUN_COLUMNS} FROM task_runs WHERE task_id = $1 ORDER BY started_at DESC, operation_id DESC LIMIT $2"
            )))
            .bind(task_id)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(run_from)
            .collect()
        }
        .boxed()
    }
}
