//! Retention and backups: what a long-lived database lets go of, and a copy of it. A finished
//! operation (done or failed) keeps its record and its conversation's messages forever, but its
//! step records, event log and tool execution results can be compacted away once it is old
//! enough; nothing of an operation that is running, parked, queued or interrupted is touched.
//! A conversation (topic) nobody touched for long enough can go too: its messages and threads
//! are deleted, its operations' records kept (what they cost stays in the usage sums).
//! The SQL behind [`Retention`] is `sql/retention.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use std::path::Path;

/// What compacting removed (or, in a dry run, would remove).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Operations compacted.
    pub operations: u64,
    /// Step records deleted.
    pub steps: u64,
    /// Events deleted.
    pub events: u64,
    /// Tool execution results deleted.
    pub tool_executions: u64,
}

impl std::ops::AddAssign for Compacted {
    fn add_assign(&mut self, o: Self) {
        self.operations += o.operations;
        self.steps += o.steps;
        self.events += o.events;
        self.tool_executions += o.tool_executions;
    }
}

/// Compaction and backups.
pub trait Retention {
    /// Compact up to `limit` operations that finished (done or failed) before `before` and
    /// still keep steps, events or tool executions, oldest first: their rows are deleted in
    /// one transaction when `apply`, only counted otherwise.
    fn compact_finished<'a>(
        &'a self,
        before: DateTime<Utc>,
        limit: u64,
        apply: bool,
    ) -> BoxFuture<'a, Result<Compacted, StoreError>>;

    /// Up to `limit` topics created before `before` that got no message since and whose
    /// operations are all done or failed, oldest first.
    fn stale_topics<'a>(
        &'a self,
        before: DateTime<Utc>,
        limit: u64,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>>;

    /// Write a consistent copy of the database to `to` (SQLite: a new file; refused when it
    /// exists). PostgreSQL is copied with its own tool (`pg_dump`): refused here, naming it.
    fn backup<'a>(&'a self, to: &'a Path) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// Compact every operation [`Retention::compact_finished`] finds, in batches of `batch` (each
/// its own transaction, so a server keeps serving in between); a dry run (`apply` false)
/// counts them all at once.
pub async fn compact_all(
    store: &(dyn Retention + Sync),
    before: DateTime<Utc>,
    batch: u64,
    apply: bool,
) -> Result<Compacted, StoreError> {
    if !apply {
        return store.compact_finished(before, u64::MAX, false).await;
    }
    let batch = batch.max(1);
    let mut total = Compacted::default();
    loop {
        let done = store.compact_finished(before, batch, true).await?;
        total += done;
        if done.operations < batch {
            return Ok(total);
        }
    }
}

/// Delete every topic [`Retention::stale_topics`] finds, `batch` at a time (each topic its own
/// transaction), keeping their operations' records; how many went. A topic that became busy in
/// between is left (the store refuses it). A dry run (`apply` false) only counts.
pub async fn delete_stale_topics<S>(
    store: &S,
    before: DateTime<Utc>,
    batch: u64,
    apply: bool,
) -> Result<u64, StoreError>
where
    S: Retention + crate::Topics + Sync + ?Sized,
{
    if !apply {
        return Ok(store.stale_topics(before, u64::MAX).await?.len() as u64);
    }
    let batch = batch.max(1);
    let mut deleted = 0;
    loop {
        let ids = store.stale_topics(before, batch).await?;
        let mut gone = 0;
        for id in &ids {
            match store.delete_topic(id, crate::OperationRecords::Keep).await {
                Ok(Some(_)) => gone += 1,
                Ok(None) | Err(StoreError::InUse(_)) => {}
                Err(e) => return Err(e),
            }
        }
        deleted += gone;
        // A batch of which nothing could go would come back the same: stop there.
        if (ids.len() as u64) < batch || gone == 0 {
            return Ok(deleted);
        }
    }
}
