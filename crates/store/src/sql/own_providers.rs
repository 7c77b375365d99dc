//! [`OwnProviders`] in SQL on both backends (instants as microseconds). Rotation reads and
//! reseals the MCP servers' sealed headers too (`own_mcp_servers`).

use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::own_providers::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;

pub(super) fn sealed_from(row: &AnyRow) -> Result<Option<SealedKey>, StoreError> {
    let sealed: Option<String> = row.try_get("sealed_key")?;
    let key_id: Option<String> = row.try_get("key_id")?;
    Ok(match (sealed, key_id) {
        (Some(sealed), Some(key_id)) => Some(SealedKey { key_id, sealed }),
        (None, None) => None,
        _ => {
            return Err(StoreError::corrupt(
                "own provider",
                "a sealed key without its key id (or the reverse)",
            ));
        }
    })
}

impl OwnProviders for SqlStore {
    fn put_own_provider<'a>(
        &'a self,
        user_id: &'a str,
        own: &'a OwnProvider,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let (sealed, key_id) = match &own.key {
                Some(k) => (Some(k.sealed.clone()), Some(k.key_id.clone())),
                None => (None, None),
            };
            sqlx::query(
                "INSERT INTO own_providers (user_id, provider, base_url, sealed_key, key_id, \
                 updated_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (user_id, provider) DO UPDATE SET base_url = excluded.base_url, \
                 sealed_key = excluded.sealed_key, key_id = excluded.key_id, \
                 updated_at = excluded.updated_at",
            )
            .bind(user_id)
            .bind(&own.provider)
            .bind(own.base_url.clone())
            .bind(sealed)
            .bind(key_id)
            .bind(micros(own.updated_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn own_providers<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<OwnProvider>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT provider, base_url, sealed_key, key_id, updated_at FROM own_providers \
                 WHERE user_id = $1 ORDER BY provider",
            )
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(OwnProvider {
                    provider: row.try_get("provider")?,
                    base_url: row.try_get("base_url")?,
                    key: sealed_from(row)?,
                    updated_at: from_micros(row.try_get("updated_at")?, "own provider updated_at")?,
                })
            })
            .collect()
        }
        .boxed()
    }

    fn delete_own_provider<'a>(
        &'a self,
        user_id: &'a str,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            Ok(
                sqlx::query("DELETE FROM own_providers WHERE user_id = $1 AND provider = $2")
                    .bind(user_id)
                    .bind(provider)
                    .execute(&self.pool)
                    .await?
                    .rows_affected()
                    > 0,
            )
        }
        .boxed()
    }

    fn sealed_keys(&self) -> BoxFuture<'_, Result<Vec<StoredKey>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT user_id, provider, sealed_key, key_id FROM own_providers \
                 WHERE sealed_key IS NOT NULL ORDER BY user_id, provider",
            )
            .fetch_all(&self.pool)
            .await?;
            let mut keys = Vec::with_capacity(rows.len());
            for row in &rows {
                if let Some(key) = sealed_from(row)? {
                    keys.push(StoredKey {
                        user_id: row.try_get("user_id")?,
                        place: SealedFor::Provider(row.try_get("provider")?),
                        key,
                    });
                }
            }
            let rows = sqlx::query(
                "SELECT user_id, name, sealed_headers AS sealed_key, key_id FROM own_mcp_servers \
                 WHERE sealed_headers IS NOT NULL ORDER BY user_id, name",
            )
            .fetch_all(&self.pool)
            .await?;
            for row in &rows {
                if let Some(key) = sealed_from(row)? {
                    keys.push(StoredKey {
                        user_id: row.try_get("user_id")?,
                        place: SealedFor::McpServer(row.try_get("name")?),
                        key,
                    });
                }
            }
            Ok(keys)
        }
        .boxed()
    }

    fn reseal<'a>(&'a self, keys: &'a [Resealed]) -> BoxFuture<'a, Result<u64, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let mut n = 0;
            for k in keys {
                let (statement, name) = match &k.place {
                    SealedFor::Provider(id) => (
                        "UPDATE own_providers SET sealed_key = $1, key_id = $2 \
                         WHERE user_id = $3 AND provider = $4 AND key_id = $5",
                        id,
                    ),
                    SealedFor::McpServer(name) => (
                        "UPDATE own_mcp_servers SET sealed_headers = $1, key_id = $2 \
                         WHERE user_id = $3 AND name = $4 AND key_id = $5",
                        name,
                    ),
                };
                n += sqlx::query(statement)
                    .bind(&k.key.sealed)
                    .bind(&k.key.key_id)
                    .bind(&k.user_id)
                    .bind(name)
                    .bind(&k.was)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            tx.commit().await?;
            Ok(n)
        }
        .boxed()
    }
}
