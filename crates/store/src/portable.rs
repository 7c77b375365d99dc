//! A user's data as portable rows, to move them to another database (`rein export`, `rein
//! import`): their agents and groups, conversations with their messages and threads,
//! operations with everything they recorded (steps, events, messages, tool executions,
//! decisions), memories and notes, knowledge bases with their files, chunks and vectors,
//! grants, tasks with their runs and deliveries, and briefs. Each row is its columns by name,
//! values as JSON (text, integers, `{"base64": …}` for bytes), so an archive from SQLite
//! loads into PostgreSQL and back. What a row derives from others is left out and made again
//! by the database that loads it (PostgreSQL's full-text column, SQLite's full-text index,
//! pgvector's columns). Left out on purpose: tokens, sessions and sign-ins (credentials of the
//! old server), the providers a user brought (their keys are sealed with the old server's
//! secret key and bound to the old user id: the user stores them again), devices (they
//! connect again) and knowledge ingestion jobs (transient). The SQL is `sql/portable.rs`.

use crate::StoreError;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// The first line of an archive: what it is and whose.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArchiveHeader {
    /// The archive format (this is 1).
    pub rein_export: u32,
    /// When it was made.
    pub exported_at: chrono::DateTime<chrono::Utc>,
    /// The user's id on the database it came from (rewritten to the importing user's id in
    /// every row).
    pub user_id: String,
    /// Their name there.
    pub user_name: String,
}

/// The format [`ArchiveHeader::rein_export`] this build writes and reads.
pub const ARCHIVE_FORMAT: u32 = 1;

/// One row of one table.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct PortableRow {
    /// The table.
    pub table: String,
    /// Its columns by name.
    pub row: Map<String, Value>,
}

/// How many rows an import loaded, by table, in the order loaded.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Imported {
    /// `(table, rows)`.
    pub tables: Vec<(String, u64)>,
}

/// Moving a user's data between databases.
pub trait Portable {
    /// Hand every row of `user_id`'s data to `each`, table by table, in an order that loads
    /// (a conversation before its messages).
    fn export_user<'a>(
        &'a self,
        user_id: &'a str,
        each: &'a mut (dyn FnMut(PortableRow) -> Result<(), StoreError> + Send),
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Hand every row of operation `id` to `each`: its conversation (the topic and its own
    /// messages; not its sub-agents' threads or records) and everything it recorded (setup,
    /// steps with their checkpoints, events, message order, tool executions, interventions),
    /// in an order that loads.
    fn export_operation<'a>(
        &'a self,
        id: rein_core::OperationId,
        each: &'a mut (dyn FnMut(PortableRow) -> Result<(), StoreError> + Send),
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Load one operation's `rows` ([`Portable::export_operation`]) in one transaction, each
    /// value passed through `value(table, column, value)` first (the caller renames ids and
    /// the owner); leases are cleared, and a row that is already here refuses it all.
    fn import_operation<'a>(
        &'a self,
        rows: &'a [PortableRow],
        value: &'a (dyn Fn(&str, &str, &Value) -> Value + Sync),
    ) -> BoxFuture<'a, Result<Imported, StoreError>>;

    /// Load `rows` exported from `from_user` as `into_user`'s, in one transaction: every
    /// mention of the old user id becomes the new one, leases are cleared (a running operation
    /// is taken up by this database's servers as after a crash), and a row that is already
    /// here refuses the whole import, naming it.
    fn import_user<'a>(
        &'a self,
        from_user: &'a str,
        into_user: &'a str,
        rows: &'a [PortableRow],
    ) -> BoxFuture<'a, Result<Imported, StoreError>>;
}
