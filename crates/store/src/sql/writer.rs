//! The SQLite commit path: one thread owns a connection (rusqlite, the same bundled SQLite as
//! sqlx) and runs step commits, its statements prepared once and cached.
//!
//! Why: sqlx runs SQLite on a worker thread and hands every statement to it and back, so a
//! commit of eight statements cost eight hand-offs between threads, most of a committed step.
//! Here a commit is one hand-off. Everything else (reads, creation, leases, accounts) stays on
//! the sqlx pool; both write with `BEGIN IMMEDIATE` and a busy timeout, so SQLite serializes
//! them like any two connections.
//!
//! Group commit: the commits that queue while one transaction is written (many operations in
//! flight) go into the next transaction together, up to [`MAX_BATCH`], each in its own
//! savepoint. One WAL append and one sync then carry all of them. There is no added wait: a
//! lone commit is written at once, and a batch is whatever queued meanwhile. Each commit's
//! outcome is its own (a duplicate step or a missing operation rolls back its savepoint only)
//! and is told to its caller only after the transaction is durable; a failure of the
//! transaction itself (disk full, an I/O error, a failed sync) fails every commit in it, none
//! of which was acknowledged.
//!
//! A running operation's activity (`set_activity`, at most one write per run every 200 ms)
//! goes through here too, in the same transactions: on the pool it waited for the write lock
//! against the writer (SQLite's busy handler sleeps up to 100 ms at a time) and held up the
//! commits behind it.

use super::commit::StepStatements;
use super::statement::{Arg, Statement};
use super::*;
use futures::channel::oneshot;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// At most this many writes share one transaction: enough to carry a busy server's commits in
/// one sync, few enough that one transaction holds the write lock briefly.
pub(crate) const MAX_BATCH: usize = 64;

/// The writer refreshes the query planner's statistics when it starts and after every this
/// many transactions (see [`optimize`]).
const OPTIMIZE_EVERY: u64 = 1_000;

/// What one write does.
enum Work {
    /// A step commit.
    Step {
        statements: StepStatements,
        operation: OperationId,
    },
    /// Statements that go together (an operation's activity, say): each runs, and the rows
    /// they changed are counted.
    Plain(Vec<Statement>),
}

/// Where a write's outcome goes.
enum Reply {
    Step(oneshot::Sender<Result<CommitOutcome, StoreError>>),
    Plain(oneshot::Sender<Result<u64, StoreError>>),
}

/// What a write did, inside its savepoint.
enum Applied {
    Step(CommitOutcome),
    Rows(u64),
}

/// A write waiting for the writer thread, with where its outcome goes.
struct Pending {
    work: Work,
    reply: Reply,
}

impl Pending {
    fn answer(self, outcome: Result<Applied, StoreError>) {
        match (self.reply, outcome) {
            (Reply::Step(to), Ok(Applied::Step(o))) => {
                let _ = to.send(Ok(o));
            }
            (Reply::Plain(to), Ok(Applied::Rows(n))) => {
                let _ = to.send(Ok(n));
            }
            (Reply::Step(to), Err(e)) => {
                let _ = to.send(Err(e));
            }
            (Reply::Plain(to), Err(e)) => {
                let _ = to.send(Err(e));
            }
            // `apply` answers a step with `Applied::Step` and plain statements with `Rows`.
            (Reply::Step(to), Ok(Applied::Rows(_))) => {
                let _ = to.send(Err(StoreError::corrupt("step commit", "answered as rows")));
            }
            (Reply::Plain(to), Ok(Applied::Step(_))) => {
                let _ = to.send(Err(StoreError::corrupt("write", "answered as a step")));
            }
        }
    }
}

enum Job {
    Write(Pending),
    /// Tests: the thread waits until the sender is dropped, so writes queue behind it.
    #[cfg(test)]
    Hold(mpsc::Receiver<()>),
}

/// How many transactions the writer wrote and what they carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Transactions written (each one WAL append and, on `FULL`, one sync).
    pub transactions: u64,
    /// Step commits carried by them (committed, duplicate or refused).
    pub commits: u64,
    /// Other writes carried by them (operations' activity).
    pub writes: u64,
}

