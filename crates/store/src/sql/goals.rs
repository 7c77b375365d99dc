//! [`Goals`] in SQL on both backends (instants as microseconds, the graph and settings as
//! JSON).

use super::{SqlStore, from_json, from_micros, i64_of, micros, to_json};
use crate::StoreError;
use crate::goals::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::goal::{Goal, GoalEvent, GoalSettings, GoalStatus};
use rein_core::ids::GoalId;
use rein_core::usage::Usd;
use sqlx::Row;
use sqlx::any::AnyRow;

/// The columns a [`GoalRecord`] is read from (a literal, so queries stay static strings).
macro_rules! columns {
    () => {
        "owner, graph, settings, seq, spent_nanos, spent_tokens, created_at, updated_at"
    };
}

fn record(row: &AnyRow) -> Result<GoalRecord, StoreError> {
    let graph: String = row.try_get("graph")?;
    let settings: String = row.try_get("settings")?;
    let seq: i64 = row.try_get("seq")?;
    let nanos: i64 = row.try_get("spent_nanos")?;
    let tokens: i64 = row.try_get("spent_tokens")?;
    Ok(GoalRecord {
        owner: row.try_get("owner")?,
        goal: from_json(&graph, "goal graph")?,
        settings: from_json(&settings, "goal settings")?,
        seq: u64::try_from(seq).map_err(|e| StoreError::corrupt("goal seq", e))?,
        spent: Usd::from_nanos(u64::try_from(nanos).unwrap_or(0)),
        spent_tokens: u64::try_from(tokens).unwrap_or(0),
        created_at: from_micros(row.try_get("created_at")?, "goal created_at")?,
        updated_at: from_micros(row.try_get("updated_at")?, "goal updated_at")?,
    })
}

fn id_of(row: &AnyRow, column: &str) -> Result<GoalId, StoreError> {
    let id: String = row.try_get(column)?;
    id.parse().map_err(|e| StoreError::corrupt("goal id", e))
}

impl Goals for SqlStore {
    fn create_goal<'a>(&'a self, r: &'a GoalRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let done = sqlx::query(
                "INSERT INTO goals (id, owner, objective, status, settings, graph, seq, \
                 spent_nanos, spent_tokens, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 0, 0, 0, $7, $7) ON CONFLICT (id) DO NOTHING",
            )
            .bind(r.goal.id.to_string())
            .bind(&r.owner)
            .bind(&r.goal.objective)
            .bind(r.goal.status.as_str())
            .bind(to_json(&r.settings, "goal settings")?)
            .bind(to_json(&r.goal, "goal graph")?)
            .bind(micros(r.created_at))
            .execute(&self.pool)
            .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::Conflict(format!(
                    "goal {} exists already",
                    r.goal.id
                )));
            }
            Ok(())
        }
        .boxed()
    }

    fn goal<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: GoalId,
    ) -> BoxFuture<'a, Result<Option<GoalRecord>, StoreError>> {
        async move {
            let row = match owner {
                Some(owner) => {
                    sqlx::query(concat!(
                        "SELECT ",
                        columns!(),
                        " FROM goals WHERE id = $1 AND owner = $2"
                    ))
                    .bind(id.to_string())
                    .bind(owner)
                    .fetch_optional(&self.pool)
                    .await?
                }
                None => {
                    sqlx::query(concat!("SELECT ", columns!(), " FROM goals WHERE id = $1"))
                        .bind(id.to_string())
                        .fetch_optional(&self.pool)
                        .await?
                }
            };
            row.as_ref().map(record).transpose()
        }
        .boxed()
    }

    fn list_goals<'a>(
        &'a self,
        owner: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<GoalRecord>, StoreError>> {
        async move {
            let rows = sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM goals WHERE owner = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
            ))
            .bind(owner)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(record).collect()
        }
        .boxed()
    }

    fn open_goals(&self) -> BoxFuture<'_, Result<Vec<(String, GoalId)>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT owner, id FROM goals WHERE status NOT IN ($1, $2, $3) ORDER BY created_at",
            )
            .bind(GoalStatus::Achieved.as_str())
            .bind(GoalStatus::Failed.as_str())
            .bind(GoalStatus::Cancelled.as_str())
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| Ok((row.try_get("owner")?, id_of(row, "id")?)))
                .collect()
        }
        .boxed()
    }

    fn commit_goal<'a>(
        &'a self,
        seq: u64,
        goal: &'a Goal,
        event: &'a GoalEvent,
        spend: GoalSpend,
        settings: Option<&'a GoalSettings>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let now = micros(chrono::Utc::now());
            let settings = settings.map(|s| to_json(s, "goal settings")).transpose()?;
            let mut tx = self.begin_write().await?;
            let done = sqlx::query(
                "UPDATE goals SET graph = $1, status = $2, seq = seq + 1, \
                 spent_nanos = spent_nanos + $3, spent_tokens = spent_tokens + $4, \
                 updated_at = $5, settings = COALESCE($6, settings) WHERE id = $7 AND seq = $8",
            )
            .bind(to_json(goal, "goal graph")?)
            .bind(goal.status.as_str())
            .bind(i64_of(spend.cost.nanos()))
            .bind(i64_of(spend.tokens))
            .bind(now)
            .bind(settings)
            .bind(goal.id.to_string())
            .bind(i64_of(seq))
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            sqlx::query(
                "INSERT INTO goal_events (goal_id, seq, event, at) VALUES ($1, $2, $3, $4)",
            )
            .bind(goal.id.to_string())
            .bind(i64_of(seq.saturating_add(1)))
            .bind(to_json(event, "goal event")?)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(true)
        }
        .boxed()
    }

    fn claim_goal<'a>(
        &'a self,
        id: GoalId,
        holder: &'a str,
        until: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let done = sqlx::query(
                "UPDATE goals SET claimed_by = $1, claimed_until = $2 WHERE id = $3 \
                 AND (claimed_by IS NULL OR claimed_by = $1 OR claimed_until < $4)",
            )
            .bind(holder)
            .bind(micros(until))
            .bind(id.to_string())
            .bind(micros(chrono::Utc::now()))
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() > 0)
        }
        .boxed()
    }

    fn release_goal<'a>(
        &'a self,
        id: GoalId,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "UPDATE goals SET claimed_by = NULL, claimed_until = NULL \
                 WHERE id = $1 AND claimed_by = $2",
            )
            .bind(id.to_string())
            .bind(holder)
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn goal_events<'a>(
        &'a self,
        id: GoalId,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<GoalLogEntry>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT seq, event, at FROM goal_events WHERE goal_id = $1 AND seq > $2 ORDER BY seq",
            )
            .bind(id.to_string())
            .bind(i64_of(after))
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    let seq: i64 = row.try_get("seq")?;
                    let event: String = row.try_get("event")?;
                    Ok(GoalLogEntry {
                        seq: u64::try_from(seq).map_err(|e| StoreError::corrupt("goal event seq", e))?,
                        event: from_json::<GoalEvent>(&event, "goal event")?,
                        at: from_micros(row.try_get("at")?, "goal event at")?,
                    })
                })
                .collect()
        }
        .boxed()
    }
}
