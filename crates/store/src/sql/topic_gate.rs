//! One operation at a time per conversation. Creating a top-level operation takes its topic's
//! lock (an advisory transaction lock on PostgreSQL; SQLite's write lock, `BEGIN IMMEDIATE`),
//! looks for an operation of the topic that is idle, running or parked, or queued, and then
//! creates the new one ready, queued behind it, or not at all (`TopicBusy`), in the same
//! transaction: two processes (two servers on one PostgreSQL) cannot both start one. A queued
//! operation writes nothing into the conversation; it is activated, oldest first and only
//! when nothing else of its topic is active, with the messages its starter computes then.

use super::statement::{Statement, run_all};
use super::*;
use rein_core::spec::WhenBusy;
use rein_core::state::Status;
use sqlx::Row;

/// Statuses of a top-level operation that hold its topic.
macro_rules! active {
    () => {
        "('idle', 'running', 'waiting_for_human', 'waiting_for_async_tool', 'waiting_for_sub_agents')"
    };
}

/// Take `topic`'s lock for the rest of `tx` (PostgreSQL; SQLite's write transaction already
/// excludes every other writer).
async fn lock_topic(
    tx: &mut sqlx::AnyConnection,
    dialect: crate::Dialect,
    topic: &str,
) -> Result<(), StoreError> {
    match dialect {
        crate::Dialect::Postgres => {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7305))")
                .bind(topic)
                .fetch_optional(&mut *tx)
                .await?;
        }
        crate::Dialect::Sqlite => {}
    }
    Ok(())
}

/// The operation that holds `topic` (idle, running or parked), else the oldest queued one;
/// never `except`.
async fn holder(
    tx: &mut sqlx::AnyConnection,
    topic: &str,
    except: &str,
) -> Result<Option<(OperationId, Status)>, StoreError> {
    let row = sqlx::query(concat!(
        "SELECT id, status FROM operations WHERE topic_id = $1 AND parent_operation IS NULL AND id <> $2 \
         AND (status IN ",
        active!(),
        " OR status = 'queued') \
         ORDER BY CASE WHEN status = 'queued' THEN 1 ELSE 0 END, created_at, id LIMIT 1"
    ))
    .bind(topic)
    .bind(except)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let id: String = row.try_get("id")?;
    let id = id
        .parse()
        .map_err(|e| StoreError::corrupt("operation id", e))?;
    let status = enum_from(&row.try_get::<String, _>("status")?, "operation status")?;
    Ok(Some((id, status)))
}

/// The operation that holds `topic` (idle, running or parked), else its oldest queued one;
/// never `except`.
pub(super) async fn topic_holder(
    store: &SqlStore,
    topic: &str,
    except: OperationId,
) -> Result<Option<(OperationId, Status)>, StoreError> {
    let mut conn = store.pool.acquire().await?;
    holder(&mut conn, topic, &except.to_string()).await
}

/// What creating `op` must do under its gate: `None` to create it ready, or where it waits.
/// Errs with `TopicBusy` when it asked to be refused.
pub(super) async fn admit_to_topic(
    tx: &mut sqlx::AnyConnection,
    dialect: crate::Dialect,
    op: &NewOperation,
) -> Result<Option<Created>, StoreError> {
    let Some(gate) = &op.gate else {
        return Ok(None);
    };
    lock_topic(tx, dialect, &op.topic_id).await?;
    let id = op.state.operation_id.to_string();
    let Some((behind, status)) = holder(tx, &op.topic_id, &id).await? else {
        return Ok(None);
    };
    match gate.when_busy {
        WhenBusy::Reject => Err(StoreError::TopicBusy {
            topic: op.topic_id.clone(),
            operation: behind.to_string(),
            status: enum_str(&status),
        }),
        WhenBusy::Enqueue | WhenBusy::Interrupt => Ok(Some(Created::Queued { behind, status })),
    }
}

/// The row of a queued operation: its record (status `queued`), setup and what starting it
/// takes; nothing in its conversation.
pub(super) fn insert_queued(op: &NewOperation) -> Result<Vec<Statement>, StoreError> {
    let mut queued = op.clone();
    queued.state.status = Status::Queued;
    let deferred = op
        .gate
        .as_ref()
        .map(|g| to_json(&g.deferred, "deferred start"))
        .transpose()?;
    let mut statements = vec![
        // Its topic exists from now on (a queued first operation of a new conversation), so
        // the conversation can be listed and the operation found by it.
        Statement::new("INSERT INTO topics (id, agent, title, created_at, owner) VALUES ($1, $2, NULL, $3, $4) ON CONFLICT (id) DO NOTHING")
            .arg(op.topic_id.as_str())
            .arg(op.agent.clone())
            .arg(ts(Utc::now()))
            .arg(op.owner.clone()),
        super::commit::insert_operation(&queued)?,
    ];
    statements.extend(super::commit::insert_setup(&queued)?);
    statements.push(
        Statement::new("UPDATE operations SET queued = $1 WHERE id = $2")
            .arg(deferred)
            .arg(op.state.operation_id.to_string()),
    );
    Ok(statements)
}