#[derive(Default)]
struct Counters {
    transactions: AtomicU64,
    commits: AtomicU64,
    writes: AtomicU64,
}

/// The writer thread's mailbox. Dropping the last sender (or [`Writer::stop`]) ends the thread
/// once its queue is empty, closing the connection.
pub(crate) struct Writer {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    counters: Arc<Counters>,
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
        optimize(&conn);
        let (tx, rx) = mpsc::channel::<Job>();
        let counters = Arc::new(Counters::default());
        let counted = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("rein-sqlite-writer".into())
            .spawn(move || run(conn, &rx, &counted))
            .map_err(|e| StoreError::Connect {
                target: path.to_owned(),
                message: format!("cannot start the SQLite writer thread: {e}"),
            })?;
        Ok(Self {
            jobs: Mutex::new(Some(tx)),
            counters,
        })
    }

    /// Stop taking jobs; the thread ends after the ones queued.
    pub(crate) fn stop(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn send(&self, job: Job) -> bool {
        match &*self.jobs.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(jobs) => jobs.send(job).is_ok(),
            None => false,
        }
    }

    /// Commit one step on the writer thread; it returns once the step is durable (or refused).
    pub(crate) async fn commit(
        &self,
        statements: StepStatements,
        operation: OperationId,
    ) -> Result<CommitOutcome, StoreError> {
        let (to, result) = oneshot::channel();
        let pending = Pending {
            work: Work::Step {
                statements,
                operation,
            },
            reply: Reply::Step(to),
        };
        if !self.send(Job::Write(pending)) {
            return Err(StoreError::Closed);
        }
        result.await.map_err(|_| StoreError::Closed)?
    }

    /// Run `statements` together on the writer thread, in the transaction of whatever else
    /// is queued (so a frequent small write, like an operation's activity, never waits for
    /// the write lock against the step commits); the rows they changed once durable.
    pub(crate) async fn write(&self, statements: Vec<Statement>) -> Result<u64, StoreError> {
        let (to, result) = oneshot::channel();
        let pending = Pending {
            work: Work::Plain(statements),
            reply: Reply::Plain(to),
        };
        if !self.send(Job::Write(pending)) {
            return Err(StoreError::Closed);
        }
        result.await.map_err(|_| StoreError::Closed)?
    }

    /// Transactions written and what they carried so far.
    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            transactions: self.counters.transactions.load(Ordering::Relaxed),
            commits: self.counters.commits.load(Ordering::Relaxed),
            writes: self.counters.writes.load(Ordering::Relaxed),
        }
    }

    /// Tests: hold the thread until the returned sender is dropped.
    #[cfg(test)]
    fn hold(&self) -> mpsc::Sender<()> {
        let (release, held) = mpsc::channel();
        assert!(self.send(Job::Hold(held)), "the writer is stopped");
        release
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The thread: take a write, gather what queued behind it, write them as one transaction.
fn run(mut conn: Connection, jobs: &mpsc::Receiver<Job>, counters: &Counters) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Ok(job) = jobs.recv() {
        let mut next = Some(job);
        while let Some(job) = next.take() {
            match job {
                Job::Write(p) => batch.push(p),
                #[cfg(test)]
                Job::Hold(held) => {
                    // Write what was gathered first, so a hold never delays an earlier write.
                    if !batch.is_empty() {
                        write(&mut conn, &mut batch, counters);
                    }
                    let _ = held.recv();
                }
            }
            if batch.len() < MAX_BATCH {
                next = jobs.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            write(&mut conn, &mut batch, counters);
            if counters
                .transactions
                .load(Ordering::Relaxed)
                .is_multiple_of(OPTIMIZE_EVERY)
            {
                optimize(&conn);
            }
        }
    }
}

/// Refresh the query planner's statistics of the tables that have none yet or grew or shrank
/// tenfold since (`PRAGMA optimize` over every table, within its analysis limit: milliseconds
/// on a large database, not a full `ANALYZE`). Without statistics SQLite picks an index by the
/// statement's shape alone: to list one conversation's operations (`owner = ? AND topic_id =
/// ?`) it took the owner's index ordered by creation, which on a single-user server reads every
/// operation there is. A failure leaves the statistics as they were, which is only slower.
fn optimize(conn: &Connection) {
    if let Err(e) = conn.execute_batch("PRAGMA optimize=0x10012") {
        tracing::warn!(error = %e, "PRAGMA optimize failed; the query planner keeps the statistics it had");
    }
}

/// Write `batch` as one transaction and tell each write its outcome; `batch` is left empty.
fn write(conn: &mut Connection, batch: &mut Vec<Pending>, counters: &Counters) {
    let steps = batch
        .iter()
        .filter(|p| matches!(p.work, Work::Step { .. }))
        .count() as u64;
    counters.transactions.fetch_add(1, Ordering::Relaxed);
    counters.commits.fetch_add(steps, Ordering::Relaxed);
    counters
        .writes
        .fetch_add(batch.len() as u64 - steps, Ordering::Relaxed);
    match apply_all(conn, batch) {
        Ok(outcomes) => {
            for (p, outcome) in batch.drain(..).zip(outcomes) {
                p.answer(outcome);
            }
        }
        Err(e) => {
            tracing::warn!(writes = batch.len(), error = %e, "a SQLite write transaction failed; none of its writes landed");
            for p in batch.drain(..) {
                p.answer(Err(StoreError::Sqlite(again(&e))));
            }
        }
    }
}

/// Each write of `batch` in its own savepoint of one transaction: the outcome of each, or the
/// error that undid the whole transaction.
fn apply_all(
    conn: &mut Connection,
    batch: &[Pending],
) -> Result<Vec<Result<Applied, StoreError>>, rusqlite::Error> {
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut outcomes = Vec::with_capacity(batch.len());
    for p in batch {
        let savepoint = tx.savepoint()?;
        let outcome = apply(&savepoint, &p.work);
        match outcome {
            Ok(Applied::Step(CommitOutcome::Committed) | Applied::Rows(_)) => savepoint.commit()?,
            // Dropping a savepoint rolls it back: a refused write leaves nothing behind.
            Ok(Applied::Step(CommitOutcome::Duplicate)) | Err(_) => drop(savepoint),
        }
        // Some errors (a full disk, an I/O error) make SQLite roll the whole transaction
        // back: what the savepoints before wrote is gone with it.
        if tx.is_autocommit() {
            return Err(match outcome {
                Err(StoreError::Sqlite(e)) => e,
                _ => rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                    Some("the write transaction was rolled back".into()),
                ),
            });
        }
        outcomes.push(outcome);
    }
    tx.commit()?;
    Ok(outcomes)
}

