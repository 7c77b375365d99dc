//! [`OwnMcpServers`] in SQL on both backends (header names as a JSON array, instants as
//! microseconds).

use super::own_providers::sealed_from;
use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::own_mcp::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;

impl OwnMcpServers for SqlStore {
    fn put_own_mcp_server<'a>(
        &'a self,
        user_id: &'a str,
        server: &'a OwnMcpServer,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let (sealed, key_id) = match &server.headers {
                Some(k) => (Some(k.sealed.clone()), Some(k.key_id.clone())),
                None => (None, None),
            };
            let names = serde_json::to_string(&server.header_names)
                .map_err(|e| StoreError::corrupt("own MCP server header names", e))?;
            sqlx::query(
                "INSERT INTO own_mcp_servers (user_id, name, url, header_names, sealed_headers, \
                 key_id, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (user_id, name) DO UPDATE SET url = excluded.url, \
                 header_names = excluded.header_names, sealed_headers = excluded.sealed_headers, \
                 key_id = excluded.key_id, updated_at = excluded.updated_at",
            )
            .bind(user_id)
            .bind(&server.name)
            .bind(&server.url)
            .bind(names)
            .bind(sealed)
            .bind(key_id)
            .bind(micros(server.updated_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn own_mcp_servers<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<OwnMcpServer>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT name, url, header_names, sealed_headers AS sealed_key, key_id, updated_at \
                 FROM own_mcp_servers WHERE user_id = $1 ORDER BY name",
            )
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                let names: String = row.try_get("header_names")?;
                Ok(OwnMcpServer {
                    name: row.try_get("name")?,
                    url: row.try_get("url")?,
                    header_names: serde_json::from_str(&names)
                        .map_err(|e| StoreError::corrupt("own MCP server header names", e))?,
                    headers: sealed_from(row)?,
                    updated_at: from_micros(
                        row.try_get("updated_at")?,
                        "own MCP server updated_at",
                    )?,
                })
            })
            .collect()
        }
        .boxed()
    }

    fn delete_own_mcp_server<'a>(
        &'a self,
        user_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            Ok(
                sqlx::query("DELETE FROM own_mcp_servers WHERE user_id = $1 AND name = $2")
                    .bind(user_id)
                    .bind(name)
                    .execute(&self.pool)
                    .await?
                    .rows_affected()
                    > 0,
            )
        }
        .boxed()
    }
}
