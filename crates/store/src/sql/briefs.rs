//! [`Briefs`] in SQL on both backends: rows mapped to `crate::briefs`'s records, and each
//! method one transaction.

use super::{SqlStore, from_json, micros, parse_ts, to_json, ts};
use crate::StoreError;
use crate::briefs::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
/// What is stored in a brief's `body` column.
#[derive(Serialize, Deserialize)]
struct Body {
    #[serde(default)]
    artifacts: Vec<Artifact>,
    #[serde(default)]
    actions: Vec<BriefAction>,
}

const COLUMNS: &str = "id, owner, task_id, operation_id, agent, kind, priority, title, summary, body, read_at, resolution, created_at";

fn brief_from(row: &AnyRow) -> Result<Brief, StoreError> {
    let body: Body = from_json(&row.try_get::<String, _>("body")?, "brief body")?;
    let word = |col: &str| -> Result<String, StoreError> { Ok(row.try_get::<String, _>(col)?) };
    Ok(Brief {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        task_id: row.try_get("task_id")?,
        operation_id: row.try_get("operation_id")?,
        agent: row.try_get("agent")?,
        kind: crate::sql::enum_from(&word("kind")?, "brief kind")?,
        priority: crate::sql::enum_from(&word("priority")?, "brief priority")?,
        title: row.try_get("title")?,
        summary: row.try_get("summary")?,
        artifacts: body.artifacts,
        actions: body.actions,
        read_at: row
            .try_get::<Option<String>, _>("read_at")?
            .map(|t| parse_ts(&t, "brief read_at"))
            .transpose()?,
        resolution: row
            .try_get::<Option<String>, _>("resolution")?
            .map(|t| from_json(&t, "brief resolution"))
            .transpose()?,
        created_at: parse_ts(&word("created_at")?, "brief created_at")?,
    })
}

