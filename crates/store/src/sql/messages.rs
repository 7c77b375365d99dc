//! Messages of a topic, and the order of an operation's messages (`operation_messages`), written
//! from the first position a step changed.

use super::statement::Statement;
use super::*;
use rein_core::AgentState;
use sqlx::Row;
use std::sync::Arc;

/// Insert or update `messages` of `topic_id` (in `thread`, for a sub-agent's), one statement
/// per [`ROWS_PER_STATEMENT`].
pub(super) fn upsert_messages(
    topic_id: &str,
    thread: Option<&str>,
    messages: &[Arc<Message>],
) -> Result<Vec<Statement>, StoreError> {
    messages
        .chunks(ROWS_PER_STATEMENT)
        .map(|chunk| {
            let mut s = Statement::new(format!(
                "INSERT INTO messages (id, topic_id, parent_id, role, tool_call_id, status, body, created_at, thread_id) VALUES {} \
                 ON CONFLICT (id) DO UPDATE SET parent_id = excluded.parent_id, status = excluded.status, body = excluded.body",
                placeholders(chunk.len(), 9)
            ));
            for m in chunk {
                s.push(m.id.to_string());
                s.push(topic_id);
                s.push(m.parent_id.map(|p| p.to_string()));
                s.push(enum_str(&m.role));
                s.push(m.tool_call_id.as_deref().map(str::to_owned));
                s.push(m.tool_status.map(|t| enum_str(&t)));
                s.push(to_json(m, "message")?);
                s.push(ts(m.created_at));
                s.push(thread.map(str::to_owned));
            }
            Ok(s)
        })
        .collect()
}

/// Bring `operation_messages` in line with `state`'s message list, writing only the
/// positions `changes` says moved: a step that appends writes its new rows and nothing else.
pub(super) fn write_order(id: &str, state: &AgentState, changes: &StateChanges) -> Vec<Statement> {
    let kept = changes.kept.min(state.messages.len());
    let mut out = Vec::new();
    if changes.previous > kept {
        out.push(
            Statement::new(
                "DELETE FROM operation_messages WHERE operation_id = $1 AND ordinal >= $2",
            )
            .arg(id)
            .arg(i64::try_from(kept).unwrap_or(i64::MAX)),
        );
    }
    let new = &state.messages[kept..];
    for (n, chunk) in new.chunks(ROWS_PER_STATEMENT).enumerate() {
        let mut s = Statement::new(format!(
            "INSERT INTO operation_messages (operation_id, ordinal, message_id) VALUES {} \
             ON CONFLICT (operation_id, ordinal) DO UPDATE SET message_id = excluded.message_id",
            placeholders(chunk.len(), 3)
        ));
        for (i, m) in chunk.iter().enumerate() {
            let ordinal = kept + n * ROWS_PER_STATEMENT + i;
            s.push(id);
            s.push(i64::try_from(ordinal).unwrap_or(i64::MAX));
            s.push(m.id.to_string());
        }
        out.push(s);
    }
    out
}

/// The messages of a topic's own conversation (outside its threads), oldest first.
pub(super) async fn topic_messages(
    store: &SqlStore,
    topic_id: &str,
) -> Result<Vec<Message>, StoreError> {
    let rows = sqlx::query(
        "SELECT body FROM messages WHERE topic_id = $1 AND thread_id IS NULL ORDER BY created_at, id",
    )
    .bind(topic_id)
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|r| from_json::<Message>(&r.try_get::<String, _>("body")?, "message"))
        .collect()
}

/// A thread's messages, oldest first.
pub(super) async fn thread_messages(
    store: &SqlStore,
    thread_id: &str,
) -> Result<Vec<Message>, StoreError> {
    let rows =
        sqlx::query("SELECT body FROM messages WHERE thread_id = $1 ORDER BY created_at, id")
            .bind(thread_id)
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

/// The threads of a topic, oldest first.
pub(super) async fn threads(store: &SqlStore, topic_id: &str) -> Result<Vec<Thread>, StoreError> {
    let rows = sqlx::query(
        "SELECT id, topic_id, parent_message_id, operation_id, parent_operation, agent, title, created_at \
         FROM threads WHERE topic_id = $1 ORDER BY created_at, id",
    )
    .bind(topic_id)
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Thread {
                id: r.try_get("id")?,
                topic_id: r.try_get("topic_id")?,
                parent_message_id: r.try_get("parent_message_id")?,
                operation_id: r.try_get("operation_id")?,
                parent_operation: r.try_get("parent_operation")?,
                agent: r.try_get("agent")?,
                title: r.try_get("title")?,
                created_at: parse_ts(&r.try_get::<String, _>("created_at")?, "created_at")?,
            })
        })
        .collect()
}
