//! The event log: a step's events in one statement, read back after a cursor.

use super::statement::Statement;
use super::*;
use sqlx::Row;

/// A step's events, one statement per [`ROWS_PER_STATEMENT`]; one already stored (same
/// sequence number) is left as it is.
pub(super) fn insert_events(id: &str, events: &[AgentEvent]) -> Result<Vec<Statement>, StoreError> {
    events
        .chunks(ROWS_PER_STATEMENT)
        .map(|chunk| {
            let mut s = Statement::new(format!(
                "INSERT INTO operation_events (operation_id, seq, step, kind, body) VALUES {} ON CONFLICT (operation_id, seq) DO NOTHING",
                placeholders(chunk.len(), 5)
            ));
            for e in chunk {
                let value =
                    serde_json::to_value(e).map_err(|err| StoreError::corrupt("event", err))?;
                let kind = value
                    .get("type")
                    .and_then(|t| t.as_str())
                    .unwrap_or_default()
                    .to_owned();
                s.push(id);
                s.push(i64_of(e.seq));
                s.push(i64::from(e.step));
                s.push(kind);
                s.push(value.to_string());
            }
            Ok(s)
        })
        .collect()
}

pub(super) async fn events(
    store: &SqlStore,
    id: OperationId,
    after: Option<u64>,
) -> Result<Vec<AgentEvent>, StoreError> {
    let after = after.map_or(-1, i64_of);
    let rows = sqlx::query(
        "SELECT body FROM operation_events WHERE operation_id = $1 AND seq > $2 ORDER BY seq",
    )
    .bind(id.to_string())
    .bind(after)
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|r| from_json(&r.try_get::<String, _>("body")?, "event"))
        .collect()
}
