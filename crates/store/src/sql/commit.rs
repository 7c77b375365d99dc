//! The write path: an operation created with its first messages, and a step committed as one
//! transaction (the step row is the idempotency key; then the record, the messages and their
//! order, events, tool executions and interventions).

use super::events::insert_events;
use super::interventions::insert_interventions;
use super::leases::admit;
use super::messages::{upsert_messages, write_order};
use super::notices::notify;
use super::state::{compact_state, step_checkpoint, step_summary};
use super::statement::{Statement, run_all};
use super::tool_executions::upsert_tools;
use super::*;
use rein_core::AgentState;

const OPERATION_COLUMNS: &str = "id, agent, topic_id, trigger_kind, provider, model, status, finish_reason, finish_detail, step_count, max_steps, commit_seq, input_tokens, output_tokens, total_tokens, cost_nanos, approval_requests, cancel_requested, error, parent_operation, created_at, updated_at, finished_at, owner, root_operation, depth";

/// The operation row of a new operation.
pub(super) fn insert_operation(op: &NewOperation) -> Result<Statement, StoreError> {
    let state = &op.state;
    let finish = state.finish.as_ref();
    let tokens = &state.usage.llm.tokens;
    let now = ts(Utc::now());
    let model = state.model.as_ref();
    let delegation = op.spec.delegation.as_ref();
    Ok(Statement::new(format!(
        "INSERT INTO operations ({OPERATION_COLUMNS}, state, next_context, prompt) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)"
    ))
    .arg(state.operation_id.to_string())
    .arg(op.agent.clone())
    .arg(op.topic_id.as_str())
    .arg(enum_str(&op.trigger))
    .arg(model.map(|m| m.provider.to_string()))
    .arg(model.map(|m| m.model.to_string()))
    .arg(enum_str(&state.status))
    .arg(finish.map(|f| enum_str(&f.reason)))
    .arg(finish.and_then(|f| f.detail.clone()))
    .arg(i64::from(state.step_count))
    .arg(state.max_steps.map(i64::from))
    .arg(0i64)
    .arg(i64_of(tokens.input))
    .arg(i64_of(tokens.output))
    .arg(i64_of(tokens.total))
    .arg(i64_of(state.cost.total.nanos()))
    .arg(i64_of(state.usage.human.approval_requests))
    .arg(0i64)
    .arg(error_text(state))
    .arg(op.parent_operation.map(|p| p.to_string()))
    .arg(ts(state.created_at))
    .arg(now.clone())
    .arg(state.status.is_terminal().then_some(now))
    .arg(op.owner.clone())
    .arg(delegation.map(|d| d.root.to_string()))
    .arg(i64::from(delegation.map_or(0, |d| d.depth)))
    .arg(compact_state(state)?)
    .arg(
        op.next_context
            .as_ref()
            .map(|c| to_json(c, "next context"))
            .transpose()?,
    )
    .arg(
        op.prompt
            .as_deref()
            .map(crate::prompt_start)
            .filter(|p| !p.is_empty()),
    ))
}

/// What a new operation was set up with: its spec and its tool manifests' set (recorded first,
/// unless an operation before it recorded the same).
pub(super) fn insert_setup(op: &NewOperation) -> Result<[Statement; 2], StoreError> {
    let (set, hash) = super::manifest_sets::record(&op.state.tool_manifests)?;
    Ok([
        set,
        Statement::new(
            "INSERT INTO operation_setup (operation_id, spec, manifests_hash, first_checkpoint) VALUES ($1, $2, $3, $4)",
        )
        .arg(op.state.operation_id.to_string())
        .arg(to_json(&op.spec, "spec")?)
        .arg(hash)
        .arg(first_checkpoint(op)?),
    ])
}

/// What rebuilding the state before `op`'s first step starts from ([`crate::checkpoint`]).
pub(super) fn first_checkpoint(op: &NewOperation) -> Result<String, StoreError> {
    let next = op
        .next_context
        .as_ref()
        .map(|n| to_json(n, "next context"))
        .transpose()?;
    step_checkpoint(
        &compact_state(&op.state)?,
        next.as_deref(),
        &StateChanges::default(),
    )
}

