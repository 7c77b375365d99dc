//! Messages of a topic, and the order of an operation's messages (`operation_messages`), written
//! from the first position a step changed.

use super::*;
use rein_core::AgentState;
use sqlx::Row;
use std::sync::Arc;

/// Insert or update `messages` of `topic_id`, one statement per [`ROWS_PER_STATEMENT`].
pub(super) async fn upsert_messages(
    tx: &mut sqlx::AnyConnection,
    topic_id: &str,
    messages: &[Arc<Message>],
) -> Result<(), StoreError> {
    for chunk in messages.chunks(ROWS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO messages (id, topic_id, parent_id, role, tool_call_id, status, body, created_at) VALUES {} \
             ON CONFLICT (id) DO UPDATE SET parent_id = excluded.parent_id, status = excluded.status, body = excluded.body",
            placeholders(chunk.len(), 8)
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for m in chunk {
            q = q
                .bind(m.id.to_string())
                .bind(topic_id.to_owned())
                .bind(m.parent_id.map(|p| p.to_string()))
                .bind(enum_str(&m.role))
                .bind(m.tool_call_id.clone())
                .bind(m.tool_status.map(|s| enum_str(&s)))
                .bind(to_json(m, "message")?)
                .bind(ts(m.created_at));
        }
        q.execute(&mut *tx).await?;
    }
    Ok(())
}

/// Bring `operation_messages` in line with `state`'s message list, writing only the
/// positions `changes` says moved: a step that appends writes its new rows and nothing else.
pub(super) async fn write_order(
    tx: &mut sqlx::AnyConnection,
    id: &str,
    state: &AgentState,
    changes: &StateChanges,
) -> Result<(), StoreError> {
    let kept = changes.kept.min(state.messages.len());
    if changes.previous > kept {
        sqlx::query("DELETE FROM operation_messages WHERE operation_id = $1 AND ordinal >= $2")
            .bind(id.to_owned())
            .bind(i64::try_from(kept).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?;
    }
    let new = &state.messages[kept..];
    for (n, chunk) in new.chunks(ROWS_PER_STATEMENT).enumerate() {
        let sql = format!(
            "INSERT INTO operation_messages (operation_id, ordinal, message_id) VALUES {} \
             ON CONFLICT (operation_id, ordinal) DO UPDATE SET message_id = excluded.message_id",
            placeholders(chunk.len(), 3)
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (i, m) in chunk.iter().enumerate() {
            let ordinal = kept + n * ROWS_PER_STATEMENT + i;
            q = q
                .bind(id.to_owned())
                .bind(i64::try_from(ordinal).unwrap_or(i64::MAX))
                .bind(m.id.to_string());
        }
        q.execute(&mut *tx).await?;
    }
    Ok(())
}

/// Every message of a topic, oldest first.
pub(super) async fn topic_messages(
    store: &SqlStore,
    topic_id: &str,
) -> Result<Vec<Message>, StoreError> {
    let rows = sqlx::query("SELECT body FROM messages WHERE topic_id = $1 ORDER BY created_at, id")
        .bind(topic_id)
        .fetch_all(&store.pool)
        .await?;
    rows.iter()
        .map(|r| from_json::<Message>(&r.try_get::<String, _>("body")?, "message"))
        .collect()
}
pub(super) async fn message_exists(store: &SqlStore, id: MessageId) -> Result<bool, StoreError> {
    let found: Option<String> = sqlx::query_scalar("SELECT id FROM messages WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&store.pool)
        .await?;
    Ok(found.is_some())
}

pub(super) async fn delete_message(store: &SqlStore, id: MessageId) -> Result<bool, StoreError> {
    let n = sqlx::query("DELETE FROM messages WHERE id = $1")
        .bind(id.to_string())
        .execute(&store.pool)
        .await?
        .rows_affected();
    Ok(n > 0)
}
