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
    fn usage<'a>(
        &'a self,
        whose: Whose<'a>,
        since: DateTime<Utc>,
        by: UsageBy,
    ) -> BoxFuture<'a, Result<Vec<UsageRow>, StoreError>> {
        async move {
            let key = match by {
                UsageBy::Day => "substr(o.created_at, 1, 10)",
                UsageBy::Agent => "COALESCE(o.agent, '(none)')",
                UsageBy::Model => "COALESCE(o.provider, '?') || '/' || COALESCE(o.model, '?')",
                UsageBy::User => {
                    "COALESCE((SELECT u.name FROM users u WHERE u.id = o.owner), '(local)')"
                }
            };
            let owner = match whose {
                Whose::Owner(_) => "AND COALESCE(o.owner, '') = COALESCE($2, '')",
                Whose::Everyone => "",
            };
            let mut q = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {key} AS k, COUNT(*) AS operations, \
                 CAST(SUM(o.input_tokens) AS BIGINT) AS input_tokens, \
                 CAST(SUM(o.output_tokens) AS BIGINT) AS output_tokens, \
                 CAST(SUM(o.cost_nanos) AS BIGINT) AS cost_nanos \
                 FROM operations o WHERE o.created_at >= $1 {owner} GROUP BY {key} ORDER BY {key}"
            )))
            .bind(ts(since));
            if let Whose::Owner(o) = whose {
                q = q.bind(o.map(str::to_owned));
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
