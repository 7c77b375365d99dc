//! Tool executions: written with a step, or on their own for at-most-once tools (running before
//! the effect, finished right after, and in between the outside job the call waits for), and
//! read back when a step is re-run. A recorded job is never cleared.

use super::statement::{Statement, run_all};
use super::*;
use sqlx::Row;

/// Insert or update tool executions, one statement per [`ROWS_PER_STATEMENT`].
pub(super) fn upsert_tools(execs: &[ToolExecution]) -> Vec<Statement> {
    let now = ts(Utc::now());
    execs
        .chunks(ROWS_PER_STATEMENT)
        .map(|chunk| {
            let mut s = Statement::new(format!(
                "INSERT INTO tool_executions (operation_id, tool_call_id, step_index, tool, effect, status, result, job, updated_at) VALUES {} \
                 ON CONFLICT (operation_id, tool_call_id) DO UPDATE SET step_index = excluded.step_index, status = excluded.status, result = excluded.result, job = COALESCE(excluded.job, tool_executions.job), updated_at = excluded.updated_at",
                placeholders(chunk.len(), 9)
            ));
            for e in chunk {
                s.push(e.operation_id.to_string());
                s.push(e.tool_call_id.as_str());
                s.push(i64_of(e.step_index));
                s.push(e.tool.as_str());
                s.push(enum_str(&e.effect));
                s.push(enum_str(&e.status));
                s.push(e.result.clone());
                s.push(e.job.clone());
                s.push(now.as_str());
            }
            s
        })
        .collect()
}

pub(super) async fn record_tool_execution(
    store: &SqlStore,
    exec: &ToolExecution,
) -> Result<(), StoreError> {
    let mut conn = store.pool.acquire().await?;
    run_all(&mut conn, upsert_tools(std::slice::from_ref(exec))).await
}

pub(super) async fn tool_execution(
    store: &SqlStore,
    id: OperationId,
    tool_call_id: &str,
) -> Result<Option<ToolExecution>, StoreError> {
    let row = sqlx::query("SELECT step_index, tool, effect, status, result, job FROM tool_executions WHERE operation_id = $1 AND tool_call_id = $2")
        .bind(id.to_string())
        .bind(tool_call_id)
        .fetch_optional(&store.pool)
        .await?;
    row.map(|r| {
        Ok(ToolExecution {
            operation_id: id,
            tool_call_id: tool_call_id.to_owned(),
            step_index: u64_of(r.try_get("step_index")?),
            tool: r.try_get("tool")?,
            effect: enum_from(&r.try_get::<String, _>("effect")?, "effect")?,
            status: enum_from(&r.try_get::<String, _>("status")?, "tool status")?,
            result: r.try_get("result")?,
            job: r.try_get("job")?,
        })
    })
    .transpose()
}
