//! Store errors.

/// What went wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or reached.
    #[error("cannot open the database {target}: {message}")]
    Connect {
        /// What was being opened (path or URL without credentials).
        target: String,
        /// Why.
        message: String,
    },
    /// The schema could not be brought up to date.
    #[error("database migration {version} failed: {message}")]
    Migration {
        /// Migration version.
        version: i64,
        /// Why.
        message: String,
    },
    /// The database was migrated past what this build knows, by a migration older builds do
    /// not survive; nothing was written.
    #[error(
        "the database's schema is at version {database}, newer than this rein knows ({binary}); it needs a rein that knows schema version {needs} or later. Upgrade rein to the release that migrated it (or, to go back, restore the backup made before that upgrade); nothing was changed"
    )]
    SchemaTooNew {
        /// The newest migration applied to the database.
        database: i64,
        /// The newest migration this build knows.
        binary: i64,
        /// The oldest schema version a build must know to run against the database.
        needs: i64,
    },
    /// A migration applied to the database differs from the one this build carries under the
    /// same version; nothing was written.
    #[error(
        "migration {version} ({description}) applied to this database differs from the one this rein carries: the database was migrated by another build of rein; use a release build, or restore a backup; nothing was changed"
    )]
    MigrationChanged {
        /// Its version.
        version: i64,
        /// Its description as the database recorded it.
        description: String,
    },
    /// The database records a migration this build does not know, older than its newest;
    /// nothing was written.
    #[error(
        "the database records migration {version} ({description}), which this rein does not know: it was migrated by another build of rein; use a release build, or restore a backup; nothing was changed"
    )]
    UnknownMigration {
        /// Its version.
        version: i64,
        /// Its description as the database recorded it.
        description: String,
    },
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A statement on the SQLite commit path failed.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// pgvector was asked for and cannot be used (SQLite, or a server without it).
    #[error("pgvector cannot be used: {0}")]
    Pgvector(String),
    /// This backend does not do that; the message says what does.
    #[error("{0}")]
    Unsupported(String),
    /// An archive (`rein import`) that cannot be loaded here: what is wrong with it.
    #[error("the archive cannot be imported: {0}")]
    InvalidArchive(String),
    /// The store was closed.
    #[error("the store is closed (its SQLite writer has stopped)")]
    Closed,
    /// The database did not answer in time (a stalled connection); what was asked may or may
    /// not have taken effect, as when a connection drops before the answer arrives.
    #[error("the database did not answer {what} within {after:?} (a stalled connection?)")]
    Timeout {
        /// What was asked.
        what: &'static str,
        /// How long it was waited for.
        after: std::time::Duration,
    },
    /// Stored data could not be read back.
    #[error("corrupt {what} in the database: {message}")]
    Corrupt {
        /// Which record.
        what: String,
        /// Why.
        message: String,
    },
    /// No such operation.
    #[error("no operation {0}")]
    OperationNotFound(String),
    /// The operation already exists.
    #[error("operation {0} already exists")]
    OperationExists(String),
    /// No such pending intervention.
    #[error("no intervention for tool call {0}")]
    InterventionNotFound(String),
    /// The intervention was already decided (decisions are single-use).
    #[error("tool call {0} was already decided")]
    AlreadyDecided(String),
    /// No such record (`what` names it: "knowledge base kb_…").
    #[error("no {0}")]
    NotFound(String),
    /// A record with that key already exists.
    #[error("{0} already exists")]
    Conflict(String),
    /// The change would pull a record from under something still using it (a topic whose
    /// operations still run); nothing was written.
    #[error("{0}")]
    InUse(String),
    /// Another operation of the conversation is running or parked (or queued), and the new one
    /// asked to be refused then (`when_busy: reject`); nothing was written.
    #[error(
        "topic {topic} is busy: operation {operation} is {status}; wait for it, cancel it, or ask to queue (when_busy: enqueue) or to interrupt it (when_busy: interrupt)"
    )]
    TopicBusy {
        /// The topic.
        topic: String,
        /// The operation in the way.
        operation: String,
        /// Its status.
        status: String,
    },
    /// Running one more operation would cross a limit; nothing was written.
    #[error("{} operations are running {}, the limit", .limit, .scope)]
    AtCapacity {
        /// Whose limit.
        scope: crate::CapacityScope,
        /// The limit.
        limit: u64,
    },
}

impl StoreError {
    /// Stored data named `what` does not parse.
    pub fn corrupt(what: impl Into<String>, e: impl std::fmt::Display) -> Self {
        StoreError::Corrupt {
            what: what.into(),
            message: e.to_string(),
        }
    }
}