/// The tool manifests after a step that changed them: their set, and the setup naming it (an
/// operation from before migration 44 drops its inline copy).
fn update_manifests(c: &StepCommit) -> Result<[Statement; 2], StoreError> {
    let (set, hash) = super::manifest_sets::record(&c.state.tool_manifests)?;
    Ok([
        set,
        Statement::new(
            "UPDATE operation_setup SET manifests_hash = $1, tool_manifests = NULL WHERE operation_id = $2",
        )
        .arg(hash)
        .arg(c.operation_id.to_string()),
    ])
}

/// The operation row after step `commit_seq`: counters, usage, cost, status, next context and
/// the compact state. It affects no row when there is no such operation.
fn update_operation(
    c: &StepCommit,
    compact: &str,
    next_context: Option<&str>,
) -> Result<Statement, StoreError> {
    let state = &c.state;
    let finish = state.finish.as_ref();
    let tokens = &state.usage.llm.tokens;
    let now = ts(Utc::now());
    let model = state.model.as_ref();
    Ok(Statement::new(
        "UPDATE operations SET status = $1, finish_reason = $2, finish_detail = $3, step_count = $4, commit_seq = $5, \
         input_tokens = $6, output_tokens = $7, total_tokens = $8, cost_nanos = $9, approval_requests = $10, error = $11, \
         state = $12, next_context = $13, updated_at = $14, finished_at = COALESCE(finished_at, $15), provider = $16, model = $17, \
         activity = CASE WHEN $1 = 'running' THEN activity ELSE NULL END \
         WHERE id = $18",
    )
    .arg(enum_str(&state.status))
    .arg(finish.map(|f| enum_str(&f.reason)))
    .arg(finish.and_then(|f| f.detail.clone()))
    .arg(i64::from(state.step_count))
    .arg(i64_of(c.step_index))
    .arg(i64_of(tokens.input))
    .arg(i64_of(tokens.output))
    .arg(i64_of(tokens.total))
    .arg(i64_of(state.cost.total.nanos()))
    .arg(i64_of(state.usage.human.approval_requests))
    .arg(error_text(state))
    .arg(compact)
    .arg(next_context.map(str::to_owned))
    .arg(now.clone())
    .arg(state.status.is_terminal().then_some(now))
    .arg(model.map(|m| m.provider.to_string()))
    .arg(model.map(|m| m.model.to_string()))
    .arg(state.operation_id.to_string()))
}

fn error_text(state: &AgentState) -> Option<String> {
    state
        .error
        .as_ref()
        .map(|e| format!("{}: {}", e.code, e.message))
}

pub(super) async fn create_operation(
    store: &SqlStore,
    op: &NewOperation,
) -> Result<Created, StoreError> {
    let mut tx = store.begin_write().await?;
    let id = op.state.operation_id.to_string();
    let exists: Option<String> = sqlx::query_scalar("SELECT id FROM operations WHERE id = $1")
        .bind(&id)
        .fetch_optional(&mut *tx)
        .await?;
    if exists.is_some() {
        return Err(StoreError::OperationExists(id));
    }
    // One operation at a time per conversation: queued (no running slot, nothing in the
    // conversation yet) or refused while another holds it.
    let response = op
        .response
        .as_ref()
        .map(|r| super::responses::insert_response(op.owner.as_deref().unwrap_or_default(), r))
        .transpose()?;
    if let Some(queued) = super::topic_gate::admit_to_topic(&mut tx, store.dialect, op).await? {
        let mut statements = super::topic_gate::insert_queued(op)?;
        statements.extend(response);
        run_all(&mut tx, statements).await?;
        tx.commit().await?;
        return Ok(queued);
    }
    if let Some(adm) = &op.admission {
        admit(
            &mut tx,
            store.dialect,
            &id,
            op.owner.as_deref(),
            &adm.limits,
            adm.now,
        )
        .await?;
    }
    let mut statements = new_operation(op)?;
    statements.extend(response);
    if let Some(adm) = &op.admission {
        statements.push(
            Statement::new(
                "UPDATE operations SET lease_owner = $1, lease_until = $2 WHERE id = $3",
            )
            .arg(adm.node.as_str())
            .arg(micros(adm.until))
            .arg(id.as_str()),
        );
    }
    run_all(&mut tx, statements).await?;
    tx.commit().await?;
    Ok(Created::Ready)
}

