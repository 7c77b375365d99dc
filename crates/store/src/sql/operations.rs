//! An operation's record: reading it (one, by status, a list, its steps) and the small
//! updates made outside a step (what it is doing, recovery notes, a cancellation request).

use super::statement::Statement;
use super::*;
use rein_core::Usd;
use rein_core::state::FinishReason;
use sqlx::Row;
use sqlx::any::AnyRow;

pub(super) fn record(row: &AnyRow) -> Result<OperationRecord, StoreError> {
    let s = |c: &str| row.try_get::<String, _>(c);
    let o = |c: &str| row.try_get::<Option<String>, _>(c);
    let n = |c: &str| row.try_get::<i64, _>(c).map(u64_of);
    let id: String = s("id")?;
    Ok(OperationRecord {
        id: id
            .parse()
            .map_err(|e| StoreError::corrupt("operation id", e))?,
        agent: o("agent")?,
        topic_id: s("topic_id")?,
        trigger: enum_from(&s("trigger_kind")?, "trigger")?,
        provider: o("provider")?,
        model: o("model")?,
        status: enum_from(&s("status")?, "status")?,
        finish_reason: o("finish_reason")?
            .map(|r| enum_from::<FinishReason>(&r, "finish reason"))
            .transpose()?,
        finish_detail: o("finish_detail")?,
        step_count: n("step_count")?,
        max_steps: row.try_get::<Option<i64>, _>("max_steps")?.map(u64_of),
        commit_seq: n("commit_seq")?,
        input_tokens: n("input_tokens")?,
        output_tokens: n("output_tokens")?,
        total_tokens: n("total_tokens")?,
        cost: Usd::from_nanos(n("cost_nanos")?),
        approval_requests: n("approval_requests")?,
        cancel_requested: n("cancel_requested")? != 0,
        error: o("error")?,
        parent_operation: operation_id(o("parent_operation")?, "parent operation")?,
        root_operation: operation_id(o("root_operation")?, "root operation")?,
        depth: n("depth")?,
        created_at: parse_ts(&s("created_at")?, "created_at")?,
        updated_at: parse_ts(&s("updated_at")?, "updated_at")?,
        finished_at: o("finished_at")?
            .map(|t| parse_ts(&t, "finished_at"))
            .transpose()?,
        owner: o("owner")?,
        prompt: o("prompt")?,
        recovery: match o("recovery_error")? {
            None => None,
            Some(reason) => Some(crate::RecoveryNote {
                reason,
                attempts: n("recovery_attempts")?,
                retry_at: row
                    .try_get::<Option<i64>, _>("recovery_retry_at")?
                    .map(|us| from_micros(us, "recovery_retry_at"))
                    .transpose()?,
            }),
        },
        activity: o("activity")?.and_then(|t| serde_json::from_str(&t).ok()),
    })
}

/// An optional operation id column.
fn operation_id(
    column: Option<String>,
    what: &'static str,
) -> Result<Option<OperationId>, StoreError> {
    column
        .map(|id| id.parse().map_err(|e| StoreError::corrupt(what, e)))
        .transpose()
}

/// The columns a record is read from.
pub(super) const RECORD_COLUMNS: &str = "id, agent, topic_id, trigger_kind, provider, model, status, finish_reason, finish_detail, step_count, max_steps, commit_seq, input_tokens, output_tokens, total_tokens, cost_nanos, approval_requests, cancel_requested, error, parent_operation, root_operation, depth, created_at, updated_at, finished_at, owner, recovery_error, recovery_attempts, recovery_retry_at, activity, prompt";

pub(super) async fn operation(
    store: &SqlStore,
    id: OperationId,
) -> Result<Option<OperationRecord>, StoreError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {RECORD_COLUMNS} FROM operations WHERE id = $1"
    )))
    .bind(id.to_string())
    .fetch_optional(&store.pool)
    .await?;
    row.as_ref().map(record).transpose()
}

pub(super) async fn operation_status(
    store: &SqlStore,
    id: OperationId,
) -> Result<Option<rein_core::state::Status>, StoreError> {
    let status: Option<String> = sqlx::query_scalar("SELECT status FROM operations WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&store.pool)
        .await?;
    status.map(|s| enum_from(&s, "status")).transpose()
}

pub(super) async fn list_operations(
    store: &SqlStore,
    filter: &OperationFilter,
) -> Result<Vec<OperationRecord>, StoreError> {
    let (sql, binds) = list_statement(filter);
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for b in binds {
        q = q.bind(b);
    }
    let rows = q
        .bind(i64::from(filter.limit))
        .fetch_all(&store.pool)
        .await?;
    rows.iter().map(record).collect()
}

/// The statement that lists operations matching `filter`, and its arguments but the last
/// (the limit). Which index serves it is SQLite's choice by its statistics: given an owner and
/// a conversation, the conversation's (see the writer's `optimize`).
pub(super) fn list_statement(filter: &OperationFilter) -> (String, Vec<String>) {
    // Placeholders are numbered as the optional conditions are added.
    let mut conditions = Vec::new();
    let mut binds: Vec<String> = Vec::new();
    if let Some(s) = filter.status {
        binds.push(enum_str(&s));
        conditions.push(format!("status = ${}", binds.len()));
    }
    if let Some(owner) = &filter.owner {
        binds.push(owner.clone());
        conditions.push(format!("owner = ${}", binds.len()));
    }
    if let Some(agent) = &filter.agent {
        binds.push(agent.clone());
        conditions.push(format!("agent = ${}", binds.len()));
    }
    if let Some(parent) = &filter.parent {
        binds.push(parent.to_string());
        conditions.push(format!("parent_operation = ${}", binds.len()));
    }
    if let Some(topic) = &filter.topic {
        binds.push(topic.clone());
        conditions.push(format!("topic_id = ${}", binds.len()));
    }
    if filter.top_level {
        conditions.push("parent_operation IS NULL".to_owned());
    }
    if let Some(node) = &filter.not_leased_by {
        binds.push(node.clone());
        conditions.push(format!(
            "(lease_owner IS NULL OR lease_owner <> ${})",
            binds.len()
        ));
    }
    let filter_sql = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conditions.join(" AND "))
    };
    let sql = format!(
        "SELECT {RECORD_COLUMNS} FROM operations {filter_sql} ORDER BY created_at DESC, id DESC LIMIT ${}",
        binds.len() + 1
    );
    (sql, binds)
}

