//! The write path: an operation created with its first messages, and a step committed as one
//! transaction (the step row is the idempotency key; then the record, the messages and their
//! order, events, tool executions and interventions).

use super::events::insert_events;
use super::interventions::insert_interventions;
use super::leases::admit;
use super::messages::{upsert_messages, write_order};
use super::notices::notify;
use super::state::{compact_state, step_summary};
use super::tool_executions::upsert_tools;
use super::*;
use rein_core::AgentState;
use rein_core::phase::RuntimeContext;

const OPERATION_COLUMNS: &str = "id, agent, topic_id, trigger_kind, provider, model, status, finish_reason, finish_detail, step_count, max_steps, commit_seq, input_tokens, output_tokens, total_tokens, cost_nanos, approval_requests, cancel_requested, error, parent_operation, created_at, updated_at, finished_at, owner";

/// Write the operation row: inserted with `insert`, else updated (`false` when there is no
/// such operation). The tool manifests are written when `manifests_changed`.
async fn write_operation(
    tx: &mut sqlx::AnyConnection,
    state: &AgentState,
    next: Option<&RuntimeContext>,
    commit_seq: u64,
    insert: Option<&NewOperation>,
    manifests_changed: bool,
) -> Result<bool, StoreError> {
    let finish = state.finish.as_ref();
    let tokens = &state.usage.llm.tokens;
    let state_text = compact_state(state)?;
    let manifests = manifests_changed
        .then(|| to_json(&*state.tool_manifests, "tool manifests"))
        .transpose()?;
    let next_text = next.map(|c| to_json(c, "next context")).transpose()?;
    let now = ts(Utc::now());
    let finished_at = state.status.is_terminal().then(|| now.clone());
    let error = state
        .error
        .as_ref()
        .map(|e| format!("{}: {}", e.code, e.message));
    let model = state.model.as_ref();
    if let Some(op) = insert {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO operations ({OPERATION_COLUMNS}, state, next_context, spec, tool_manifests) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28)"
        )))
        .bind(state.operation_id.to_string())
        .bind(op.agent.clone())
        .bind(op.topic_id.clone())
        .bind(enum_str(&op.trigger))
        .bind(model.map(|m| m.provider.to_string()))
        .bind(model.map(|m| m.model.to_string()))
        .bind(enum_str(&state.status))
        .bind(finish.map(|f| enum_str(&f.reason)))
        .bind(finish.and_then(|f| f.detail.clone()))
        .bind(i64::from(state.step_count))
        .bind(state.max_steps.map(i64::from))
        .bind(i64_of(commit_seq))
        .bind(i64_of(tokens.input))
        .bind(i64_of(tokens.output))
        .bind(i64_of(tokens.total))
        .bind(i64_of(state.cost.total.nanos()))
        .bind(i64_of(state.usage.human.approval_requests))
        .bind(0i64)
        .bind(error)
        .bind(op.parent_operation.map(|p| p.to_string()))
        .bind(ts(state.created_at))
        .bind(now.clone())
        .bind(finished_at)
        .bind(op.owner.clone())
        .bind(state_text)
        .bind(next_text)
        .bind(to_json(&op.spec, "spec")?)
        .bind(manifests)
        .execute(tx)
        .await?;
        Ok(true)
    } else {
        let n = sqlx::query(
            "UPDATE operations SET status = $1, finish_reason = $2, finish_detail = $3, step_count = $4, commit_seq = $5, \
             input_tokens = $6, output_tokens = $7, total_tokens = $8, cost_nanos = $9, approval_requests = $10, error = $11, \
             state = $12, next_context = $13, updated_at = $14, finished_at = COALESCE(finished_at, $15), provider = $16, model = $17, \
             activity = CASE WHEN $1 = 'running' THEN activity ELSE NULL END, \
             tool_manifests = COALESCE($19, tool_manifests) \
             WHERE id = $18",
        )
        .bind(enum_str(&state.status))
        .bind(finish.map(|f| enum_str(&f.reason)))
        .bind(finish.and_then(|f| f.detail.clone()))
        .bind(i64::from(state.step_count))
        .bind(i64_of(commit_seq))
        .bind(i64_of(tokens.input))
        .bind(i64_of(tokens.output))
        .bind(i64_of(tokens.total))
        .bind(i64_of(state.cost.total.nanos()))
        .bind(i64_of(state.usage.human.approval_requests))
        .bind(error)
        .bind(state_text)
        .bind(next_text)
        .bind(now)
        .bind(finished_at)
        .bind(model.map(|m| m.provider.to_string()))
        .bind(model.map(|m| m.model.to_string()))
        .bind(state.operation_id.to_string())
        .bind(manifests)
        .execute(tx)
        .await?
        .rows_affected();
        Ok(n > 0)
    }
}