/// What creating `op` writes: its topic (unless it exists: a topic keeps its first owner, and
/// continuing someone else's conversation is the caller's to refuse), its messages and their
/// order, its record and setup, and a sub-agent's thread.
fn new_operation(op: &NewOperation) -> Result<Vec<Statement>, StoreError> {
    let id = op.state.operation_id.to_string();
    let mut statements = conversation_statements(op)?;
    statements.push(insert_operation(op)?);
    statements.extend(insert_setup(op)?);
    if let Some(t) = &op.thread {
        statements.push(
            Statement::new(
                "INSERT INTO threads (id, topic_id, parent_message_id, operation_id, parent_operation, agent, title, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .arg(id.as_str())
            .arg(op.topic_id.as_str())
            .arg(t.parent_message_id.map(|m| m.to_string()))
            .arg(id.as_str())
            .arg(op.parent_operation.map(|p| p.to_string()).unwrap_or_default())
            .arg(op.agent.clone())
            .arg(t.title.as_str())
            .arg(ts(Utc::now())),
        );
    }
    Ok(statements)
}

/// What puts a new operation's first messages into its conversation: the topic (unless it
/// exists), the active branch through its last message (not for a sub-agent's thread), the
/// messages and their order.
pub(super) fn conversation_statements(op: &NewOperation) -> Result<Vec<Statement>, StoreError> {
    let id = op.state.operation_id.to_string();
    let title = op
        .state
        .messages
        .iter()
        .find(|m| m.role == rein_core::Role::User)
        .and_then(|m| rein_core::conversation::title_from(&m.text_content()));
    let mut statements = vec![
        Statement::new("INSERT INTO topics (id, agent, title, created_at, owner) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING")
            .arg(op.topic_id.as_str())
            .arg(op.agent.clone())
            .arg(title.clone())
            .arg(ts(Utc::now()))
            .arg(op.owner.clone()),
    ];
    if op.thread.is_none() {
        // The conversation's active branch now runs through this operation's last message
        // (its prompt, or the message it regenerates an answer to); a topic created empty
        // takes its title from the prompt.
        let last = op
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role != rein_core::Role::System)
            .map(|m| m.id.to_string());
        statements.push(
            Statement::new(
                "UPDATE topics SET active_message = COALESCE($1, active_message), title = COALESCE(title, $2) WHERE id = $3",
            )
            .arg(last)
            .arg(title)
            .arg(op.topic_id.as_str()),
        );
    }
    let thread = op.thread.as_ref().map(|_| id.as_str());
    statements.extend(upsert_messages(&op.topic_id, thread, &op.state.messages)?);
    let everything = StateChanges {
        kept: 0,
        previous: 0,
        ..Default::default()
    };
    statements.extend(write_order(&id, &op.state, &everything));
    Ok(statements)
}

/// A queued operation's row as it becomes ready: its first state as computed now, its next
/// context, `idle`, and its tool manifests (the process starting it may offer others).
pub(super) fn reset_operation(op: &NewOperation) -> Result<Statement, StoreError> {
    let state = &op.state;
    let model = state.model.as_ref();
    Ok(Statement::new(
        "UPDATE operations SET status = $1, state = $2, next_context = $3, queued = NULL, updated_at = $4, provider = $5, model = $6 \
         WHERE id = $7 AND status = 'queued'",
    )
    .arg(enum_str(&state.status))
    .arg(compact_state(state)?)
    .arg(
        op.next_context
            .as_ref()
            .map(|c| to_json(c, "next context"))
            .transpose()?,
    )
    .arg(ts(Utc::now()))
    .arg(model.map(|m| m.provider.to_string()))
    .arg(model.map(|m| m.model.to_string()))
    .arg(state.operation_id.to_string()))
}

