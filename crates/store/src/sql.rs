//! [`Store`] over SQLite or PostgreSQL through sqlx's `Any` driver, with one portable schema.

use crate::Store;
use crate::error::StoreError;
use crate::records::*;
use crate::schema::migrate;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::document::{Document, DocumentKind};
use rein_core::phase::RuntimeContext;
use rein_core::state::FinishReason;
use rein_core::{AgentEvent, AgentState, Message, MessageId, OperationId, ToolCall, Usd};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};
use std::sync::{Arc, Once};
use std::time::Duration;

/// SQLite durability: `Normal` (WAL default: a power loss may drop the last commits, never
/// corrupt) or `Full` (every commit synced).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// `PRAGMA synchronous=NORMAL`.
    #[default]
    Normal,
    /// `PRAGMA synchronous=FULL`.
    Full,
}

/// A store on SQLite or PostgreSQL.
#[derive(Clone)]
pub struct SqlStore {
    pub(crate) pool: AnyPool,
    postgres: bool,
}

pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

pub(crate) fn parse_ts(s: &str, what: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::corrupt(what, e))
}

fn enum_str<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn enum_from<T: serde::de::DeserializeOwned>(s: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|e| StoreError::corrupt(what, e))
}

fn to_json<T: serde::Serialize>(v: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::corrupt(what, e))
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::corrupt(what, e))
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The state as stored in `operations.state`: everything but its messages (kept in the topic,
/// their order in `operation_messages`) and its tool manifests (`operations.tool_manifests`,
/// written when they change). What is left is small and changes with every step.
pub(crate) fn compact_state(state: &AgentState) -> Result<String, StoreError> {
    let compact = AgentState {
        messages: Vec::new(),
        tool_manifests: Default::default(),
        ..state.clone()
    };
    to_json(&compact, "state")
}

/// What a step row keeps: counters and outcome after the step. The latest full state lives in
/// the operation row and messages and events in their own tables, so a per-step snapshot would
/// only repeat them.
fn step_summary(state: &AgentState) -> String {
    serde_json::json!({
        "step_count": state.step_count,
        "status": state.status,
        "tokens": state.usage.llm.tokens.total,
        "cost": state.cost.total,
        "message_count": state.messages.len(),
        "next_event_seq": state.next_event_seq,
        "finish": state.finish,
        "error": state.error,
    })
    .to_string()
}

static DRIVERS: Once = Once::new();

impl SqlStore {
    /// Open `target`: a `postgres://` URL, or a SQLite file path (created if missing).
    pub async fn open(target: &str, synchronous: Synchronous) -> Result<Self, StoreError> {
        DRIVERS.call_once(sqlx::any::install_default_drivers);
        let postgres = target.starts_with("postgres://") || target.starts_with("postgresql://");
        let (url, shown) = if postgres {
            (target.to_owned(), redact(target))
        } else {
            let path = target.strip_prefix("sqlite://").unwrap_or(target);
            if let Some(dir) = std::path::Path::new(path)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                && !dir.exists()
            {
                return Err(StoreError::Connect {
                    target: path.into(),
                    message: format!("directory {} does not exist", dir.display()),
                });
            }
            (format!("sqlite://{path}?mode=rwc"), path.to_owned())
        };
        let sync = match synchronous {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        };
        // One direct connection first: a refused or misconfigured database fails at once with
        // its real error instead of after the pool's acquire timeout.
        {
            use sqlx::Connection;
            let conn =
                sqlx::AnyConnection::connect(&url)
                    .await
                    .map_err(|e| StoreError::Connect {
                        target: shown.clone(),
                        message: e.to_string(),
                    })?;
            let _ = conn.close().await;
        }
        let pool = AnyPoolOptions::new()
            .max_connections(if postgres { 8 } else { 4 })
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if conn.backend_name() == "SQLite" {
                        for pragma in ["PRAGMA journal_mode=WAL", "PRAGMA busy_timeout=10000"] {
                            sqlx::query(pragma).execute(&mut *conn).await?;
                        }
                        sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA synchronous={sync}")))
                            .execute(&mut *conn)
                            .await?;
                    }
                    Ok(())
                })
            })
            .connect(&url)
            .await
            .map_err(|e| StoreError::Connect {
                target: shown.clone(),
                message: e.to_string(),
            })?;
        migrate(&pool).await?;
        Ok(Self { pool, postgres })
    }

    /// A write transaction. On SQLite it takes the write lock up front (`BEGIN IMMEDIATE`):
    /// a deferred transaction that reads first and writes later cannot wait for a concurrent
    /// writer (SQLite refuses the lock upgrade with `database is locked` at once, whatever the
    /// busy timeout), so concurrent operations would fail each other's commits.
    pub(crate) async fn begin_write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        if self.postgres {
            self.pool.begin().await
        } else {
            self.pool.begin_with("BEGIN IMMEDIATE").await
        }
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.postgres
    }

    /// Close the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn load_messages(&self, topic_id: &str) -> Result<Vec<Message>, StoreError> {
        let rows =
            sqlx::query("SELECT body FROM messages WHERE topic_id = $1 ORDER BY created_at, id")
                .bind(topic_id)
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| from_json::<Message>(&r.try_get::<String, _>("body")?, "message"))
            .collect()
    }
}

