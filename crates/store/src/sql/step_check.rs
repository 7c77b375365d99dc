//! [`Store::step_check`] in SQL: the operation's cancel flag and the message's existence in a
//! one-row subquery, joined with the grants that apply (one row per grant, or one row of
//! `NULL`s when there are none), in one statement on both backends.

use super::SqlStore;
use super::grants::{GRANT_COLUMNS, GRANTS_APPLYING, grant_from};
use crate::step_check::{StepCheck, StepCheckFor};
use crate::{Grants, Store, StoreError};
use sqlx::Row;
use std::sync::LazyLock;

/// The statement, built once from the grants' columns and filter.
static SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT c.gate_cancel, c.gate_message, g.* FROM \
         (SELECT cancel_requested AS gate_cancel, \
          CAST(CASE WHEN $6 IS NULL THEN 0 \
                    WHEN EXISTS (SELECT 1 FROM messages WHERE id = $6) THEN 1 ELSE 0 END AS BIGINT) \
          AS gate_message \
          FROM operations WHERE id = $5) c \
         LEFT JOIN (SELECT {GRANT_COLUMNS} FROM grants WHERE {GRANTS_APPLYING}) g ON 1 = 1 \
         ORDER BY g.created_at, g.id"
    )
});

pub(super) async fn step_check(
    store: &SqlStore,
    what: &StepCheckFor<'_>,
) -> Result<StepCheck, StoreError> {
    let s = &what.grants;
    let rows = sqlx::query(SQL.as_str())
        .bind(s.owner)
        .bind(s.root)
        .bind(s.topic)
        .bind(s.agent)
        .bind(what.operation.to_string())
        .bind(what.message.map(|m| m.to_string()))
        .fetch_all(&store.pool)
        .await?;
    let Some(first) = rows.first() else {
        // No such operation (deleted while it ran): what the separate reads would say.
        return Ok(StepCheck {
            cancel_requested: false,
            grants: store.grants_for(s).await?,
            message_exists: match what.message {
                Some(m) => Some(store.message_exists(m).await?),
                None => None,
            },
        });
    };
    let mut grants = Vec::with_capacity(rows.len());
    for row in &rows {
        // The one row of a grantless operation carries the grant columns as NULL.
        if row.try_get::<Option<String>, _>("id")?.is_some() {
            grants.push(grant_from(row)?.active());
        }
    }
    Ok(StepCheck {
        cancel_requested: first.try_get::<i64, _>("gate_cancel")? != 0,
        grants,
        message_exists: what
            .message
            .map(|_| first.try_get::<i64, _>("gate_message"))
            .transpose()?
            .map(|n| n != 0),
    })
}
