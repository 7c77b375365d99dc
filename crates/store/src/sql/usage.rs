//! [`Usage`] in SQL on both backends: one grouped statement over the operation records (sums
//! cast to BIGINT, which PostgreSQL would otherwise answer as NUMERIC).

use super::{SqlStore, ts};
use crate::StoreError;
use crate::usage::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::usage::Usd;
use sqlx::Row;

impl Usage for SqlStore {
    fn record_replays<'a>(
        &'a self,
        spent: &'a [ReplaySpend],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let now = ts(Utc::now());
            let mut tx = self.pool.begin().await?;
            for s in spent {
                sqlx::query(
                    "INSERT INTO model_replays (id, owner, operation_id, step, provider, model, input_tokens, output_tokens, cost_nanos, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                )
                .bind(rein_core::OperationId::new().to_string())
                .bind(s.owner.clone())
                .bind(s.operation_id.to_string())
                .bind(i64::try_from(s.step).unwrap_or(i64::MAX))
                .bind(s.model.provider.to_string())
                .bind(s.model.model.to_string())
                .bind(i64::try_from(s.input_tokens).unwrap_or(i64::MAX))
                .bind(i64::try_from(s.output_tokens).unwrap_or(i64::MAX))
                .bind(i64::try_from(s.cost.nanos()).unwrap_or(i64::MAX))
                .bind(now.clone())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn usage<'a>(
        &'a self,
        whose: Whose<'a>,
        since: DateTime<Utc>,
        by: UsageBy,
    ) -> BoxFuture<'a, Result<Vec<UsageRow>, StoreError>> {
        async move {
            let (sql, owner) = usage_statement(whose, by);
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(ts(since));
            if let Some(o) = owner {
                q = q.bind(o.to_owned());
            }
            let n = |row: &sqlx::any::AnyRow, col: &str| -> Result<u64, StoreError> {
                Ok(u64::try_from(row.try_get::<i64, _>(col)?).unwrap_or_default())
            };
            q.fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| {
                    Ok(UsageRow {
                        key: row.try_get("k")?,
                        operations: n(row, "operations")?,
                        input_tokens: n(row, "input_tokens")?,
                        output_tokens: n(row, "output_tokens")?,
                        cost: Usd::from_nanos(n(row, "cost_nanos")?),
                    })
                })
                .collect()
        }
        .boxed()
    }
}

/// The statement [`Usage::usage`] runs (`$1`: since when) and the owner it binds as `$2`, if
/// any. The owner is compared as the indexes hold it (`owner = $2`, or `IS NULL` for the local
/// CLI's), so one user's sums read that user's rows from `operations_by_owner` and
/// `model_replays_by_owner`: spending caps sum them on every admission, and a comparison
/// through `COALESCE` read every operation of everyone in the period instead.
pub(super) fn usage_statement<'a>(whose: Whose<'a>, by: UsageBy) -> (String, Option<&'a str>) {
    let key = match by {
        UsageBy::Day => "substr(o.created_at, 1, 10)",
        UsageBy::Agent => "COALESCE(o.agent, '(none)')",
        UsageBy::Model => "COALESCE(o.provider, '?') || '/' || COALESCE(o.model, '?')",
        UsageBy::User => "COALESCE((SELECT u.name FROM users u WHERE u.id = o.owner), '(local)')",
    };
    // The local CLI's operations have no owner; an empty one counts as none.
    let (owner, bound) = match whose {
        Whose::Owner(Some(o)) if !o.is_empty() => ("AND o.owner = $2", Some(o)),
        Whose::Owner(_) => ("AND (o.owner IS NULL OR o.owner = '')", None),
        Whose::Everyone => ("", None),
    };
    // Replayed calls are summed with the operations (as agent `(replay)`), counting no
    // operation.
    let sql = format!(
        "SELECT {key} AS k, CAST(SUM(o.counted) AS BIGINT) AS operations, \
         CAST(SUM(o.input_tokens) AS BIGINT) AS input_tokens, \
         CAST(SUM(o.output_tokens) AS BIGINT) AS output_tokens, \
         CAST(SUM(o.cost_nanos) AS BIGINT) AS cost_nanos \
         FROM (SELECT created_at, agent, provider, model, owner, input_tokens, output_tokens, cost_nanos, 1 AS counted FROM operations \
               UNION ALL SELECT created_at, '(replay)', provider, model, owner, input_tokens, output_tokens, cost_nanos, 0 FROM model_replays) o \
         WHERE o.created_at >= $1 {owner} GROUP BY {key} ORDER BY {key}"
    );
    (sql, bound)
}
