//! Every store trait in SQL, over SQLite or PostgreSQL through sqlx's `Any` driver, with one
//! portable schema (where the two differ, [`crate::Dialect`]). The types and trait of an
//! aggregate live in `crate::<aggregate>`; its SQL is the file of the same name here. For
//! [`Store`], one file per part: an operation's record ([`operations`]), its leases and
//! admission ([`leases`]), the write path of a step ([`commit`]) and the read path of a run
//! ([`load`]), the small state they exchange ([`state`]), messages and their order
//! ([`messages`]), events, interventions, tool executions, documents. Beside it: accounts,
//! briefs, devices, grants, knowledge bases and their ingestion jobs, memories, tasks and topics. This file opens the pool and routes
//! the [`Store`] trait to them.

mod a2a_push;
pub(crate) mod accounts;
mod artifacts;
pub(crate) mod briefs;
mod checkpoint;
mod commit;
pub(crate) mod devices;
mod documents;
mod evals;
mod events;
mod files;
mod goals;
pub(crate) mod grants;
mod interventions;
pub(crate) mod knowledge;
mod knowledge_jobs;
mod leases;
mod load;
mod logins;
mod manifest_sets;
mod mcp_pins;
pub(crate) mod memories;
mod messages;
mod notices;
mod operations;
mod own_mcp;
mod own_providers;
#[cfg(test)]
mod plans;
mod portable;
mod responses;
mod retention;
mod sessions;
mod state;
mod statement;
mod step_check;
pub(crate) mod tasks;
mod tool_executions;
mod topic_gate;
pub(crate) mod topics;
mod usage;
mod writer;

pub use notices::{CommitNotices, Notice};
pub use operations::Counts;
pub use writer::WriterStats;

use crate::Store;
use crate::error::StoreError;
use crate::migrate::migrate;
use crate::records::*;
use crate::schema::Schema;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::document::{Document, DocumentKind};
use rein_core::{AgentEvent, Message, MessageId, OperationId};
use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;
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

/// The default of [`SqlStore::with_commit_deadline`]: far beyond any healthy commit (a few
/// milliseconds), short enough that a stalled connection's operation fails visibly and its
/// lease can be taken over.
const COMMIT_DEADLINE: Duration = Duration::from_secs(30);

/// A store on SQLite or PostgreSQL.
#[derive(Clone)]
pub struct SqlStore {
    pub(crate) pool: AnyPool,
    dialect: crate::Dialect,
    /// The PostgreSQL URL, for the connection that listens to commit notices.
    listen_url: Option<Arc<str>>,
    /// This store's identity in commit notices, so it can skip its own.
    instance: Arc<str>,
    /// SQLite: the thread step commits run on.
    pub(crate) writer: Option<Arc<writer::Writer>>,
    /// PostgreSQL: how long a step commit may wait on the server before it fails (a stalled
    /// connection would otherwise hold its operation until the network gives up).
    commit_deadline: Duration,
    /// Knowledge bases' vector indexes this process has loaded.
    pub(crate) vector_indexes: Arc<crate::knowledge::index::Indexes>,
    /// PostgreSQL with the pgvector extension: vectors are also written in its type, and
    /// searched there unless told otherwise.
    pub(crate) pgvector: Option<Arc<crate::knowledge::pgvector::Pgvector>>,
}

pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// An instant as statements compare it: microseconds since the Unix epoch (migration 11).
pub(crate) fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// Read back an instant stored by [`micros`].
pub(crate) fn from_micros(us: i64, what: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| StoreError::corrupt(what, format!("{us} µs is out of range")))
}

pub(crate) fn parse_ts(s: &str, what: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| StoreError::corrupt(what, e))
}

pub(crate) fn enum_str<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

pub(crate) fn enum_from<T: serde::de::DeserializeOwned>(
    s: &str,
    what: &str,
) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|e| StoreError::corrupt(what, e))
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::corrupt(what, e))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    s: &str,
    what: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::corrupt(what, e))
}

