//! The SQLite commit path: one thread owns a connection (rusqlite, the same bundled SQLite as
//! sqlx) and runs each step commit as one job, its statements prepared once and cached.
//!
//! Why: sqlx runs SQLite on a worker thread and hands every statement to it and back, so a
//! commit of eight statements cost eight hand-offs between threads, most of a committed step.
//! Here a commit is one hand-off. Everything else (reads, creation, leases, accounts) stays on
//! the sqlx pool; both write with `BEGIN IMMEDIATE` and a busy timeout, so SQLite serializes
//! them like any two connections.

use super::commit::StepStatements;
use super::statement::{Arg, Statement};
use super::*;
use futures::channel::oneshot;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::sync::Mutex;
use std::sync::mpsc;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The writer thread's mailbox. Dropping the last sender (or [`Writer::stop`]) ends the thread
/// once its queue is empty, closing the connection.
pub(crate) struct Writer {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Writer {
    /// Open a connection to the SQLite file at `path` with the store's settings and start its
    /// thread.
    pub(crate) fn start(path: &str, synchronous: &str) -> Result<Self, StoreError> {
        let fail = |e: rusqlite::Error| StoreError::Connect {
            target: path.to_owned(),
            message: e.to_string(),
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(fail)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(fail)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(fail)?;
        conn.pragma_update(None, "mmap_size", 268_435_456i64)
            .map_err(fail)?;
        conn.set_prepared_statement_cache_capacity(64);
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("rein-sqlite-writer".into())
            .spawn(move || {
                let mut conn = conn;
                for job in rx {
                    job(&mut conn);
                }
            })
            .map_err(|e| StoreError::Connect {
                target: path.to_owned(),
                message: format!("cannot start the SQLite writer thread: {e}"),
            })?;
        Ok(Self {
            jobs: Mutex::new(Some(tx)),
        })
    }

    /// Stop taking jobs; the thread ends after the ones queued.
    pub(crate) fn stop(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// Commit one step on the writer thread.
    pub(crate) async fn commit(
        &self,
        statements: StepStatements,
        operation: OperationId,
    ) -> Result<CommitOutcome, StoreError> {
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = done.send(commit(conn, statements, operation));
        });
        let sent = match &*self.jobs.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(jobs) => jobs.send(job).is_ok(),
            None => false,
        };
        if !sent {
            return Err(StoreError::Closed);
        }
        result.await.map_err(|_| StoreError::Closed)?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn commit(
    conn: &mut Connection,
    s: StepStatements,
    operation: OperationId,
) -> Result<CommitOutcome, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Dropping `tx` without committing rolls it back.
    if execute(&tx, &s.step)? == 0 {
        return Ok(CommitOutcome::Duplicate);
    }
    if execute(&tx, &s.operation)? == 0 {
        return Err(StoreError::OperationNotFound(operation.to_string()));
    }
    for st in &s.rest {
        execute(&tx, st)?;
    }
    tx.commit()?;
    Ok(CommitOutcome::Committed)
}

/// Run one statement; its `$N` placeholders are bound by name (SQLite numbers named
/// parameters by first appearance, and a name may appear twice).
fn execute(conn: &Connection, st: &Statement) -> Result<usize, StoreError> {
    let mut stmt = conn.prepare_cached(&st.sql)?;
    for (i, arg) in st.args.iter().enumerate() {
        let name = format!("${}", i + 1);
        let Some(index) = stmt.parameter_index(&name)? else {
            return Err(rusqlite::Error::InvalidParameterName(name).into());
        };
        match arg {
            Arg::Text(v) => stmt.raw_bind_parameter(index, v)?,
            Arg::Int(v) => stmt.raw_bind_parameter(index, v)?,
        }
    }
    Ok(stmt.raw_execute()?)
}
