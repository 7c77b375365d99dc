//! [`Grants`] in SQL on both backends: rows mapped to `crate::grants`'s records, and each
//! method one transaction.

use super::{SqlStore, parse_ts, ts};
use crate::StoreError;
use crate::grants::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::intervention::{ActiveGrant, GrantScope};
use sqlx::Row;
use sqlx::any::AnyRow;
/// The columns of a grant row, in [`grant_from`]'s order.
macro_rules! columns {
    () => {
        "id, owner, scope, target, tool, operation_id, tool_call_id, created_by, created_at, revoked_at, revoked_by"
    };
}

pub(super) fn grant_from(row: &AnyRow) -> Result<GrantRecord, StoreError> {
    let scope: String = row.try_get("scope")?;
    Ok(GrantRecord {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        scope: scope
            .parse()
            .map_err(|e| StoreError::corrupt("grant scope", e))?,
        target: row.try_get("target")?,
        tool: row.try_get("tool")?,
        operation_id: row.try_get("operation_id")?,
        tool_call_id: row.try_get("tool_call_id")?,
        created_by: row.try_get("created_by")?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "grant created_at")?,
        revoked_at: row
            .try_get::<Option<String>, _>("revoked_at")?
            .map(|t| parse_ts(&t, "grant revoked_at"))
            .transpose()?,
        revoked_by: row.try_get("revoked_by")?,
    })
}

/// `owner` compared so that the local CLI's `NULL` owner matches itself.
macro_rules! owner_is {
    () => {
        "COALESCE(owner, '') = COALESCE($1, '')"
    };
}

/// The active grants that apply to a [`GrantSubject`] bound as `$1` owner, `$2` root, `$3`
/// topic, `$4` agent.
macro_rules! applies {
    () => {
        concat!(
            owner_is!(),
            " AND revoked_at IS NULL AND ((scope = 'operation' AND target = $2) \
             OR (scope = 'topic' AND target = $3) OR ($4 IS NOT NULL AND scope = 'agent' AND target = $4))"
        )
    };
}

/// [`columns!`] for other statements of the store.
pub(super) const GRANT_COLUMNS: &str = columns!();
/// [`applies!`] for other statements of the store.
pub(super) const GRANTS_APPLYING: &str = applies!();

/// `owner`'s grant `id`, read through `exec` (the pool, or the transaction that just wrote it).
async fn grant_by_id<'e, E>(
    exec: E,
    owner: Option<&str>,
    id: &str,
) -> Result<Option<GrantRecord>, StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query(concat!(
        "SELECT ",
        columns!(),
        " FROM grants WHERE ",
        owner_is!(),
        " AND id = $2"
    ))
    .bind(owner)
    .bind(id)
    .fetch_optional(exec)
    .await?
    .as_ref()
    .map(grant_from)
    .transpose()
}

impl Grants for SqlStore {
    fn create_grant<'a>(
        &'a self,
        g: &'a NewGrant,
    ) -> BoxFuture<'a, Result<GrantRecord, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let record = GrantRecord {
                id: format!("grant_{}", uuid::Uuid::now_v7().simple()),
                owner: g.owner.clone(),
                scope: g.scope,
                target: g.target.clone(),
                tool: g.tool.clone(),
                operation_id: g.operation_id.clone(),
                tool_call_id: g.tool_call_id.clone(),
                created_by: g.created_by.clone(),
                // As it reads back (stored to the microsecond).
                created_at: DateTime::from_timestamp_micros(Utc::now().timestamp_micros())
                    .unwrap_or_default(),
                revoked_at: None,
                revoked_by: None,
            };
            // The unique index on active grants decides between two given at once (on
            // PostgreSQL the second insert waits for the first to commit, then does nothing).
            let inserted = sqlx::query(concat!(
                "INSERT INTO grants (",
                columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL) ON CONFLICT DO NOTHING"
            ))
            .bind(&record.id)
            .bind(record.owner.clone())
            .bind(record.scope.as_str())
            .bind(&record.target)
            .bind(&record.tool)
            .bind(record.operation_id.clone())
            .bind(record.tool_call_id.clone())
            .bind(record.created_by.clone())
            .bind(ts(record.created_at))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 1 {
                tx.commit().await?;
                return Ok(record);
            }
            // Already granted: that grant.
            let existing = sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM grants WHERE ",
                owner_is!(),
                " AND scope = $2 AND target = $3 AND tool = $4 AND revoked_at IS NULL"
            ))
            .bind(g.owner.clone())
            .bind(g.scope.as_str())
            .bind(&g.target)
            .bind(&g.tool)
            .fetch_one(&mut *tx)
            .await?;
            tx.commit().await?;
            grant_from(&existing)
        }
        .boxed()
    }

    fn grant<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<GrantRecord>, StoreError>> {
        async move { grant_by_id(&self.pool, owner, id).await }.boxed()
    }

    fn list_grants<'a>(
        &'a self,
        owner: Option<&'a str>,
        filter: &'a GrantFilter,
    ) -> BoxFuture<'a, Result<Vec<GrantRecord>, StoreError>> {
        async move {
            sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM grants WHERE ",
                owner_is!(),
                " AND ($2 IS NULL OR scope = $2) AND ($3 IS NULL OR target = $3) \
                 AND ($4 = 1 OR revoked_at IS NULL) ORDER BY created_at DESC, id DESC"
            ))
            .bind(owner)
            .bind(filter.scope.map(GrantScope::as_str))
            .bind(filter.target.clone())
            .bind(i64::from(filter.include_revoked))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(grant_from)
            .collect()
        }
        .boxed()
    }

    fn grants_for<'a>(
        &'a self,
        s: &'a GrantSubject<'a>,
    ) -> BoxFuture<'a, Result<Vec<ActiveGrant>, StoreError>> {
        async move {
            let rows = sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM grants WHERE ",
                applies!(),
                " ORDER BY created_at, id"
            ))
            .bind(s.owner)
            .bind(s.root)
            .bind(s.topic)
            .bind(s.agent)
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|r| grant_from(r).map(|g| g.active()))
                .collect()
        }
        .boxed()
    }

    fn revoke_grant<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
        by: Option<&'a str>,
    ) -> BoxFuture<'a, Result<GrantRecord, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            sqlx::query(concat!(
                "UPDATE grants SET revoked_at = $3, revoked_by = $4 WHERE ",
                owner_is!(),
                " AND id = $2 AND revoked_at IS NULL"
            ))
            .bind(owner)
            .bind(id)
            .bind(ts(Utc::now()))
            .bind(by)
            .execute(&mut *tx)
            .await?;
            let record = grant_by_id(&mut *tx, owner, id).await?;
            tx.commit().await?;
            record.ok_or_else(|| StoreError::NotFound(format!("grant {id}")))
        }
        .boxed()
    }
}
