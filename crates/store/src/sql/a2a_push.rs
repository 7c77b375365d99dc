//! [`A2aPush`] in SQL on both backends (instants as microseconds).

use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::a2a_push::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::OperationId;
use sqlx::Row;

impl A2aPush for SqlStore {
    fn put_push_config<'a>(
        &'a self,
        owner: &'a str,
        c: &'a PushConfig,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO a2a_push_configs (operation_id, id, owner, url, token, auth_scheme, \
                 auth_credentials, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (operation_id, id) DO UPDATE SET url = excluded.url, \
                 token = excluded.token, auth_scheme = excluded.auth_scheme, \
                 auth_credentials = excluded.auth_credentials, created_at = excluded.created_at",
            )
            .bind(c.operation_id.to_string())
            .bind(&c.id)
            .bind(owner)
            .bind(&c.url)
            .bind(c.token.clone())
            .bind(c.auth_scheme.clone())
            .bind(c.auth_credentials.clone())
            .bind(micros(c.created_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn push_configs<'a>(
        &'a self,
        owner: &'a str,
        operation: OperationId,
    ) -> BoxFuture<'a, Result<Vec<PushConfig>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT id, url, token, auth_scheme, auth_credentials, created_at \
                 FROM a2a_push_configs WHERE owner = $1 AND operation_id = $2 \
                 ORDER BY created_at, id",
            )
            .bind(owner)
            .bind(operation.to_string())
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(PushConfig {
                        operation_id: operation,
                        id: row.try_get("id")?,
                        url: row.try_get("url")?,
                        token: row.try_get("token")?,
                        auth_scheme: row.try_get("auth_scheme")?,
                        auth_credentials: row.try_get("auth_credentials")?,
                        created_at: from_micros(row.try_get("created_at")?, "push created_at")?,
                    })
                })
                .collect()
        }
        .boxed()
    }

    fn delete_push_config<'a>(
        &'a self,
        owner: &'a str,
        operation: OperationId,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let done = sqlx::query(
                "DELETE FROM a2a_push_configs WHERE owner = $1 AND operation_id = $2 AND id = $3",
            )
            .bind(owner)
            .bind(operation.to_string())
            .bind(id)
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() > 0)
        }
        .boxed()
    }

    fn pushed_unfinished(&self) -> BoxFuture<'_, Result<Vec<(String, OperationId)>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT DISTINCT p.owner, p.operation_id FROM a2a_push_configs p \
                 JOIN operations o ON o.id = p.operation_id WHERE o.finished_at IS NULL",
            )
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    let id: String = row.try_get("operation_id")?;
                    let id = id
                        .parse()
                        .map_err(|e| StoreError::corrupt("push operation_id", e))?;
                    Ok((row.try_get("owner")?, id))
                })
                .collect()
        }
        .boxed()
    }
}
