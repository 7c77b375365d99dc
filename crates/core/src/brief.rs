//! Briefs: durable reports that ask a person for attention (what a run produced, a decision
//! only they can make, an insight, a failure), with the actions they offer and how they were
//! resolved. Agents raise them (the `brief` tool), task runs end with one, and people resolve
//! them; the store keeps them (`rein_store::Briefs`).

use chrono::{DateTime, Utc};
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

crate::named_enum! {
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

crate::named_enum! {
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Artifact {
    /// `operation`, `document`, `file` or `goal`.
    pub kind: String,
    /// Its id or path.
    pub reference: String,
    /// What to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// An action a brief offers: `approve`, `retry`, `feedback`, `acknowledge`, or one of the
/// agent's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct BriefAction {
    /// What resolving names.
    pub key: String,
    /// What a person reads.
    pub label: String,
}

/// How a brief was resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
