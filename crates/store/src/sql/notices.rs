//! Commit notices across processes, on PostgreSQL: every step commit sends
//! `pg_notify(channel, '<store instance> <operation id>')` inside its own transaction, so
//! the notice is delivered exactly when the commit is. The channel names the store's schema
//! (`rein_commits_` and the MD5 of `current_schema()`, which fits PostgreSQL's 63-byte channel
//! names): deployments in other schemas of the same database do not hear each other. A process serving event streams listens
//! ([`SqlStore::commit_notices`]) and learns of commits made by other processes at once instead
//! of at its next poll. Its own commits are skipped: it already hands them to its streams.
//! A process that stops hands its running operations over the same way
//! ([`SqlStore::hand_over`]: `'<instance> <operation id> released'`), so another takes them up
//! at once instead of after their lease. SQLite has one process writing per file and keeps the
//! in-process hub.

use super::statement::Statement;
use super::*;
use sqlx::postgres::PgListener;

/// The notification channel of the schema a statement runs in.
const CHANNEL: &str = "'rein_commits_' || md5(current_schema())";

/// The notice of a commit of `operation` (PostgreSQL only; delivered when the transaction
/// it runs in commits).
pub(super) fn notify(store: &SqlStore, operation: &str) -> Option<Statement> {
    match store.dialect {
        crate::Dialect::Postgres => Some(
            Statement::new("SELECT pg_notify('rein_commits_' || md5(current_schema()), $1)")
                .arg(format!("{} {operation}", store.instance)),
        ),
        // One process writes a SQLite file: nobody else to tell.
        crate::Dialect::Sqlite => None,
    }
}

/// What another process did to an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// It committed a step of it.
    Committed(OperationId),
    /// It stopped and released its lease between two steps: the operation runs on wherever
    /// it is taken up next.
    Released(OperationId),
}

/// The notice that `operation`'s lease was handed over (PostgreSQL only).
pub(super) fn released(store: &SqlStore, operation: &str) -> Option<Statement> {
    match store.dialect {
        crate::Dialect::Postgres => Some(
            Statement::new("SELECT pg_notify('rein_commits_' || md5(current_schema()), $1)")
                .arg(format!("{} {operation} released", store.instance)),
        ),
        crate::Dialect::Sqlite => None,
    }
}

/// Commits made by other processes, as they land.
pub struct CommitNotices {
    listener: PgListener,
    instance: Arc<str>,
}

impl CommitNotices {
    /// The next thing another process did to an operation. A lost connection is
    /// re-established on the way (notices sent meanwhile are lost: a stream's periodic read
    /// of the log still finds those commits, and the recovery sweep those operations).
    pub async fn next(&mut self) -> Result<Notice, StoreError> {
        loop {
            let notice = self.listener.recv().await?;
            let mut words = notice.payload().split(' ');
            let (Some(instance), Some(operation)) = (words.next(), words.next()) else {
                continue;
            };
            if instance == &*self.instance {
                continue;
            }
            let Ok(id) = operation.parse() else {
                continue;
            };
            match words.next() {
                None => return Ok(Notice::Committed(id)),
                Some("released") => return Ok(Notice::Released(id)),
                // A word a newer build sends: nothing this one acts on.
                Some(_) => continue,
            }
        }
    }
}

impl SqlStore {
    /// Listen to commits made by other processes; `None` on SQLite, where there are none to
    /// hear of.
    pub async fn commit_notices(&self) -> Result<Option<CommitNotices>, StoreError> {
        let Some(url) = &self.listen_url else {
            return Ok(None);
        };
        let mut listener = PgListener::connect(url)
            .await
            .map_err(|e| StoreError::Connect {
                target: redact(url),
                message: e.to_string(),
            })?;
        let channel: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT {CHANNEL}")))
            .fetch_one(&self.pool)
            .await?;
        listener.listen(&channel).await?;
        Ok(Some(CommitNotices {
            listener,
            instance: Arc::clone(&self.instance),
        }))
    }
}
