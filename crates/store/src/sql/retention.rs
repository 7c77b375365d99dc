//! [`Retention`] in SQL on both backends: one transaction per batch (the selection, the counts
//! and the deletes see the same rows), and SQLite's `VACUUM INTO` for backups.

use super::{SqlStore, ts};
use crate::StoreError;
use crate::dialect::Dialect;
use crate::retention::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::path::Path;

/// The tables an operation's compactable rows live in, keyed by `operation_id`.
const TABLES: [&str; 3] = ["operation_steps", "operation_events", "tool_executions"];

impl Retention for SqlStore {
    fn compact_finished<'a>(
        &'a self,
        before: DateTime<Utc>,
        limit: u64,
        apply: bool,
    ) -> BoxFuture<'a, Result<Compacted, StoreError>> {
        async move {
            // A dry run only reads: it does not hold the writer (SQLite) while it counts.
            let mut tx = if apply {
                self.begin_write().await?
            } else {
                self.pool.begin().await?
            };
            let ids: Vec<String> = sqlx::query_scalar(
                "SELECT o.id FROM operations o \
                 WHERE o.status IN ('done', 'error') AND o.finished_at IS NOT NULL \
                 AND o.finished_at < $1 \
                 AND (EXISTS (SELECT 1 FROM operation_events e WHERE e.operation_id = o.id) \
                   OR EXISTS (SELECT 1 FROM operation_steps s WHERE s.operation_id = o.id) \
                   OR EXISTS (SELECT 1 FROM tool_executions t WHERE t.operation_id = o.id)) \
                 ORDER BY o.finished_at, o.id LIMIT $2",
            )
            .bind(ts(before))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&mut *tx)
            .await?;
            let mut done = Compacted {
                operations: ids.len() as u64,
                ..Compacted::default()
            };
            for id in &ids {
                let mut counts = [0u64; 3];
                for (table, count) in TABLES.iter().zip(counts.iter_mut()) {
                    *count = if apply {
                        sqlx::query(sqlx::AssertSqlSafe(format!(
                            "DELETE FROM {table} WHERE operation_id = $1"
                        )))
                        .bind(id)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected()
                    } else {
                        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                            "SELECT COUNT(*) FROM {table} WHERE operation_id = $1"
                        )))
                        .bind(id)
                        .fetch_one(&mut *tx)
                        .await?;
                        u64::try_from(n).unwrap_or_default()
                    };
                }
                done.steps += counts[0];
                done.events += counts[1];
                done.tool_executions += counts[2];
            }
            if apply {
                tx.commit().await?;
            }
            Ok(done)
        }
        .boxed()
    }

    fn stale_topics<'a>(
        &'a self,
        before: DateTime<Utc>,
        limit: u64,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        async move {
            Ok(sqlx::query_scalar(
                "SELECT t.id FROM topics t WHERE t.created_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.topic_id = t.id AND m.created_at >= $1) \
                 AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.topic_id = t.id \
                   AND (o.status NOT IN ('done', 'error') OR o.created_at >= $1)) \
                 ORDER BY t.created_at, t.id LIMIT $2",
            )
            .bind(ts(before))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?)
        }
        .boxed()
    }

    fn backup<'a>(&'a self, to: &'a Path) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            match self.dialect {
                Dialect::Sqlite => {
                    if to.exists() {
                        return Err(StoreError::Conflict(format!("{}", to.display())));
                    }
                    sqlx::query("VACUUM INTO $1")
                        .bind(to.to_string_lossy().into_owned())
                        .execute(&self.pool)
                        .await?;
                    Ok(())
                }
                Dialect::Postgres => Err(StoreError::Unsupported(
                    "a PostgreSQL database is backed up with pg_dump (docs/deploy.md#backups)"
                        .to_owned(),
                )),
            }
        }
        .boxed()
    }
}
