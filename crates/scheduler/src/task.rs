//! The Task: the durable object that owns recurring work: its instruction, assignee agent,
//! status, review state, automation (none, a cron schedule, or a heartbeat), policies and
//! counters. Stored as a JSON body in the store's `tasks` table.

use crate::schedule::{Schedule, ScheduleError};
use chrono::{DateTime, Utc};
use rein_store::{RunTrigger, TaskRow};
use serde::{Deserialize, Serialize};

rein_core::named_enum! {
    /// Where a task is.
    #[derive(Default)]
    pub enum TaskStatus as "status" {
        /// Runs when due.
        #[default]
        Active = "active",
        /// Kept, not run.
        Paused = "paused",
        /// Done (its schedule reached its execution cap, or a person said so).
        Completed = "completed",
        /// Given up.
        Failed = "failed",
        /// Put away.
        Archived = "archived",
    }
}

rein_core::named_enum! {
    /// What a person thinks of the task's output.
    #[derive(Default)]
    pub enum ReviewState as "review" {
        /// Nobody looked.
        #[default]
        None = "none",
        /// Waiting for a look.
        Pending = "pending",
        /// Good.
        Approved = "approved",
        /// Needs changes.
        ChangesRequested = "changes_requested",
    }
}

/// How runs start besides manual ones (mutually exclusive).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Automation {
    /// Manual runs only.
    #[default]
    None,
    /// When a cron pattern in a time zone says so.
    Schedule {
        /// 5 or 6 fields.
        pattern: String,
        /// IANA zone.
        tz: String,
    },
    /// Every interval after the previous run ended, while the task stays active.
    Heartbeat {
        /// Interval in seconds.
        every_secs: u64,
        /// A run still going after this long is cancelled.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
    },
}

impl Automation {
    /// The delivery kind it plans (`None` for manual-only tasks).
    pub fn kind(&self) -> Option<RunTrigger> {
        match self {
            Automation::None => None,
            Automation::Schedule { .. } => Some(RunTrigger::Schedule),
            Automation::Heartbeat { .. } => Some(RunTrigger::Heartbeat),
        }
    }

    /// Its schedule, validated.
    pub fn schedule(&self) -> Result<Option<Schedule>, ScheduleError> {
        Ok(match self {
            Automation::None => None,
            Automation::Schedule { pattern, tz } => Some(Schedule::cron(pattern, tz)?),
            Automation::Heartbeat { every_secs, .. } => {
                let s = Schedule::Every {
                    seconds: *every_secs,
                };
                s.validate()?;
                Some(s)
            }
        })
    }
}

rein_core::named_enum! {
    /// When a fire finds a run still going.
    #[derive(Default)]
    pub enum Overlap as "overlap" {
        /// Skip the fire (recorded with the reason).
        #[default]
        Skip = "skip",
        /// Keep one fire waiting until the run ends; skip the others.
        QueueOne = "queue_one",
        /// Start another run anyway.
        Allow = "allow",
    }
}

rein_core::named_enum! {
    /// What happens to fires missed while no scheduler ran.
    #[derive(Default)]
    pub enum CatchUp as "catch_up" {
        /// Record them as skipped.
        #[default]
        SkipMissed = "skip_missed",
        /// Run the latest one once; record the others as skipped.
        RunOnce = "run_once",
    }
}

rein_core::named_enum! {
    /// What a task's runs do with a question their agent asks (nobody watches a run).
    #[derive(Default)]
    pub enum Questions as "questions" {
        /// The question tool says nobody is available (with the question's default, if any) and
        /// the model continues.
        #[default]
        Decline = "decline",
        /// The same, and the question goes to the owner as an urgent decision brief (its options
        /// as the brief's actions): it holds the next runs until answered, and the answer reaches
        /// the next run's prompt.
        Brief = "brief",
    }
}

impl Questions {
    fn is_decline(&self) -> bool {
        *self == Questions::Decline
    }
}

/// Consecutive failed runs that pause a task unless configured otherwise.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 3;

fn default_threshold() -> u32 {
    DEFAULT_FAILURE_THRESHOLD
}