impl Briefs for SqlStore {
    fn add_brief<'a>(
        &'a self,
        b: &'a Brief,
        notify_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let body = to_json(
                &Body {
                    artifacts: b.artifacts.clone(),
                    actions: b.actions.clone(),
                },
                "brief body",
            )?;
            let resolution = b
                .resolution
                .as_ref()
                .map(|r| to_json(r, "brief resolution"))
                .transpose()?;
            let mut tx = self.begin_write().await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO briefs ({COLUMNS}, resolved_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            )))
            .bind(&b.id)
            .bind(&b.owner)
            .bind(b.task_id.clone())
            .bind(b.operation_id.clone())
            .bind(b.agent.clone())
            .bind(crate::sql::enum_str(&b.kind))
            .bind(crate::sql::enum_str(&b.priority))
            .bind(&b.title)
            .bind(&b.summary)
            .bind(body)
            .bind(b.read_at.map(ts))
            .bind(resolution)
            .bind(ts(b.created_at))
            .bind(b.resolution.as_ref().map(|r| ts(r.at)))
            .execute(&mut *tx)
            .await
            .map_err(|e| match e {
                sqlx::Error::Database(d) if d.is_unique_violation() => {
                    StoreError::Conflict(format!("brief {}", b.id))
                }
                other => other.into(),
            })?;
            if let Some(at) = notify_at {
                sqlx::query(
                    "INSERT INTO brief_notices (brief_id, owner, attempts, next_at) VALUES ($1, $2, 0, $3)",
                )
                .bind(&b.id)
                .bind(&b.owner)
                .bind(micros(at))
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn get_brief<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Brief>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM briefs WHERE id = $1"
            )))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(brief_from)
            .transpose()
        }
        .boxed()
    }

    fn list_briefs<'a>(
        &'a self,
        f: &'a BriefFilter,
    ) -> BoxFuture<'a, Result<Vec<Brief>, StoreError>> {
        async move {
            // `$1 IS NULL OR …` keeps one statement for every filter.
            let sql = format!(
                "SELECT {COLUMNS} FROM briefs \
                 WHERE ($1 IS NULL OR owner = $1) AND ($2 IS NULL OR task_id = $2) \
                 AND ($3 = 0 OR resolved_at IS NULL) \
                 ORDER BY created_at DESC, id DESC LIMIT $4"
            );
            let limit = if f.limit == 0 { 100 } else { f.limit };
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(f.owner.clone())
                .bind(f.task_id.clone())
                .bind(i64::from(f.unresolved))
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(brief_from)
                .collect()
        }
        .boxed()
    }

    fn mark_brief_read<'a>(
        &'a self,
        id: &'a str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            sqlx::query("UPDATE briefs SET read_at = $1 WHERE id = $2 AND read_at IS NULL")
                .bind(ts(at))
                .bind(id)
                .execute(&self.pool)
                .await?;
            let exists: Option<String> = sqlx::query_scalar("SELECT id FROM briefs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
            Ok(exists.is_some())
        }
        .boxed()
    }

    fn resolve_brief<'a>(
        &'a self,
        id: &'a str,
        r: &'a Resolution,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE briefs SET resolved_at = $1, resolution = $2, read_at = COALESCE(read_at, $1) \
                 WHERE id = $3 AND resolved_at IS NULL",
            )
            .bind(ts(r.at))
            .bind(to_json(r, "brief resolution")?)
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn set_brief_hook<'a>(&'a self, h: &'a BriefHook) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO brief_hooks (owner, url, secret, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (owner) DO UPDATE SET url = excluded.url, secret = excluded.secret, \
                 created_at = excluded.created_at",
            )
            .bind(&h.owner)
            .bind(&h.url)
            .bind(&h.secret)
            .bind(ts(h.created_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn brief_hook<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<BriefHook>, StoreError>> {
        async move {
            let row: Option<(String, String, String, String)> = sqlx::query_as(
                "SELECT owner, url, secret, created_at FROM brief_hooks WHERE owner = $1",
            )
            .bind(owner)
            .fetch_optional(&self.pool)
            .await?;
            row.map(|(owner, url, secret, at)| {
                Ok(BriefHook {
                    owner,
                    url,
                    secret,
                    created_at: parse_ts(&at, "brief hook created_at")?,
                })
            })
            .transpose()
        }
        .boxed()
    }

    fn task_of_run<'a>(
        &'a self,
        operation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        async move {
            Ok(
                sqlx::query_scalar("SELECT task_id FROM task_runs WHERE operation_id = $1")
                    .bind(operation_id)
                    .fetch_optional(&self.pool)
                    .await?,
            )
        }
        .boxed()
    }

    fn delete_brief_hook<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("DELETE FROM brief_hooks WHERE owner = $1")
                .bind(owner)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn claim_brief_notices<'a>(
        &'a self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<BriefNotice>, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            // Rows another server is claiming are skipped, not waited for.
            let lock = self.dialect().claim_rows();
            let rows: Vec<(String, String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT brief_id, owner, attempts FROM brief_notices \
                 WHERE delivered_at IS NULL AND next_at <= $1 ORDER BY next_at, brief_id LIMIT $2{lock}"
            )))
            .bind(micros(now))
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
            let mut claimed = Vec::with_capacity(rows.len());
            for (brief_id, owner, attempts) in rows {
                sqlx::query(
                    "UPDATE brief_notices SET attempts = attempts + 1, next_at = $1 WHERE brief_id = $2",
                )
                .bind(micros(until))
                .bind(&brief_id)
                .execute(&mut *tx)
                .await?;
                claimed.push(BriefNotice {
                    brief_id,
                    owner,
                    attempts: u32::try_from(attempts + 1).unwrap_or(u32::MAX),
                });
            }
            tx.commit().await?;
            Ok(claimed)
        }
        .boxed()
    }

    fn settle_brief_notice<'a>(
        &'a self,
        brief_id: &'a str,
        delivered: Option<DateTime<Utc>>,
        error: Option<&'a str>,
        retry_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            // Given up: parked far in the future, with the last error kept.
            let next = retry_at.map_or(i64::MAX, micros);
            sqlx::query(
                "UPDATE brief_notices SET delivered_at = $1, last_error = $2, next_at = $3 WHERE brief_id = $4",
            )
            .bind(delivered.map(ts))
            .bind(error)
            .bind(next)
            .bind(brief_id)
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }
}
