//! [`Evals`] in SQL on both backends.

use super::*;
use crate::evals::{EvalRunRecord, Evals};
use sqlx::Row;

fn record(r: &sqlx::any::AnyRow, with_body: bool) -> Result<EvalRunRecord, StoreError> {
    Ok(EvalRunRecord {
        id: r.try_get("id")?,
        owner: r.try_get("owner")?,
        dataset: r.try_get("dataset")?,
        created_at: parse_ts(&r.try_get::<String, _>("created_at")?, "created_at")?,
        summary: from_json(&r.try_get::<String, _>("summary")?, "eval summary")?,
        body: if with_body {
            from_json(&r.try_get::<String, _>("body")?, "eval run")?
        } else {
            serde_json::Value::Null
        },
    })
}

impl Evals for SqlStore {
    fn put_eval_run<'a>(&'a self, run: &'a EvalRunRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO eval_runs (id, owner, dataset, created_at, summary, body) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&run.id)
            .bind(run.owner.as_deref())
            .bind(&run.dataset)
            .bind(ts(run.created_at))
            .bind(to_json(&run.summary, "eval summary")?)
            .bind(to_json(&run.body, "eval run")?)
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn eval_runs<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<EvalRunRecord>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT id, owner, dataset, created_at, summary FROM eval_runs \
                 WHERE COALESCE(owner, '') = COALESCE($1, '') ORDER BY created_at DESC, id DESC",
            )
            .bind(owner)
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(|r| record(r, false)).collect()
        }
        .boxed()
    }

    fn eval_run<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<EvalRunRecord>, StoreError>> {
        async move {
            let row = sqlx::query(
                "SELECT id, owner, dataset, created_at, summary, body FROM eval_runs \
                 WHERE id = $1 AND COALESCE(owner, '') = COALESCE($2, '')",
            )
            .bind(id)
            .bind(owner)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(|r| record(r, true)).transpose()
        }
        .boxed()
    }
}