/// A URL with its password removed, for error messages.
/// A database address as shown in messages: a URL's password replaced by `***`.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
            None => url.to_owned(),
        },
        _ => url.to_owned(),
    }
}

fn record(row: &AnyRow) -> Result<OperationRecord, StoreError> {
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
        parent_operation: o("parent_operation")?,
        created_at: parse_ts(&s("created_at")?, "created_at")?,
        updated_at: parse_ts(&s("updated_at")?, "updated_at")?,
        finished_at: o("finished_at")?
            .map(|t| parse_ts(&t, "finished_at"))
            .transpose()?,
        owner: o("owner")?,
        recovery: match o("recovery_error")? {
            None => None,
            Some(reason) => Some(crate::RecoveryNote {
                reason,
                attempts: n("recovery_attempts")?,
                retry_at: o("recovery_retry_at")?
                    .map(|t| parse_ts(&t, "recovery_retry_at"))
                    .transpose()?,
            }),
        },
        activity: o("activity")?.and_then(|t| serde_json::from_str(&t).ok()),
    })
}

/// The columns a record is read from.
const RECORD_COLUMNS: &str = "id, agent, topic_id, trigger_kind, provider, model, status, finish_reason, finish_detail, step_count, max_steps, commit_seq, input_tokens, output_tokens, total_tokens, cost_nanos, approval_requests, cancel_requested, error, parent_operation, created_at, updated_at, finished_at, owner, recovery_error, recovery_attempts, recovery_retry_at, activity";

/// Refuse (`AtCapacity`) when one more run would cross `limits`: counts operations other than
/// `id` under a live lease, for `owner` and in all. On PostgreSQL the transaction first takes
/// an advisory lock, so concurrent admissions are decided one at a time (SQLite's write lock
/// already serializes them).
async fn admit(
    tx: &mut sqlx::AnyConnection,
    postgres: bool,
    id: &str,
    owner: Option<&str>,
    limits: &crate::RunLimits,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    if limits.per_owner.is_none() && limits.total.is_none() {
        return Ok(());
    }
    if postgres {
        sqlx::query("SELECT pg_advisory_xact_lock(727001)")
            .execute(&mut *tx)
            .await?;
    }
    let running = |owner: Option<&str>| {
        let sql = match owner {
            Some(_) => {
                "SELECT COUNT(*) FROM operations WHERE lease_owner IS NOT NULL AND lease_until > $1 AND id <> $2 AND owner = $3"
            }
            None => {
                "SELECT COUNT(*) FROM operations WHERE lease_owner IS NOT NULL AND lease_until > $1 AND id <> $2"
            }
        };
        let mut q = sqlx::query_scalar::<_, i64>(sql)
            .bind(ts(now))
            .bind(id.to_owned());
        if let Some(o) = owner {
            q = q.bind(o.to_owned());
        }
        q
    };
    if let (Some(limit), Some(o)) = (limits.per_owner, owner) {
        let n = u64_of(running(Some(o)).fetch_one(&mut *tx).await?);
        if n >= limit {
            return Err(StoreError::AtCapacity {
                scope: crate::CapacityScope::Owner,
                limit,
            });
        }
    }
    if let Some(limit) = limits.total {
        let n = u64_of(running(None).fetch_one(&mut *tx).await?);
        if n >= limit {
            return Err(StoreError::AtCapacity {
                scope: crate::CapacityScope::All,
                limit,
            });
        }
    }
    Ok(())
}

const OPERATION_COLUMNS: &str = "id, agent, topic_id, trigger_kind, provider, model, status, finish_reason, finish_detail, step_count, max_steps, commit_seq, input_tokens, output_tokens, total_tokens, cost_nanos, approval_requests, cancel_requested, error, parent_operation, created_at, updated_at, finished_at, owner";