pub(super) async fn create_operation(
    store: &SqlStore,
    op: &NewOperation,
) -> Result<(), StoreError> {
    let mut tx = store.begin_write().await?;
    let id = op.state.operation_id.to_string();
    let exists: Option<String> = sqlx::query_scalar("SELECT id FROM operations WHERE id = $1")
        .bind(&id)
        .fetch_optional(&mut *tx)
        .await?;
    if exists.is_some() {
        return Err(StoreError::OperationExists(id));
    }
    if let Some(adm) = &op.admission {
        admit(
            &mut tx,
            store.postgres,
            &id,
            op.owner.as_deref(),
            &adm.limits,
            adm.now,
        )
        .await?;
    }
    // A topic keeps its first owner: continuing someone else's conversation is the
    // caller's to refuse (it checks `topic_owner` first).
    sqlx::query("INSERT INTO topics (id, agent, title, created_at, owner) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING")
        .bind(op.topic_id.clone())
        .bind(op.agent.clone())
        .bind(op.state.messages.iter().find(|m| m.role == rein_core::Role::User).map(|m| m.text_content().chars().take(80).collect::<String>()))
        .bind(ts(Utc::now()))
        .bind(op.owner.clone())
        .execute(&mut *tx)
        .await?;
    upsert_messages(&mut tx, &op.topic_id, &op.state.messages).await?;
    write_order(
        &mut tx,
        &id,
        &op.state,
        &StateChanges {
            kept: 0,
            previous: 0,
            ..Default::default()
        },
    )
    .await?;
    write_operation(
        &mut tx,
        &op.state,
        op.next_context.as_ref(),
        0,
        Some(op),
        true,
    )
    .await?;
    if let Some(adm) = &op.admission {
        sqlx::query("UPDATE operations SET lease_owner = $1, lease_until = $2 WHERE id = $3")
            .bind(&adm.node)
            .bind(ts(adm.until))
            .bind(&id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

pub(super) async fn commit_step(
    store: &SqlStore,
    c: &StepCommit,
) -> Result<CommitOutcome, StoreError> {
    let mut tx = store.begin_write().await?;
    let id = c.operation_id.to_string();
    // The idempotency key: a repeated commit of the same step writes nothing.
    let inserted = sqlx::query(
        "INSERT INTO operation_steps (operation_id, step_index, status, instructions, state, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (operation_id, step_index) DO NOTHING",
    )
    .bind(&id)
    .bind(i64_of(c.step_index))
    .bind(enum_str(&c.state.status))
    .bind(to_json(&c.instructions, "instructions")?)
    .bind(step_summary(&c.state))
    .bind(ts(Utc::now()))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        tx.rollback().await?;
        return Ok(CommitOutcome::Duplicate);
    }
    // The record first: an operation that does not exist writes nothing else.
    if !write_operation(
        &mut tx,
        &c.state,
        c.next_context.as_ref(),
        c.step_index,
        None,
        c.changes.manifests_changed,
    )
    .await?
    {
        tx.rollback().await?;
        return Err(StoreError::OperationNotFound(id));
    }
    upsert_messages(&mut tx, &c.topic_id, &c.changes.messages).await?;
    write_order(&mut tx, &id, &c.state, &c.changes).await?;
    insert_events(&mut tx, &id, &c.events).await?;
    if !c.tool_executions.is_empty() {
        upsert_tools(&mut tx, &c.tool_executions).await?;
    }
    insert_interventions(&mut tx, &id, &c.interventions).await?;
    notify(store, &mut tx, &id).await?;
    tx.commit().await?;
    Ok(CommitOutcome::Committed)
}
