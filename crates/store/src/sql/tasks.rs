//! [`Tasks`] in SQL on both backends: rows mapped to `crate::tasks`'s records, and each
//! method one transaction.

use super::{SqlStore, from_micros, micros, parse_ts, ts};
use crate::StoreError;
use crate::tasks::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;
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
        status: row
            .try_get::<String, _>("status")?
            .parse::<DeliveryStatus>()
            .map_err(|e| StoreError::corrupt("delivery status", e))?,
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