/// The oldest queued operation of `topic`, taken under the topic's lock (so a queue entry
/// committed just before is seen).
pub(super) async fn next_queued(
    store: &SqlStore,
    topic: &str,
) -> Result<Option<QueuedOperation>, StoreError> {
    let mut tx = store.begin_write().await?;
    lock_topic(&mut tx, store.dialect, topic).await?;
    let row = sqlx::query(
        "SELECT id, queued FROM operations WHERE topic_id = $1 AND parent_operation IS NULL AND status = 'queued' \
         ORDER BY created_at, id LIMIT 1",
    )
    .bind(topic)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let id: String = row.try_get("id")?;
    let deferred: Option<String> = row.try_get("queued")?;
    Ok(Some(QueuedOperation {
        id: id
            .parse()
            .map_err(|e| StoreError::corrupt("operation id", e))?,
        deferred: match deferred {
            Some(d) => from_json(&d, "deferred start")?,
            None => serde_json::Value::Null,
        },
    }))
}

/// Activate queued operation `op` (its first state as computed now): only when it is still
/// queued, is the oldest queued one of its topic, and nothing else of the topic is idle,
/// running or parked. Its messages join the conversation and it becomes `idle`, in one
/// transaction; `false` when it may not start yet (or another process started it).
pub(super) async fn activate_queued(
    store: &SqlStore,
    op: &NewOperation,
) -> Result<bool, StoreError> {
    let mut tx = store.begin_write().await?;
    lock_topic(&mut tx, store.dialect, &op.topic_id).await?;
    let id = op.state.operation_id.to_string();
    match holder(&mut tx, &op.topic_id, "").await? {
        Some((first, Status::Queued)) if first == op.state.operation_id => {}
        _ => {
            tx.rollback().await?;
            return Ok(false);
        }
    }
    let mut statements = super::commit::conversation_statements(op)?;
    statements.push(super::commit::reset_operation(op)?);
    let (set, hash) = super::manifest_sets::record(&op.state.tool_manifests)?;
    statements.push(set);
    statements.push(
        Statement::new(
            "UPDATE operation_setup SET manifests_hash = $1, tool_manifests = NULL, first_checkpoint = $2 WHERE operation_id = $3",
        )
        .arg(hash)
        .arg(super::commit::first_checkpoint(op)?)
        .arg(id.as_str()),
    );
    run_all(&mut tx, statements).await?;
    tx.commit().await?;
    tracing::debug!(operation = %id, topic = %op.topic_id, "queued operation activated");
    Ok(true)
}

/// End queued operation `id` without running it (cancelled, or the conversation was deleted);
/// `false` when it is no longer queued.
pub(super) async fn drop_queued(
    store: &SqlStore,
    id: OperationId,
    state: &rein_core::AgentState,
) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE operations SET status = $1, state = $2, queued = NULL, updated_at = $3, finished_at = $3, next_context = NULL \
         WHERE id = $4 AND status = 'queued'",
    )
    .bind(enum_str(&state.status))
    .bind(super::state::compact_state(state)?)
    .bind(ts(Utc::now()))
    .bind(id.to_string())
    .execute(&store.pool)
    .await?
    .rows_affected();
    Ok(n > 0)
}

/// Topics with a queued operation and nothing idle, running or parked: what a recovery sweep
/// starts (the process that ended the operation before them died, or runs elsewhere).
pub(super) async fn stalled_topics(store: &SqlStore) -> Result<Vec<String>, StoreError> {
    let rows = sqlx::query(concat!(
        "SELECT DISTINCT q.topic_id AS topic_id FROM operations q WHERE q.status = 'queued' AND q.parent_operation IS NULL \
         AND NOT EXISTS (SELECT 1 FROM operations a WHERE a.topic_id = q.topic_id AND a.parent_operation IS NULL AND a.status IN ",
        active!(),
        ") ORDER BY q.topic_id"
    ))
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|r| r.try_get::<String, _>("topic_id").map_err(StoreError::from))
        .collect()
}
