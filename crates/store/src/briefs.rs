//! Briefs: durable reports that ask a person for attention, with the actions they offer and
//! their read and resolved state; each user's hook for urgent briefs; and the outbox of hook
//! deliveries (claimed with a lease, so several servers deliver each once, retried until
//! delivered). Resolving is single-use: the `resolved_at IS NULL` update decides a race.
//! The SQL behind [`Briefs`] is `sql/briefs.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// What every brief id looks like: `brief-` and a UUID (a run's brief carries its
/// operation's, so each run gives at most one).
pub const BRIEF_ID_PATTERN: &str =
    "^brief-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// Whether `id` is a brief id ([`BRIEF_ID_PATTERN`]).
pub fn valid_brief_id(id: &str) -> bool {
    id.strip_prefix("brief-").is_some_and(|u| {
        u.len() == 36 && uuid::Uuid::try_parse(u).is_ok() && u == u.to_ascii_lowercase()
    })
}

/// A fresh brief id (one an agent or a person raises).
pub fn new_brief_id() -> String {
    format!("brief-{}", uuid::Uuid::now_v7())
}

rein_core::named_enum! {
    /// What a brief reports.
    pub enum BriefKind as "kind" {
        /// What a run produced.
        Result = "result",
        /// Something only a person can decide.
        Decision = "decision",
        /// Something worth knowing.
        Insight = "insight",
        /// A run failed.
        Error = "error",
    }
}

rein_core::named_enum! {
    /// How much a brief asks for attention.
    pub enum BriefPriority as "priority" {
        /// Now (urgent briefs go to the owner's hook; an unresolved urgent decision holds the
        /// task's next runs).
        Urgent = "urgent",
        /// Soon.
        Normal = "normal",
        /// For the record.
        Info = "info",
    }
}

/// Something a brief points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Artifact {
    /// `operation`, `document` or `file`.
    pub kind: String,
    /// Its id or path.
    pub reference: String,
    /// What to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// An action a brief offers: `approve`, `retry`, `feedback`, `acknowledge`, or one of the
/// agent's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BriefAction {
    /// What resolving names.
    pub key: String,
    /// What a person reads.
    pub label: String,
}

/// How a brief was resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resolution {
    /// The action taken (one the brief offers).
    pub action: String,
    /// What the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// A durable report that asks a person for attention.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Brief {
    /// Its id.
    pub id: String,
    /// The user it is for.
    pub owner: String,
    /// The task whose run it reports on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The operation it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The agent that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What it reports.
    pub kind: BriefKind,
    /// How much it asks for attention.
    pub priority: BriefPriority,
    /// One line.
    pub title: String,
    /// A few sentences.
    pub summary: String,
    /// What it points at.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// What a person can do about it.
    #[serde(default)]
    pub actions: Vec<BriefAction>,
    /// When its owner first opened it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<DateTime<Utc>>,
    /// How it was resolved; `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl Brief {
    /// Whether it still asks for a decision that holds its task: urgent, unresolved, and not
    /// an error (an error asks for a retry; the task's schedule carries on).
    pub fn holds_task(&self) -> bool {
        self.priority == BriefPriority::Urgent
            && self.kind != BriefKind::Error
            && self.resolution.is_none()
    }
}

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
