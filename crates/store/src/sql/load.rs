//! The read path of a run: the record, the small state, the tool manifests and the messages
//! in their order, in two queries; messages deleted from the topic since are reported.

use super::operations::{RECORD_COLUMNS, record};
use super::state::legacy_spec;
use super::*;
use rein_core::AgentState;
use sqlx::Row;
use std::sync::Arc;

pub(super) async fn load_operation(
    store: &SqlStore,
    id: OperationId,
) -> Result<Option<StoredOperation>, StoreError> {
    let key = id.to_string();
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RECORD_COLUMNS}, state, next_context, s.spec, s.tool_manifests, s.manifests_hash, \
         m.manifests AS set_manifests \
         FROM operations LEFT JOIN operation_setup s ON s.operation_id = operations.id \
         LEFT JOIN tool_manifest_sets m ON m.hash = s.manifests_hash WHERE id = $1"
    )))
    .bind(&key)
    .fetch_optional(&store.pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let record = record(&row)?;
    let mut state: AgentState = from_json(&row.try_get::<String, _>("state")?, "state")?;
    if let Some(text) = super::manifest_sets::stored_text(
        &key,
        row.try_get("manifests_hash")?,
        row.try_get("set_manifests")?,
        row.try_get("tool_manifests")?,
    )? {
        state.tool_manifests = Arc::new(from_json(&text, "tool manifests")?);
    }
    // The message list in order; a message deleted from the topic since is left out
    // and reported.
    let rows = sqlx::query(
        "SELECT om.message_id, m.body FROM operation_messages om LEFT JOIN messages m ON m.id = om.message_id \
         WHERE om.operation_id = $1 ORDER BY om.ordinal",
    )
    .bind(&key)
    .fetch_all(&store.pool)
    .await?;
    let mut missing_messages = Vec::new();
    state.messages = Vec::with_capacity(rows.len());
    for r in &rows {
        match r.try_get::<Option<String>, _>("body")? {
            Some(body) => state.messages.push(Arc::new(from_json(&body, "message")?)),
            None => missing_messages.push(r.try_get::<String, _>("message_id")?),
        }
    }
    let next_context = row
        .try_get::<Option<String>, _>("next_context")?
        .map(|t| from_json(&t, "next context"))
        .transpose()?;
    let spec = match row.try_get::<Option<String>, _>("spec")? {
        Some(text) => from_json(&text, "spec")?,
        None => legacy_spec(&state),
    };
    Ok(Some(StoredOperation {
        record,
        state,
        next_context,
        missing_messages,
        spec,
    }))
}