/// One write. A step commit: the step row (nothing when it was committed before), the
/// operation row (nothing when there is no such operation), then the rest.
fn apply(conn: &Connection, work: &Work) -> Result<Applied, StoreError> {
    match work {
        Work::Step {
            statements: s,
            operation,
        } => {
            if execute(conn, &s.step)? == 0 {
                return Ok(Applied::Step(CommitOutcome::Duplicate));
            }
            if execute(conn, &s.operation)? == 0 {
                return Err(StoreError::OperationNotFound(operation.to_string()));
            }
            for st in &s.rest {
                execute(conn, st)?;
            }
            Ok(Applied::Step(CommitOutcome::Committed))
        }
        Work::Plain(statements) => {
            let mut rows = 0;
            for st in statements {
                rows += execute(conn, st)? as u64;
            }
            Ok(Applied::Rows(rows))
        }
    }
}

/// The same failure again, for each commit of a failed transaction (rusqlite's error is not
/// `Clone`; its SQLite code, which callers classify by, is kept).
fn again(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn step(op: &str, index: i64, note: &str, extra: Option<&'static str>) -> StepStatements {
        let mut rest = vec![
            Statement::new("INSERT INTO log (op, note) VALUES ($1, $2)")
                .arg(op)
                .arg(note),
        ];
        rest.extend(extra.map(Statement::new));
        StepStatements {
            step: Statement::new(
                "INSERT INTO steps (op, idx) VALUES ($1, $2) ON CONFLICT (op, idx) DO NOTHING",
            )
            .arg(op)
            .arg(index),
            operation: Statement::new("UPDATE ops SET seq = $1 WHERE id = $2")
                .arg(index)
                .arg(op),
            rest,
        }
    }

    /// A fresh database file with the tables the test steps write and operations `ops`.
    fn database(ops: &[&str]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("rein-writer-{}.db", uuid::Uuid::now_v7().simple()));
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE steps (op TEXT, idx INTEGER, PRIMARY KEY (op, idx));
             CREATE TABLE ops (id TEXT PRIMARY KEY, seq INTEGER);
             CREATE TABLE log (op TEXT, note TEXT);",
        )
        .unwrap();
        for op in ops {
            conn.execute("INSERT INTO ops (id, seq) VALUES (?1, 0)", [op])
                .unwrap();
        }
        path
    }

    fn remove(path: &std::path::Path) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    fn rows(path: &std::path::Path, sql: &str) -> Vec<String> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Commits that queue while the writer is busy share one transaction, and each gets its own
    /// outcome: a duplicate, a missing operation and a failing statement undo only their own
    /// savepoint, never the commits beside them.
    #[tokio::test]
    async fn queued_commits_share_one_transaction_and_keep_their_own_outcomes() {
        let path = database(&["a", "b", "c"]);
        let writer = Writer::start(path.to_str().unwrap(), "NORMAL").unwrap();
        let first = writer
            .commit(step("a", 1, "a1", None), OperationId::new())
            .await
            .unwrap();
        assert_eq!(first, CommitOutcome::Committed);
        assert_eq!(
            writer.stats(),
            WriterStats {
                transactions: 1,
                commits: 1,
                writes: 0
            }
        );

        let release = writer.hold();
        let mut batch = Box::pin(futures::future::join_all([
            writer.commit(step("a", 2, "a2", None), OperationId::new()),
            writer.commit(step("a", 1, "a1 again", None), OperationId::new()),
            writer.commit(step("d", 1, "d1", None), OperationId::new()),
            writer.commit(
                step("b", 1, "b1", Some("INSERT INTO no_such_table VALUES (1)")),
                OperationId::new(),
            ),
            writer.commit(step("c", 1, "c1", None), OperationId::new()),
        ]));
        // Every commit is queued behind the hold before the writer may take any of them.
        assert!(futures::poll!(&mut batch).is_pending());
        drop(release);
        let outcomes = batch.await;

        assert!(matches!(outcomes[0], Ok(CommitOutcome::Committed)));
        assert!(matches!(outcomes[1], Ok(CommitOutcome::Duplicate)));
        assert!(
            matches!(outcomes[2], Err(StoreError::OperationNotFound(_))),
            "{:?}",
            outcomes[2]
        );
        assert!(
            matches!(&outcomes[3], Err(StoreError::Sqlite(e)) if e.to_string().contains("no_such_table")),
            "{:?}",
            outcomes[3]
        );
        assert!(matches!(outcomes[4], Ok(CommitOutcome::Committed)));
        assert_eq!(
            writer.stats(),
            WriterStats {
                transactions: 2,
                commits: 6,
                writes: 0
            },
            "the five queued commits went into one transaction"
        );
        writer.stop();
        assert_eq!(
            rows(&path, "SELECT op || idx FROM steps ORDER BY op, idx"),
            ["a1", "a2", "c1"]
        );
        assert_eq!(
            rows(&path, "SELECT note FROM log ORDER BY rowid"),
            ["a1", "a2", "c1"]
        );
        assert_eq!(
            rows(&path, "SELECT id || seq FROM ops ORDER BY id"),
            ["a2", "b0", "c1"]
        );
        remove(&path);
    }

    /// When a commit's failure undoes the whole transaction (as SQLite does on a full disk or an
    /// I/O error; here a statement that rolls it back), no commit of the batch is told it
    /// landed, and none did.
    #[tokio::test]
    async fn a_transaction_undone_fails_every_commit_it_carried() {
        let path = database(&["a", "b", "c"]);
        let writer = Writer::start(path.to_str().unwrap(), "NORMAL").unwrap();
        let release = writer.hold();
        let mut batch = Box::pin(futures::future::join_all([
            writer.commit(step("a", 1, "a1", None), OperationId::new()),
            writer.commit(step("b", 1, "b1", Some("ROLLBACK")), OperationId::new()),
            writer.commit(step("c", 1, "c1", None), OperationId::new()),
        ]));
        assert!(futures::poll!(&mut batch).is_pending());
        drop(release);
        let outcomes = batch.await;
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Err(StoreError::Sqlite(_)))),
            "{outcomes:?}"
        );
        // The writer goes on: the next commit lands.
        let next = writer
            .commit(step("c", 1, "c1", None), OperationId::new())
            .await
            .unwrap();
        assert_eq!(next, CommitOutcome::Committed);
        writer.stop();
        assert_eq!(rows(&path, "SELECT op || idx FROM steps"), ["c1"]);
        assert_eq!(rows(&path, "SELECT note FROM log"), ["c1"]);
        remove(&path);
    }

    /// Plain writes share the step commits' transaction, each with its own outcome: the rows
    /// it changed, or its own error without undoing the rest.
    #[tokio::test]
    async fn plain_writes_ride_in_the_same_transaction() {
        let path = database(&["a", "b"]);
        let writer = Writer::start(path.to_str().unwrap(), "NORMAL").unwrap();
        let release = writer.hold();
        let commit = writer.commit(step("a", 1, "a1", None), OperationId::new());
        let touch = writer.write(vec![
            Statement::new("UPDATE ops SET seq = 7 WHERE id = $1").arg("b"),
            Statement::new("UPDATE ops SET seq = 8 WHERE id = $1").arg("nobody"),
        ]);
        let broken = writer.write(vec![Statement::new("UPDATE no_such_table SET x = 1")]);
        let mut all = Box::pin(async { futures::join!(commit, touch, broken) });
        assert!(futures::poll!(&mut all).is_pending());
        drop(release);
        let (commit, touch, broken) = all.await;
        assert_eq!(commit.unwrap(), CommitOutcome::Committed);
        assert_eq!(touch.unwrap(), 1, "one row changed of the two statements");
        assert!(matches!(broken, Err(StoreError::Sqlite(_))), "{broken:?}");
        assert_eq!(
            writer.stats(),
            WriterStats {
                transactions: 1,
                commits: 1,
                writes: 2
            }
        );
        writer.stop();
        assert_eq!(
            rows(&path, "SELECT id || seq FROM ops ORDER BY id"),
            ["a1", "b7"]
        );
        remove(&path);
    }

    /// A batch never outgrows its bound: what queued beyond it goes into the next transaction.
    #[tokio::test]
    async fn a_batch_is_bounded() {
        let path = database(&["a"]);
        let writer = Writer::start(path.to_str().unwrap(), "NORMAL").unwrap();
        let release = writer.hold();
        let n = MAX_BATCH as i64 * 2 + 1;
        let mut all =
            Box::pin(futures::future::join_all((1..=n).map(|i| {
                writer.commit(step("a", i, "a", None), OperationId::new())
            })));
        assert!(futures::poll!(&mut all).is_pending());
        drop(release);
        let outcomes = all.await;
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Ok(CommitOutcome::Committed)))
        );
        assert_eq!(
            writer.stats(),
            WriterStats {
                transactions: 3,
                commits: n as u64,
                writes: 0
            }
        );
        writer.stop();
        assert_eq!(rows(&path, "SELECT id || seq FROM ops"), [format!("a{n}")]);
        remove(&path);
    }
}
