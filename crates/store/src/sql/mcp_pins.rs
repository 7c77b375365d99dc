//! [`McpPins`] in SQL on both backends (instants as microseconds).

use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::mcp_pins::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;

impl McpPins for SqlStore {
    fn mcp_pins<'a>(
        &'a self,
        owner: PinOwner<'a>,
    ) -> BoxFuture<'a, Result<Vec<McpPin>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT server, tool, hash, definition, pinned_at, changed_hash, \
                 changed_definition, changed_at FROM mcp_pins WHERE owner = $1 \
                 ORDER BY server, tool",
            )
            .bind(owner.column())
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                let change = match (
                    row.try_get::<Option<String>, _>("changed_hash")?,
                    row.try_get::<Option<String>, _>("changed_definition")?,
                    row.try_get::<Option<i64>, _>("changed_at")?,
                ) {
                    (Some(hash), Some(definition), Some(at)) => Some(PinChange {
                        hash,
                        definition,
                        seen_at: from_micros(at, "MCP pin changed_at")?,
                    }),
                    _ => None,
                };
                Ok(McpPin {
                    server: row.try_get("server")?,
                    tool: row.try_get("tool")?,
                    hash: row.try_get("hash")?,
                    definition: row.try_get("definition")?,
                    pinned_at: from_micros(row.try_get("pinned_at")?, "MCP pin pinned_at")?,
                    change,
                })
            })
            .collect()
        }
        .boxed()
    }

    fn pin_mcp_tool<'a>(
        &'a self,
        owner: PinOwner<'a>,
        pin: &'a McpPin,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let done = sqlx::query(
                "INSERT INTO mcp_pins (owner, server, tool, hash, definition, pinned_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (owner, server, tool) DO NOTHING",
            )
            .bind(owner.column())
            .bind(&pin.server)
            .bind(&pin.tool)
            .bind(&pin.hash)
            .bind(&pin.definition)
            .bind(micros(pin.pinned_at))
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() == 1)
        }
        .boxed()
    }

    fn set_mcp_change<'a>(
        &'a self,
        owner: PinOwner<'a>,
        server: &'a str,
        tool: &'a str,
        change: Option<&'a PinChange>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let done = sqlx::query(
                "UPDATE mcp_pins SET changed_hash = $4, changed_definition = $5, \
                 changed_at = $6 WHERE owner = $1 AND server = $2 AND tool = $3",
            )
            .bind(owner.column())
            .bind(server)
            .bind(tool)
            .bind(change.map(|c| c.hash.clone()))
            .bind(change.map(|c| c.definition.clone()))
            .bind(change.map(|c| micros(c.seen_at)))
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() == 1)
        }
        .boxed()
    }

    fn approve_mcp_change<'a>(
        &'a self,
        owner: PinOwner<'a>,
        server: &'a str,
        tool: &'a str,
        hash: &'a str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let done = sqlx::query(
                "UPDATE mcp_pins SET hash = changed_hash, definition = changed_definition, \
                 pinned_at = $5, changed_hash = NULL, changed_definition = NULL, \
                 changed_at = NULL WHERE owner = $1 AND server = $2 AND tool = $3 \
                 AND changed_hash = $4",
            )
            .bind(owner.column())
            .bind(server)
            .bind(tool)
            .bind(hash)
            .bind(micros(at))
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() == 1)
        }
        .boxed()
    }
}