/// Rows a multi-row statement may carry: SQLite allows 32,766 bound values, PostgreSQL 65,535.
const ROWS_PER_STATEMENT: usize = 500;

/// `($1, $2, …), ($k+1, …)` for `rows` rows of `columns` placeholders.
fn placeholders(rows: usize, columns: usize) -> String {
    let mut sql = String::with_capacity(rows * columns * 5);
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..columns {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(r * columns + c + 1).to_string());
        }
        sql.push(')');
    }
    sql
}

/// Insert or update `messages` of `topic_id`, one statement per [`ROWS_PER_STATEMENT`].
async fn upsert_messages(
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
async fn write_order(
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

/// Insert or update tool executions, one statement per [`ROWS_PER_STATEMENT`].
async fn upsert_tools(
    tx: &mut sqlx::AnyConnection,
    execs: &[ToolExecution],
) -> Result<(), StoreError> {
    let now = ts(Utc::now());
    for chunk in execs.chunks(ROWS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO tool_executions (operation_id, tool_call_id, step_index, tool, effect, status, result, updated_at) VALUES {} \
             ON CONFLICT (operation_id, tool_call_id) DO UPDATE SET step_index = excluded.step_index, status = excluded.status, result = excluded.result, updated_at = excluded.updated_at",
            placeholders(chunk.len(), 8)
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for e in chunk {
            q = q
                .bind(e.operation_id.to_string())
                .bind(e.tool_call_id.clone())
                .bind(i64_of(e.step_index))
                .bind(e.tool.clone())
                .bind(enum_str(&e.effect))
                .bind(enum_str(&e.status))
                .bind(e.result.clone())
                .bind(now.clone());
        }
        q.execute(&mut *tx).await?;
    }
    Ok(())
}

/// Write the operation row from a state.
/// The spec of an operation started before specs were stored, rebuilt from its state. Its
/// allow-list was never kept, so none is assumed.
fn legacy_spec(state: &AgentState) -> rein_core::spec::OperationSpec {
    rein_core::spec::OperationSpec {
        model: state.model.clone(),
        system_role: state
            .messages
            .iter()
            .find(|m| m.role == rein_core::Role::System)
            .map(|m| m.text_content()),
        approval: state.intervention.approval_mode,
        max_steps: state.max_steps,
        budget: state.budget.clone(),
        approval_timeout_secs: state
            .metadata
            .extra
            .get("approval_timeout_secs")
            .and_then(serde_json::Value::as_f64)
            .map(|s| s.max(0.0).round() as u64),
        working_directory: state.metadata.working_directory.clone(),
        owner: state
            .metadata
            .extra
            .get("user_id")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        agent: state
            .metadata
            .agent_id
            .clone()
            .map(|name| rein_core::spec::AgentRef {
                name,
                version: None,
            }),
        ..Default::default()
    }
}

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

impl Store for SqlStore {
    fn create_operation<'a>(
        &'a self,
        op: &'a NewOperation,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let id = op.state.operation_id.to_string();
            let exists: Option<String> =
                sqlx::query_scalar("SELECT id FROM operations WHERE id = $1").bind(&id).fetch_optional(&mut *tx).await?;
            if exists.is_some() {
                return Err(StoreError::OperationExists(id));
            }
            if let Some(adm) = &op.admission {
                admit(&mut tx, self.postgres, &id, op.owner.as_deref(), &adm.limits, adm.now).await?;
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
            write_order(&mut tx, &id, &op.state, &StateChanges { kept: 0, previous: 0, ..Default::default() }).await?;
            write_operation(&mut tx, &op.state, op.next_context.as_ref(), 0, Some(op), true).await?;
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
        .boxed()
    }

    fn commit_step<'a>(
        &'a self,
        c: &'a StepCommit,
    ) -> BoxFuture<'a, Result<CommitOutcome, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
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
            if !write_operation(&mut tx, &c.state, c.next_context.as_ref(), c.step_index, None, c.changes.manifests_changed).await? {
                tx.rollback().await?;
                return Err(StoreError::OperationNotFound(id));
            }
            upsert_messages(&mut tx, &c.topic_id, &c.changes.messages).await?;
            write_order(&mut tx, &id, &c.state, &c.changes).await?;
            // One statement for all of the step's events.
            if !c.events.is_empty() {
                let mut q = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO operation_events (operation_id, seq, step, kind, body) VALUES {} ON CONFLICT (operation_id, seq) DO NOTHING",
                    placeholders(c.events.len(), 5)
                )));
                for e in &c.events {
                    let value = serde_json::to_value(e).map_err(|err| StoreError::corrupt("event", err))?;
                    let kind = value.get("type").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
                    q = q.bind(id.clone()).bind(i64_of(e.seq)).bind(i64::from(e.step)).bind(kind).bind(value.to_string());
                }
                q.execute(&mut *tx).await?;
            }
            if !c.tool_executions.is_empty() {
                upsert_tools(&mut tx, &c.tool_executions).await?;
            }
            for i in &c.interventions {
                sqlx::query(
                    "INSERT INTO interventions (operation_id, tool_call_id, call, owner, status, reason, decided_by, decided_at, expires_at, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (operation_id, tool_call_id) DO NOTHING",
                )
                .bind(&id)
                .bind(i.call.id.to_string())
                .bind(to_json(&i.call, "tool call")?)
                .bind(i.owner.clone())
                .bind(enum_str(&i.status))
                .bind(i.reason.clone())
                .bind(i.decided_by.clone())
                .bind(i.decided_at.map(ts))
                .bind(i.expires_at.map(ts))
                .bind(ts(i.created_at))
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(CommitOutcome::Committed)
        }
        .boxed()
    }

    fn load_operation(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<StoredOperation>, StoreError>> {
        async move {
            let key = id.to_string();
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {RECORD_COLUMNS}, state, next_context, spec, tool_manifests FROM operations WHERE id = $1"
            )))
            .bind(&key)
            .fetch_optional(&self.pool)
            .await?;
            let Some(row) = row else { return Ok(None) };
            let record = record(&row)?;
            let mut state: AgentState = from_json(&row.try_get::<String, _>("state")?, "state")?;
            if let Some(text) = row.try_get::<Option<String>, _>("tool_manifests")? {
                state.tool_manifests = Arc::new(from_json(&text, "tool manifests")?);
            }
            // The message list in order; a message deleted from the topic since is left out
            // and reported.
            let rows = sqlx::query(
                "SELECT om.message_id, m.body FROM operation_messages om LEFT JOIN messages m ON m.id = om.message_id \
                 WHERE om.operation_id = $1 ORDER BY om.ordinal",
            )
            .bind(&key)
            .fetch_all(&self.pool)
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
        .boxed()
    }

    fn operation(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<OperationRecord>, StoreError>> {
        async move {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {RECORD_COLUMNS} FROM operations WHERE id = $1"
            )))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(record).transpose()
        }
        .boxed()
    }

    fn lease_operation<'a>(
        &'a self,
        id: OperationId,
        owner: &'a str,
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE operations SET lease_owner = $1, lease_until = $2 \
                 WHERE id = $3 AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < $4)",
            )
            .bind(owner)
            .bind(ts(until))
            .bind(id.to_string())
            .bind(ts(now))
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn claim_operation<'a>(
        &'a self,
        id: OperationId,
        admission: &'a crate::Admission,
    ) -> BoxFuture<'a, Result<crate::Claim, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let key = id.to_string();
            let row: Option<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT lease_owner, lease_until, owner FROM operations WHERE id = $1",
            )
            .bind(&key)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((holder, until, owner)) = row else {
                return Err(StoreError::OperationNotFound(key));
            };
            let live = until.is_some_and(|u| u > ts(admission.now));
            if live && holder.as_deref().is_some_and(|h| h != admission.node) {
                return Ok(crate::Claim::Busy);
            }
            admit(
                &mut tx,
                self.postgres,
                &key,
                owner.as_deref(),
                &admission.limits,
                admission.now,
            )
            .await?;
            sqlx::query("UPDATE operations SET lease_owner = $1, lease_until = $2 WHERE id = $3")
                .bind(&admission.node)
                .bind(ts(admission.until))
                .bind(&key)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(crate::Claim::Claimed)
        }
        .boxed()
    }

    fn set_activity<'a>(
        &'a self,
        id: OperationId,
        activity: &'a crate::Activity,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let text = to_json(activity, "activity")?;
            // Only while it runs: a late write after the run ended changes nothing.
            sqlx::query(
                "UPDATE operations SET status = CASE WHEN status = 'idle' THEN 'running' ELSE status END, \
                 activity = $1 WHERE id = $2 AND status IN ('idle', 'running')",
            )
            .bind(text)
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn note_recovery_failure<'a>(
        &'a self,
        id: OperationId,
        reason: &'a str,
        retry_at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "UPDATE operations SET recovery_error = $1, recovery_attempts = recovery_attempts + 1, \
                 recovery_retry_at = $2 WHERE id = $3",
            )
            .bind(reason)
            .bind(ts(retry_at))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn clear_recovery(&self, id: OperationId) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "UPDATE operations SET recovery_error = NULL, recovery_attempts = 0, recovery_retry_at = NULL \
                 WHERE id = $1 AND recovery_error IS NOT NULL",
            )
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn release_operation<'a>(
        &'a self,
        id: OperationId,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "UPDATE operations SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2",
            )
            .bind(id.to_string())
            .bind(owner)
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn operation_status(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<rein_core::state::Status>, StoreError>> {
        async move {
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM operations WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await?;
            status.map(|s| enum_from(&s, "status")).transpose()
        }
        .boxed()
    }

    fn list_operations<'a>(
        &'a self,
        filter: &'a OperationFilter,
    ) -> BoxFuture<'a, Result<Vec<OperationRecord>, StoreError>> {
        async move {
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
            let filter_sql = if conditions.is_empty() {
                String::new()
            } else {
                format!("WHERE {}", conditions.join(" AND "))
            };
            let sql = format!(
                "SELECT {RECORD_COLUMNS} FROM operations {filter_sql} ORDER BY created_at DESC, id DESC LIMIT ${}",
                binds.len() + 1
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for b in binds {
                q = q.bind(b);
            }
            let rows = q.bind(i64::from(filter.limit)).fetch_all(&self.pool).await?;
            rows.iter().map(record).collect()
        }
        .boxed()
    }

    fn steps(&self, id: OperationId) -> BoxFuture<'_, Result<Vec<StepRecord>, StoreError>> {
        async move {
            let rows = sqlx::query("SELECT step_index, status, instructions, created_at FROM operation_steps WHERE operation_id = $1 ORDER BY step_index")
                .bind(id.to_string())
                .fetch_all(&self.pool)
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
        .boxed()
    }

    fn events(
        &self,
        id: OperationId,
        after: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<AgentEvent>, StoreError>> {
        async move {
            let after = after.map_or(-1, i64_of);
            let rows = sqlx::query("SELECT body FROM operation_events WHERE operation_id = $1 AND seq > $2 ORDER BY seq")
                .bind(id.to_string())
                .bind(after)
                .fetch_all(&self.pool)
                .await?;
            rows.iter().map(|r| from_json(&r.try_get::<String, _>("body")?, "event")).collect()
        }
        .boxed()
    }

    fn topic_messages<'a>(
        &'a self,
        topic_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
        self.load_messages(topic_id).boxed()
    }

    fn message_exists(&self, id: MessageId) -> BoxFuture<'_, Result<bool, StoreError>> {
        async move {
            let found: Option<String> = sqlx::query_scalar("SELECT id FROM messages WHERE id = $1")
                .bind(id.to_string())
                .fetch_optional(&self.pool)
                .await?;
            Ok(found.is_some())
        }
        .boxed()
    }

    fn delete_message(&self, id: MessageId) -> BoxFuture<'_, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("DELETE FROM messages WHERE id = $1")
                .bind(id.to_string())
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn record_tool_execution<'a>(
        &'a self,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut conn = self.pool.acquire().await?;
            upsert_tools(&mut conn, std::slice::from_ref(exec)).await
        }
        .boxed()
    }

    fn tool_execution<'a>(
        &'a self,
        id: OperationId,
        tool_call_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ToolExecution>, StoreError>> {
        async move {
            let row = sqlx::query("SELECT step_index, tool, effect, status, result FROM tool_executions WHERE operation_id = $1 AND tool_call_id = $2")
                .bind(id.to_string())
                .bind(tool_call_id)
                .fetch_optional(&self.pool)
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
                })
            })
            .transpose()
        }
        .boxed()
    }

    fn interventions(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Vec<Intervention>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT call, owner, status, reason, decided_by, decided_at, expires_at, created_at FROM interventions WHERE operation_id = $1 ORDER BY created_at, tool_call_id",
            )
            .bind(id.to_string())
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|r| {
                    let opt_ts = |c: &str| -> Result<Option<DateTime<Utc>>, StoreError> {
                        r.try_get::<Option<String>, _>(c)?.map(|t| parse_ts(&t, c)).transpose()
                    };
                    Ok(Intervention {
                        operation_id: id,
                        call: from_json::<ToolCall>(&r.try_get::<String, _>("call")?, "tool call")?,
                        owner: r.try_get("owner")?,
                        status: enum_from(&r.try_get::<String, _>("status")?, "intervention status")?,
                        reason: r.try_get("reason")?,
                        decided_by: r.try_get("decided_by")?,
                        decided_at: opt_ts("decided_at")?,
                        expires_at: opt_ts("expires_at")?,
                        created_at: parse_ts(&r.try_get::<String, _>("created_at")?, "created_at")?,
                    })
                })
                .collect()
        }
        .boxed()
    }

    fn decide_intervention<'a>(
        &'a self,
        id: OperationId,
        tool_call_id: &'a str,
        status: InterventionStatus,
        decided_by: Option<&'a str>,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let current: Option<String> = sqlx::query_scalar("SELECT status FROM interventions WHERE operation_id = $1 AND tool_call_id = $2")
                .bind(id.to_string())
                .bind(tool_call_id)
                .fetch_optional(&mut *tx)
                .await?;
            match current.as_deref() {
                None => return Err(StoreError::InterventionNotFound(tool_call_id.to_owned())),
                Some("pending") => {}
                Some(_) => return Err(StoreError::AlreadyDecided(tool_call_id.to_owned())),
            }
            // The status check in the WHERE clause makes the decision single-use even under races.
            let n = sqlx::query(
                "UPDATE interventions SET status = $1, decided_by = $2, decided_at = $3, reason = $4 WHERE operation_id = $5 AND tool_call_id = $6 AND status = 'pending'",
            )
            .bind(enum_str(&status))
            .bind(decided_by)
            .bind(ts(Utc::now()))
            .bind(reason)
            .bind(id.to_string())
            .bind(tool_call_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 0 {
                return Err(StoreError::AlreadyDecided(tool_call_id.to_owned()));
            }
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn request_cancel(&self, id: OperationId) -> BoxFuture<'_, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE operations SET cancel_requested = 1, updated_at = $1 WHERE id = $2",
            )
            .bind(ts(Utc::now()))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn put_document<'a>(&'a self, doc: &'a Document) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO documents (kind, scope, id, title, body, created_at, updated_at, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (kind, scope, id) DO UPDATE SET title = excluded.title, body = excluded.body, updated_at = excluded.updated_at, embedding = excluded.embedding",
            )
            .bind(doc.kind.as_str())
            .bind(doc.scope.as_str())
            .bind(doc.id.as_str())
            .bind(doc.title.as_str())
            .bind(doc.body.as_str())
            .bind(ts(doc.created_at))
            .bind(ts(doc.updated_at))
            .bind(
                doc.embedding
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(|e| StoreError::corrupt("document embedding", e))?,
            )
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn get_document<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Document>, StoreError>> {
        async move {
            let row = sqlx::query(
                "SELECT title, body, created_at, updated_at, id, embedding FROM documents WHERE kind = $1 AND scope = $2 AND id = $3",
            )
            .bind(kind.as_str())
            .bind(scope)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
            row.map(|r| document_from_row(kind, scope, &r)).transpose()
        }
        .boxed()
    }

    fn list_documents<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Document>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT title, body, created_at, updated_at, id, embedding FROM documents WHERE kind = $1 AND scope = $2 ORDER BY updated_at DESC, id LIMIT $3",
            )
            .bind(kind.as_str())
            .bind(scope)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|r| document_from_row(kind, scope, r))
                .collect()
        }
        .boxed()
    }

    fn delete_document<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("DELETE FROM documents WHERE kind = $1 AND scope = $2 AND id = $3")
                .bind(kind.as_str())
                .bind(scope)
                .bind(id)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }
}

fn document_from_row(
    kind: DocumentKind,
    scope: &str,
    row: &sqlx::any::AnyRow,
) -> Result<Document, StoreError> {
    let s = |c: &str| row.try_get::<String, _>(c);
    Ok(Document {
        kind,
        scope: scope.to_owned(),
        id: s("id")?,
        title: s("title")?,
        body: s("body")?,
        created_at: parse_ts(&s("created_at")?, "document created_at")?,
        updated_at: parse_ts(&s("updated_at")?, "document updated_at")?,
        embedding: row
            .try_get::<Option<String>, _>("embedding")?
            .map(|j| serde_json::from_str(&j))
            .transpose()
            .map_err(|e| StoreError::corrupt("document embedding", e))?,
    })
}