/// A step commit as statements, in order: the step row (the idempotency key: it inserts
/// nothing when the step was committed before), the operation row (it updates nothing when
/// there is no such operation), then messages, their order, events, tool executions,
/// interventions and, on PostgreSQL, the commit notice.
pub(crate) struct StepStatements {
    pub(crate) step: Statement,
    pub(crate) operation: Statement,
    pub(crate) rest: Vec<Statement>,
}

fn step_statements(store: &SqlStore, c: &StepCommit) -> Result<StepStatements, StoreError> {
    let id = c.operation_id.to_string();
    let compact = compact_state(&c.state)?;
    let next_context = c
        .next_context
        .as_ref()
        .map(|n| to_json(n, "next context"))
        .transpose()?;
    let step = Statement::new(
        "INSERT INTO operation_steps (operation_id, step_index, status, instructions, state, created_at, checkpoint) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (operation_id, step_index) DO NOTHING",
    )
    .arg(id.as_str())
    .arg(i64_of(c.step_index))
    .arg(enum_str(&c.state.status))
    .arg(to_json(&c.instructions, "instructions")?)
    .arg(step_summary(&c.state))
    .arg(ts(Utc::now()))
    .arg(step_checkpoint(&compact, next_context.as_deref(), &c.changes)?);
    let mut rest = upsert_messages(&c.topic_id, c.thread_id.as_deref(), &c.changes.messages)?;
    if c.changes.manifests_changed {
        rest.extend(update_manifests(c)?);
    }
    rest.extend(write_order(&id, &c.state, &c.changes));
    rest.extend(insert_events(&id, &c.events)?);
    rest.extend(upsert_tools(&c.tool_executions));
    rest.extend(insert_interventions(&id, &c.interventions)?);
    for child in &c.children {
        rest.extend(new_operation(child)?);
    }
    rest.extend(notify(store, &id));
    Ok(StepStatements {
        step,
        operation: update_operation(c, &compact, next_context.as_deref())?,
        rest,
    })
}

pub(super) async fn commit_step(
    store: &SqlStore,
    c: &StepCommit,
) -> Result<CommitOutcome, StoreError> {
    let statements = step_statements(store, c)?;
    if let Some(writer) = &store.writer {
        return writer.commit(statements, c.operation_id).await;
    }
    let deadline = store.commit_deadline();
    let late = || StoreError::Timeout {
        what: "a step commit",
        after: deadline,
    };
    let until = tokio::time::Instant::now() + deadline;
    let mut conn = tokio::time::timeout_at(until, store.pool.acquire())
        .await
        .map_err(|_| late())??;
    match tokio::time::timeout_at(until, write_step(&mut conn, statements, c.operation_id)).await {
        Ok(outcome) => outcome,
        Err(_) => {
            // Given up mid-statement, the connection may sit inside a transaction the server
            // holds open (a `BEGIN` whose answer never came leaves sqlx nothing to roll back):
            // it is closed, never handed to the next caller. A commit the server made whose
            // answer never came is found as a duplicate on the resume.
            conn.close_on_drop();
            Err(late())
        }
    }
}

/// A step commit through sqlx on `conn` (PostgreSQL), as one transaction.
async fn write_step(
    conn: &mut sqlx::AnyConnection,
    statements: StepStatements,
    operation: OperationId,
) -> Result<CommitOutcome, StoreError> {
    let mut tx = sqlx::Connection::begin(conn).await?;
    if statements.step.run(&mut tx).await? == 0 {
        tx.rollback().await?;
        return Ok(CommitOutcome::Duplicate);
    }
    if statements.operation.run(&mut tx).await? == 0 {
        tx.rollback().await?;
        return Err(StoreError::OperationNotFound(operation.to_string()));
    }
    run_all(&mut tx, statements.rest).await?;
    tx.commit().await?;
    Ok(CommitOutcome::Committed)
}