pub(crate) fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Rows a multi-row statement may carry: SQLite allows 32,766 bound values, PostgreSQL 65,535.
pub(crate) const ROWS_PER_STATEMENT: usize = 500;

/// `($1, $2, …), ($k+1, …)` for `rows` rows of `columns` placeholders.
pub(crate) fn placeholders(rows: usize, columns: usize) -> String {
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

static DRIVERS: Once = Once::new();

impl SqlStore {
    /// Open `target`: a `postgres://` URL, or a SQLite file path (created if missing).
    pub async fn open(target: &str, synchronous: Synchronous) -> Result<Self, StoreError> {
        Self::open_with_schema(
            target,
            synchronous,
            &Schema::current(crate::Dialect::of(target)),
        )
        .await
    }

    /// [`SqlStore::open`] by a build that knows `schema` (tests play older and newer builds).
    #[doc(hidden)]
    pub async fn open_with_schema(
        target: &str,
        synchronous: Synchronous,
        schema: &Schema,
    ) -> Result<Self, StoreError> {
        DRIVERS.call_once(sqlx::any::install_default_drivers);
        let dialect = crate::Dialect::of(target);
        let (url, shown) = match dialect {
            crate::Dialect::Postgres => (target.to_owned(), redact(target)),
            crate::Dialect::Sqlite => {
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
            }
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
            .max_connections(match dialect {
                crate::Dialect::Postgres => 8,
                crate::Dialect::Sqlite => 4,
            })
            .acquire_timeout(Duration::from_secs(10))
            // A SQLite connection is a file handle that cannot go stale, and the health check
            // is one more hand-off to its worker thread per query.
            .test_before_acquire(dialect == crate::Dialect::Postgres)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if conn.backend_name() == "SQLite" {
                        // Pages are read through a memory map rather than a read system call
                        // each: connections take turns on the pool, and a commit on one makes
                        // the others re-read the pages it changed.
                        for pragma in [
                            "PRAGMA journal_mode=WAL",
                            "PRAGMA busy_timeout=10000",
                            "PRAGMA mmap_size=268435456",
                        ] {
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
        migrate(&pool, dialect, schema).await?;
        let pgvector = match dialect {
            crate::Dialect::Postgres => crate::knowledge::pgvector::Pgvector::existing(&pool)
                .await?
                .map(Arc::new),
            crate::Dialect::Sqlite => None,
        };
        // Started after the migrations, so it never sees an older schema.
        let writer = match dialect {
            crate::Dialect::Postgres => None,
            crate::Dialect::Sqlite => Some(Arc::new(writer::Writer::start(&shown, sync)?)),
        };
        Ok(Self {
            pool,
            dialect,
            listen_url: (dialect == crate::Dialect::Postgres).then(|| Arc::from(target)),
            instance: Arc::from(uuid::Uuid::now_v7().simple().to_string()),
            writer,
            commit_deadline: COMMIT_DEADLINE,
            vector_indexes: Arc::default(),
            pgvector,
        })
    }

    /// A write transaction. On SQLite it takes the write lock up front (`BEGIN IMMEDIATE`):
    /// a deferred transaction that reads first and writes later cannot wait for a concurrent
    /// writer (SQLite refuses the lock upgrade with `database is locked` at once, whatever the
    /// busy timeout), so concurrent operations would fail each other's commits.
    pub(crate) async fn begin_write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.dialect {
            crate::Dialect::Postgres => self.pool.begin().await,
            crate::Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
        }
    }

    /// Where knowledge vectors are searched: in this process (the default), or in PostgreSQL
    /// by pgvector after [`Self::enable_pgvector`].
    pub fn vector_search(&self) -> crate::VectorSearch {
        match &self.pgvector {
            Some(p) if p.search => crate::VectorSearch::Pgvector(p.version.clone()),
            _ => crate::VectorSearch::InProcess,
        }
    }

    /// Search knowledge vectors with pgvector (0.8 or later) from now on: the extension is
    /// created when missing (that needs a superuser), `knowledge_vectors` gets pgvector's
    /// columns (which every store then fills) and vectors written before are copied in. Its
    /// version, or why it cannot be (SQLite; a server without pgvector or too old; a user who
    /// may not create it).
    pub async fn enable_pgvector(&mut self) -> Result<String, StoreError> {
        if self.dialect == crate::Dialect::Sqlite {
            return Err(StoreError::Pgvector(
                "it needs PostgreSQL (this database is SQLite, which uses the in-process index)"
                    .into(),
            ));
        }
        let p = crate::knowledge::pgvector::Pgvector::enable(&self.pool).await?;
        let version = p.version.clone();
        self.pgvector = Some(Arc::new(p));
        Ok(version)
    }

    /// On SQLite, how many transactions the step-commit writer wrote and how many step commits
    /// they carried (more commits than transactions: group commit at work); `None` on
    /// PostgreSQL, where each commit is its own transaction and the server groups their syncs.
    pub fn writer_stats(&self) -> Option<WriterStats> {
        self.writer.as_ref().map(|w| w.stats())
    }

    /// How long a step commit on PostgreSQL may wait on the server before it fails with
    /// [`StoreError::Timeout`] (default 30 s). SQLite's commits are bounded by its busy
    /// timeout instead.
    pub fn with_commit_deadline(mut self, deadline: Duration) -> Self {
        self.commit_deadline = deadline;
        self
    }

    pub(crate) fn commit_deadline(&self) -> Duration {
        self.commit_deadline
    }

    /// The SQL database this store talks to.
    pub fn dialect(&self) -> crate::Dialect {
        self.dialect
    }

    /// Close the pool.
    pub async fn close(&self) {
        if let Some(w) = &self.writer {
            w.stop();
        }
        self.pool.close().await;
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

impl Store for SqlStore {
    fn create_operation<'a>(
        &'a self,
        op: &'a NewOperation,
    ) -> BoxFuture<'a, Result<Created, StoreError>> {
        commit::create_operation(self, op).boxed()
    }

    fn next_queued<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Option<QueuedOperation>, StoreError>> {
        topic_gate::next_queued(self, topic).boxed()
    }

    fn activate_queued<'a>(
        &'a self,
        op: &'a NewOperation,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        topic_gate::activate_queued(self, op).boxed()
    }

    fn drop_queued<'a>(
        &'a self,
        id: OperationId,
        state: &'a rein_core::AgentState,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        topic_gate::drop_queued(self, id, state).boxed()
    }

    fn topic_holder<'a>(
        &'a self,
        topic: &'a str,
        except: OperationId,
    ) -> BoxFuture<'a, Result<Option<(OperationId, rein_core::state::Status)>, StoreError>> {
        topic_gate::topic_holder(self, topic, except).boxed()
    }

    fn stalled_topics(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        topic_gate::stalled_topics(self).boxed()
    }

    fn decided_while_parked<'a>(
        &'a self,
        not_leased_by: &'a str,
    ) -> BoxFuture<'a, Result<Vec<OperationRecord>, StoreError>> {
        interventions::decided_while_parked(self, not_leased_by).boxed()
    }

    fn commit_step<'a>(
        &'a self,
        c: &'a StepCommit,
    ) -> BoxFuture<'a, Result<CommitOutcome, StoreError>> {
        commit::commit_step(self, c).boxed()
    }

    fn load_operation(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<StoredOperation>, StoreError>> {
        load::load_operation(self, id).boxed()
    }

    fn operation(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<OperationRecord>, StoreError>> {
        operations::operation(self, id).boxed()
    }

    fn lease_operation<'a>(
        &'a self,
        id: OperationId,
        owner: &'a str,
        until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        leases::lease_operation(self, id, owner, until, now).boxed()
    }

    fn claim_operation<'a>(
        &'a self,
        id: OperationId,
        admission: &'a crate::Admission,
    ) -> BoxFuture<'a, Result<crate::Claim, StoreError>> {
        leases::claim_operation(self, id, admission).boxed()
    }

    fn set_activity<'a>(
        &'a self,
        id: OperationId,
        activity: &'a crate::Activity,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        operations::set_activity(self, id, activity).boxed()
    }

    fn note_recovery_failure<'a>(
        &'a self,
        id: OperationId,
        reason: &'a str,
        retry_at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        operations::note_recovery_failure(self, id, reason, retry_at).boxed()
    }

    fn clear_recovery(&self, id: OperationId) -> BoxFuture<'_, Result<(), StoreError>> {
        operations::clear_recovery(self, id).boxed()
    }

    fn release_operation<'a>(
        &'a self,
        id: OperationId,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        leases::release_operation(self, id, owner).boxed()
    }

    fn operation_status(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<rein_core::state::Status>, StoreError>> {
        operations::operation_status(self, id).boxed()
    }

    fn list_operations<'a>(
        &'a self,
        filter: &'a OperationFilter,
    ) -> BoxFuture<'a, Result<Vec<OperationRecord>, StoreError>> {
        operations::list_operations(self, filter).boxed()
    }

    fn steps(&self, id: OperationId) -> BoxFuture<'_, Result<Vec<StepRecord>, StoreError>> {
        operations::steps(self, id).boxed()
    }

    fn state_at(
        &self,
        id: OperationId,
        step_index: u64,
    ) -> BoxFuture<'_, Result<crate::Rewound, StoreError>> {
        checkpoint::state_at(self, id, step_index).boxed()
    }

    fn events(
        &self,
        id: OperationId,
        after: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<AgentEvent>, StoreError>> {
        events::events(self, id, after).boxed()
    }

    fn topic_messages<'a>(
        &'a self,
        topic_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
        messages::topic_messages(self, topic_id).boxed()
    }

    fn thread_messages<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>> {
        messages::thread_messages(self, thread_id).boxed()
    }

    fn threads<'a>(&'a self, topic_id: &'a str) -> BoxFuture<'a, Result<Vec<Thread>, StoreError>> {
        messages::threads(self, topic_id).boxed()
    }

    fn message_exists(&self, id: MessageId) -> BoxFuture<'_, Result<bool, StoreError>> {
        messages::message_exists(self, id).boxed()
    }

    fn delete_message(&self, id: MessageId) -> BoxFuture<'_, Result<bool, StoreError>> {
        messages::delete_message(self, id).boxed()
    }

    fn record_tool_execution<'a>(
        &'a self,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        tool_executions::record_tool_execution(self, exec).boxed()
    }

    fn tool_execution<'a>(
        &'a self,
        id: OperationId,
        tool_call_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ToolExecution>, StoreError>> {
        tool_executions::tool_execution(self, id, tool_call_id).boxed()
    }

    fn interventions(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Vec<Intervention>, StoreError>> {
        interventions::interventions(self, id).boxed()
    }

    fn decide_intervention<'a>(
        &'a self,
        id: OperationId,
        tool_call_id: &'a str,
        status: InterventionStatus,
        decided_by: Option<&'a str>,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        interventions::decide_intervention(self, id, tool_call_id, status, decided_by, reason)
            .boxed()
    }

    fn request_cancel(&self, id: OperationId) -> BoxFuture<'_, Result<bool, StoreError>> {
        operations::request_cancel(self, id).boxed()
    }

    fn cancels_requested<'a>(
        &'a self,
        ids: &'a [OperationId],
    ) -> BoxFuture<'a, Result<Vec<OperationId>, StoreError>> {
        operations::cancels_requested(self, ids).boxed()
    }

    fn step_check<'a>(
        &'a self,
        what: &'a crate::StepCheckFor<'a>,
    ) -> BoxFuture<'a, Result<crate::StepCheck, StoreError>> {
        step_check::step_check(self, what).boxed()
    }

    fn put_document<'a>(&'a self, doc: &'a Document) -> BoxFuture<'a, Result<(), StoreError>> {
        documents::put_document(self, doc).boxed()
    }

    fn get_document<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Document>, StoreError>> {
        documents::get_document(self, kind, scope, id).boxed()
    }

    fn list_documents<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Document>, StoreError>> {
        documents::list_documents(self, kind, scope, limit).boxed()
    }

    fn delete_document<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        documents::delete_document(self, kind, scope, id).boxed()
    }
}
