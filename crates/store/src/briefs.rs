//! Briefs: durable reports that ask a person for attention, with the actions they offer and
//! their read and resolved state; each user's hook for urgent briefs; and the outbox of hook
//! deliveries (claimed with a lease, so several servers deliver each once, retried until
//! delivered). Resolving is single-use: the `resolved_at IS NULL` update decides a race.
//! The brief itself is a domain record, [`rein_core::brief`]; this module keeps it.
//! The SQL behind [`Briefs`] is `sql/briefs.rs`.

pub use rein_core::brief::{
    Artifact, BRIEF_ID_PATTERN, Brief, BriefAction, BriefKind, BriefPriority, Resolution,
    new_brief_id, valid_brief_id,
};

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Which briefs to list (newest first).
#[derive(Clone, Debug, Default)]
pub struct BriefFilter {
    /// One user's.
    pub owner: Option<String>,
    /// One task's.
    pub task_id: Option<String>,
    /// Only unresolved ones.
    pub unresolved: bool,
    /// At most this many (0: 100).
    pub limit: u32,
}

/// A user's hook for urgent briefs: a URL that receives each as a signed JSON POST.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefHook {
    /// The user.
    pub owner: String,
    /// Where to POST.
    pub url: String,
    /// The HMAC-SHA256 key of the signature header.
    pub secret: String,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

/// One hook delivery of a brief, claimed for an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BriefNotice {
    /// The brief.
    pub brief_id: String,
    /// Its owner (whose hook).
    pub owner: String,
    /// Attempts so far, this one included.
    pub attempts: u32,
}

/// Briefs in a store.
pub trait Briefs: Send + Sync {
    /// Store a new brief; with `notify_at`, also queue its hook delivery (same transaction).
    fn add_brief<'a>(
        &'a self,
        brief: &'a Brief,
        notify_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// One brief.
    fn get_brief<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Brief>, StoreError>>;
    /// Briefs, newest first.
    fn list_briefs<'a>(
        &'a self,
        filter: &'a BriefFilter,
    ) -> BoxFuture<'a, Result<Vec<Brief>, StoreError>>;
    /// Mark it read (the first time only); whether it exists.
    fn mark_brief_read<'a>(
        &'a self,
        id: &'a str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Resolve it, once: `false` when it was already resolved (or does not exist).
    fn resolve_brief<'a>(
        &'a self,
        id: &'a str,
        resolution: &'a Resolution,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Set (or replace) a user's hook.
    fn set_brief_hook<'a>(&'a self, hook: &'a BriefHook) -> BoxFuture<'a, Result<(), StoreError>>;
    /// A user's hook.
    fn brief_hook<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<BriefHook>, StoreError>>;
    /// The task whose run `operation_id` is, if it is one.
    fn task_of_run<'a>(
        &'a self,
        operation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
    /// Remove a user's hook; whether there was one.
    fn delete_brief_hook<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Claim hook deliveries due by `now` (undelivered, next attempt reached) until `until`:
    /// another process claims them only after that.
    fn claim_brief_notices<'a>(
        &'a self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<BriefNotice>, StoreError>>;
    /// Record an attempt: delivered at `delivered`, or failed with `error` and tried again at
    /// `retry_at` (`None`: given up).
    fn settle_brief_notice<'a>(
        &'a self,
        brief_id: &'a str,
        delivered: Option<DateTime<Utc>>,
        error: Option<&'a str>,
        retry_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}