pub(super) async fn steps(
    store: &SqlStore,
    id: OperationId,
) -> Result<Vec<StepRecord>, StoreError> {
    let rows = sqlx::query("SELECT step_index, status, instructions, created_at FROM operation_steps WHERE operation_id = $1 ORDER BY step_index")
        .bind(id.to_string())
        .fetch_all(&store.pool)
        .await?;
    rows.iter()
        .map(|r| {
            Ok(StepRecord {
                step_index: u64_of(r.try_get("step_index")?),
                status: enum_from(&r.try_get::<String, _>("status")?, "status")?,
                instructions: from_json(&r.try_get::<String, _>("instructions")?, "instructions")?,
                created_at: parse_ts(&r.try_get::<String, _>("created_at")?, "created_at")?,
            })
        })
        .collect()
}

pub(super) async fn set_activity(
    store: &SqlStore,
    id: OperationId,
    activity: &crate::Activity,
) -> Result<(), StoreError> {
    let text = to_json(activity, "activity")?;
    // Only while it runs: a late write after the run ended changes nothing.
    let update = Statement::new(
        "UPDATE operations SET status = CASE WHEN status = 'idle' THEN 'running' ELSE status END, \
         activity = $1 WHERE id = $2 AND status IN ('idle', 'running')",
    )
    .arg(text)
    .arg(id.to_string());
    match &store.writer {
        Some(writer) => {
            writer.write(vec![update]).await?;
        }
        None => {
            let mut conn = store.pool.acquire().await?;
            update.run(&mut conn).await?;
        }
    }
    Ok(())
}

pub(super) async fn note_recovery_failure(
    store: &SqlStore,
    id: OperationId,
    reason: &str,
    retry_at: DateTime<Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE operations SET recovery_error = $1, recovery_attempts = recovery_attempts + 1, \
         recovery_retry_at = $2 WHERE id = $3",
    )
    .bind(reason)
    .bind(micros(retry_at))
    .bind(id.to_string())
    .execute(&store.pool)
    .await?;
    Ok(())
}

pub(super) async fn clear_recovery(store: &SqlStore, id: OperationId) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE operations SET recovery_error = NULL, recovery_attempts = 0, recovery_retry_at = NULL \
         WHERE id = $1 AND recovery_error IS NOT NULL",
    )
    .bind(id.to_string())
    .execute(&store.pool)
    .await?;
    Ok(())
}

pub(super) async fn request_cancel(store: &SqlStore, id: OperationId) -> Result<bool, StoreError> {
    let n =
        sqlx::query("UPDATE operations SET cancel_requested = 1, updated_at = $1 WHERE id = $2")
            .bind(ts(Utc::now()))
            .bind(id.to_string())
            .execute(&store.pool)
            .await?
            .rows_affected();
    Ok(n > 0)
}

/// Which of `ids` have a cancel request, in one query per 500 of them.
pub(super) async fn cancels_requested(
    store: &SqlStore,
    ids: &[OperationId],
) -> Result<Vec<OperationId>, StoreError> {
    let mut out = Vec::new();
    for chunk in ids.chunks(ROWS_PER_STATEMENT) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT id FROM operations WHERE cancel_requested <> 0 AND id IN ({})",
            marks.join(", ")
        );
        let mut q = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql));
        for id in chunk {
            q = q.bind(id.to_string());
        }
        for id in q.fetch_all(&store.pool).await? {
            out.push(
                id.parse()
                    .map_err(|_| StoreError::corrupt("operation id", id.clone()))?,
            );
        }
    }
    Ok(out)
}

/// Rows by state, for a metrics scrape: operations by status, task fires by status and skip
/// reason (its code, the text before any `:`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// `(status, operations)`.
    pub operations: Vec<(String, u64)>,
    /// `(status, reason code or empty, fires)`.
    pub fires: Vec<(String, String, u64)>,
}

impl SqlStore {
    /// Operations by status and task fires by status and reason, counted in the database.
    pub async fn counts(&self) -> Result<Counts, StoreError> {
        let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM operations GROUP BY status")
            .fetch_all(&self.pool)
            .await?;
        let mut counts = Counts::default();
        for r in &rows {
            counts
                .operations
                .push((r.try_get("status")?, u64_of(r.try_get::<i64, _>("n")?)));
        }
        let rows = sqlx::query(
            "SELECT status, reason, COUNT(*) AS n FROM task_deliveries GROUP BY status, reason",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut fires: std::collections::BTreeMap<(String, String), u64> = Default::default();
        for r in &rows {
            let reason: Option<String> = r.try_get("reason")?;
            let code = reason
                .as_deref()
                .map(|r| r.split(':').next().unwrap_or(r).trim().to_owned())
                .unwrap_or_default();
            *fires.entry((r.try_get("status")?, code)).or_default() +=
                u64_of(r.try_get::<i64, _>("n")?);
        }
        counts.fires = fires.into_iter().map(|((s, c), n)| (s, c, n)).collect();
        Ok(counts)
    }
}