/// A task (the store's row plus its typed body).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Task {
    /// Id.
    #[serde(skip)]
    pub id: String,
    /// Owner.
    #[serde(skip)]
    pub owner: String,
    /// Title.
    pub title: String,
    /// The prompt each run gets; self-contained (no earlier chat is assumed).
    pub instruction: String,
    /// The agent that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Status.
    #[serde(default)]
    pub status: TaskStatus,
    /// Why it is paused or failed, when the scheduler did it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// Review state.
    #[serde(default)]
    pub review: ReviewState,
    /// Automation.
    #[serde(default)]
    pub automation: Automation,
    /// Scheduled or heartbeat runs allowed since the automation was (re)started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_executions: Option<u64>,
    /// Scheduled or heartbeat runs since then (manual runs do not count).
    #[serde(default)]
    pub executions: u64,
    /// Overlap policy.
    #[serde(default)]
    pub overlap: Overlap,
    /// Catch-up policy.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// Consecutive failures that pause the task.
    #[serde(default = "default_threshold")]
    pub failure_threshold: u32,
    /// Consecutive failures so far.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// Changes whenever the automation is edited or restarted; fires planned under another
    /// value are stale and skipped.
    #[serde(default)]
    pub generation: String,
    /// Due times up to here have been planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_until: Option<DateTime<Utc>>,
    /// What people replied to its briefs: given to the next run's prompt, then kept (marked
    /// with that run) up to [`FEEDBACK_KEPT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback: Vec<Feedback>,
    /// Tasks that must complete before it runs (see [`crate::deps`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// What its runs do with their agent's questions.
    #[serde(default, skip_serializing_if = "Questions::is_decline")]
    pub questions: Questions,
    /// Whether the run its completed dependencies start has been started (reset when they
    /// change).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unblocked: bool,
    /// What its last runs handed on (see [`crate::handoff`]); the next run's prompt has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<rein_store::Handoff>,
    /// Created.
    #[serde(skip, default = "Utc::now")]
    pub created_at: DateTime<Utc>,
    /// Last change (the optimistic-concurrency token).
    #[serde(skip, default = "Utc::now")]
    pub updated_at: DateTime<Utc>,
}

/// Apply `change` to task `id` in `store` with optimistic concurrency: re-read and retry when
/// another writer got there first. The task as written, or `None` when it is gone or `change`
/// declined (returned `false`). `now` stamps the write (never before the one it replaces).
pub async fn update_task(
    store: &dyn rein_store::Tasks,
    id: &str,
    now: DateTime<Utc>,
    change: impl Fn(&mut Task) -> bool,
) -> Result<Option<Task>, TaskError> {
    for _ in 0..16 {
        let Some(row) = store.get_task(id).await? else {
            return Ok(None);
        };
        let mut task = Task::from_row(row)?;
        let expected = task.updated_at;
        if !change(&mut task) {
            return Ok(None);
        }
        task.updated_at = now.max(expected + chrono::Duration::microseconds(1));
        if store.replace_task(&task.to_row()?, expected).await? {
            return Ok(Some(task));
        }
    }
    Err(TaskError::Invalid(format!(
        "task {id} keeps changing; try again"
    )))
}

/// Feedback already given to a run that is kept for the record.
pub const FEEDBACK_KEPT: usize = 20;

/// A person's reply to one of the task's briefs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Feedback {
    /// What they said.
    pub comment: String,
    /// The brief they replied to.
    pub brief_id: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The run whose prompt carried it; `None` until one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_by: Option<String>,
}

impl Task {
    /// The prompt of its next run: the instruction, the last runs' handoffs, then the
    /// feedback no run has taken yet.
    pub fn prompt(&self) -> String {
        let open: Vec<&str> = self
            .feedback
            .iter()
            .filter(|f| f.taken_by.is_none())
            .map(|f| f.comment.as_str())
            .collect();
        let mut p = self.instruction.clone();
        p.push_str(&crate::handoff::prompt_part(&self.handoffs));
        if open.is_empty() {
            return p;
        }
        p.push_str("\n\nFeedback from the person on earlier runs (take it into account):");
        for c in open {
            p.push_str("\n- ");
            p.push_str(c);
        }
        p
    }

    /// Mark the feedback a run's prompt carried (what was open when it started) as taken by
    /// `run`; keep the last [`FEEDBACK_KEPT`] taken ones.
    pub fn take_feedback(&mut self, run: &str, started: DateTime<Utc>) -> bool {
        let mut changed = false;
        for f in &mut self.feedback {
            if f.taken_by.is_none() && f.at <= started {
                f.taken_by = Some(run.to_owned());
                changed = true;
            }
        }
        let taken = self
            .feedback
            .iter()
            .filter(|f| f.taken_by.is_some())
            .count();
        if taken > FEEDBACK_KEPT {
            let mut drop = taken - FEEDBACK_KEPT;
            self.feedback.retain(|f| {
                if drop > 0 && f.taken_by.is_some() {
                    drop -= 1;
                    false
                } else {
                    true
                }
            });
        }
        changed
    }
}

/// Why a task could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rein_store::StoreError),
    /// A stored body does not parse.
    #[error("task {id} is unreadable: {message}")]
    Corrupt {
        /// Task.
        id: String,
        /// Why.
        message: String,
    },
    /// A schedule is invalid.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// The request does not fit the task.
    #[error("{0}")]
    Invalid(String),
    /// No such task.
    #[error("no task {0}")]
    NotFound(String),
    /// The task names an agent its owner does not have.
    #[error("no agent `{0}` (a task runs one of its owner's stored agents)")]
    AgentMissing(String),
    /// A run could not start.
    #[error("the run could not start: {0}")]
    Launch(#[from] crate::dispatcher::LaunchError),
    /// No such brief (for this user).
    #[error("no brief {0}")]
    BriefNotFound(String),
    /// The brief was already resolved (resolving is single-use).
    #[error("brief {0} was already resolved")]
    BriefResolved(String),
    /// The resolution does not fit the brief (an action it does not offer, feedback without
    /// a comment).
    #[error("{0}")]
    BadResolution(String),
    /// The calls a brief asked about could not be decided (the run no longer waits for
    /// them); the brief stays open.
    #[error("the run's calls could not be decided: {0}")]
    Decide(crate::dispatcher::RunError),
}

impl TaskError {
    /// A request that does not fit, naming what was wrong.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }
}

impl Task {
    /// The typed task in a stored row.
    pub fn from_row(row: TaskRow) -> Result<Self, TaskError> {
        let mut t: Task = serde_json::from_value(row.body).map_err(|e| TaskError::Corrupt {
            id: row.id.clone(),
            message: e.to_string(),
        })?;
        t.id = row.id;
        t.owner = row.owner;
        t.created_at = row.created_at;
        t.updated_at = row.updated_at;
        Ok(t)
    }

    /// The row to store.
    pub fn to_row(&self) -> Result<TaskRow, TaskError> {
        Ok(TaskRow {
            id: self.id.clone(),
            owner: self.owner.clone(),
            body: serde_json::to_value(self).map_err(|e| TaskError::Corrupt {
                id: self.id.clone(),
                message: e.to_string(),
            })?,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }

    /// Check the fields a person sets.
    pub fn validate(&self) -> Result<(), TaskError> {
        if self.title.trim().is_empty() {
            return Err(TaskError::Invalid("the title is empty".into()));
        }
        if self.instruction.trim().is_empty() {
            return Err(TaskError::Invalid(
                "the instruction is empty (each run gets it as its whole prompt)".into(),
            ));
        }
        if self.failure_threshold == 0 {
            return Err(TaskError::Invalid(
                "the failure threshold must be at least 1".into(),
            ));
        }
        self.automation.schedule()?;
        Ok(())
    }

    /// Whether the execution cap is reached.
    pub fn cap_reached(&self) -> bool {
        self.max_executions.is_some_and(|m| self.executions >= m)
    }
}

/// A fresh generation token.
pub fn new_generation() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}
