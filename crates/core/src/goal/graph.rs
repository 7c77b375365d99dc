//! The goal graph as it is stored: the goal, its works with their attempts and verdicts, and
//! every plan revision.

use crate::ids::{GoalId, OperationId};
use serde::{Deserialize, Serialize};

crate::named_enum! {
    /// Where a goal stands.
    pub enum GoalStatus as "goal status" {
        /// Waiting for a plan (its first, or a new one a person or a retired work asked for).
        Planning = "planning",
        /// Works run and are verified.
        Running = "running",
        /// A person paused it: running works finish and are verified, none starts.
        Paused = "paused",
        /// It stopped where a person must decide: a work is blocked, the final acceptance found
        /// gaps, or its budget ran out under the interrupt policy.
        NeedsAttention = "needs_attention",
        /// Every work passed (or was retired) and the final acceptance passed, or a person
        /// accepted it.
        Achieved = "achieved",
        /// It ended without being achieved: its budget ran out under the stop policy, or a
        /// person rejected it.
        Failed = "failed",
        /// A person cancelled it.
        Cancelled = "cancelled",
    }
}

impl GoalStatus {
    /// Whether nothing more happens to it.
    pub fn is_final(self) -> bool {
        match self {
            Self::Achieved | Self::Failed | Self::Cancelled => true,
            Self::Planning | Self::Running | Self::Paused | Self::NeedsAttention => false,
        }
    }
}

crate::named_enum! {
    /// Where a work stands.
    pub enum WorkStatus as "work status" {
        /// Waiting for the works it depends on.
        Pending = "pending",
        /// Its dependencies passed: it starts when the goal runs.
        Ready = "ready",
        /// An attempt's operation runs.
        Running = "running",
        /// The attempt ended; an independent verification decides.
        Verifying = "verifying",
        /// A verification passed.
        Passed = "passed",
        /// It will not pass: a person gave up on it (the goal is replanned or cancelled).
        Failed = "failed",
        /// A new plan left it out, or a person skipped it: it no longer counts.
        Retired = "retired",
        /// Its attempts ran out (or made no progress): a person decides.
        Blocked = "blocked",
    }
}

impl WorkStatus {
    /// Whether works depending on it may start.
    pub fn unblocks(self) -> bool {
        match self {
            Self::Passed | Self::Retired => true,
            Self::Pending
            | Self::Ready
            | Self::Running
            | Self::Verifying
            | Self::Failed
            | Self::Blocked => false,
        }
    }
}

/// What bounds a goal beyond its budget (which its runner keeps as a ledger).
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GoalLimits {
    /// Attempts a work gets before it is blocked.
    pub max_attempts: u32,
    /// Works running at once.
    pub max_parallel: u32,
    /// Works a plan may have.
    pub max_works: u32,
}

impl Default for GoalLimits {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            max_parallel: 4,
            max_works: 40,
        }
    }
}

crate::named_enum! {
    /// What a goal's spent budget does to it.
    #[derive(Default)]
    pub enum OnBudget as "on_budget" {
        /// It fails, and its works' operations are cancelled.
        #[default]
        Stop = "stop",
        /// It waits for a person, its works' operations parked resumably.
        Interrupt = "interrupt",
    }
}

impl OnBudget {
    /// The budget policy its works' operations (and the goal's ledger) follow.
    pub fn policy(self) -> crate::state::BudgetPolicy {
        match self {
            Self::Stop => crate::state::BudgetPolicy::Stop,
            Self::Interrupt => crate::state::BudgetPolicy::Interrupt,
        }
    }
}

/// How a goal runs: who works, who plans and judges, and what the whole goal may spend.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GoalSettings {
    /// The agent works are assigned to by default (`None`: the owner's default agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model that plans (`None`: the process's system model, else its default model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planner: Option<crate::state::ModelRef>,
    /// The model that verifies works and accepts the goal (`None`: as the planner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier: Option<crate::state::ModelRef>,
    /// An agent that verifies works and accepts the goal instead of a model call: each
    /// verification is an operation of it (with its tools, so it can look at what the work
    /// made rather than read its answer alone), whose answer is the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier_agent: Option<String>,
    /// The whole goal's budget: every work's operation, planning and verification call.
    pub budget: crate::state::Budget,
    /// When it must be done by; past it, it stops as its budget policy says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<chrono::DateTime<chrono::Utc>>,
}

/// An independent judgement of some work (or of the whole goal) against its criteria.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Verdict {
    /// Whether every criterion is met.
    pub passed: bool,
    /// What is missing or wrong (empty when it passed).
    #[serde(default)]
    pub gaps: Vec<String>,
    /// What the judgement rests on: facts read in the output.
    #[serde(default)]
    pub evidence: Vec<String>,
}

impl Verdict {
    /// The JSON schema a verifier's answer follows (strict: every field required, nothing
    /// else).
    pub fn schema() -> serde_json::Value {
        let texts = serde_json::json!({"type": "array", "items": {"type": "string"}});
        serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["passed", "gaps", "evidence"],
            "properties": {
                "passed": {"type": "boolean"},
                "gaps": texts,
                "evidence": texts
            }
        })
    }
}

/// How an attempt's operation ended.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttemptEnd {
    /// It finished with this answer (what the verification reads).
    Finished {
        /// The operation's final answer.
        answer: String,
    },
    /// It did not finish (an error, a limit, a cancel): why.
    Failed {
        /// Why, as the operation says it.
        why: String,
    },
}

/// One try at a work: its operation, how it ended, the verdict on it.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1 for the first.
    pub n: u32,
    /// The operation that does it ([`work_operation_id`]).
    pub operation: OperationId,
    /// How it ended (`None`: it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<AttemptEnd>,
    /// The verification's verdict (`None`: not verified yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// A piece of the objective: one agent's instruction, with its own acceptance criteria.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    /// Short and unique in the goal (`w1`, `migrate-auth`).
    pub id: String,
    /// What to do.
    pub instruction: String,
    /// The agent that does it (`None`: the goal's agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Works that must pass (or be retired) first.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// What its verification checks.
    pub acceptance: String,
    /// Where it stands.
    pub status: WorkStatus,
    /// Its tries, in order.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Attempts a person granted beyond the goal's limit (each `retry` of a blocked work).
    #[serde(default)]
    pub extra_attempts: u32,
    /// The plan revision that added it.
    pub revision: u32,
}

impl Work {
    /// The attempt under way or last made.
    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.last()
    }

    /// The gaps of the verdict on the attempt before `attempt`, or why that attempt failed:
    /// what attempt `attempt` is told.
    pub fn feedback(&self, attempt: u32) -> Vec<String> {
        match self.attempts.iter().rev().find(|a| a.n < attempt) {
            Some(Attempt {
                verdict: Some(v), ..
            }) => v.gaps.clone(),
            Some(Attempt {
                end: Some(AttemptEnd::Failed { why }),
                ..
            }) => vec![format!("The last attempt did not finish: {why}")],
            _ => Vec::new(),
        }
    }

    /// The answer of its passing attempt (what works depending on it read).
    pub fn output(&self) -> Option<&str> {
        self.attempts
            .iter()
            .rev()
            .find_map(|a| match (&a.end, &a.verdict) {
                (Some(AttemptEnd::Finished { answer }), Some(v)) if v.passed => {
                    Some(answer.as_str())
                }
                _ => None,
            })
    }
}

/// One plan, as it was made: kept whole, so every change to the graph is explained.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRevision {
    /// 1 for the first plan.
    pub n: u32,
    /// Who made it: `planner:MODEL` or `user:NAME`.
    pub by: String,
    /// Why (the objective, the retired work, the person's reason).
    pub why: String,
    /// The works it planned (with the ones it kept, by id).
    pub works: Vec<String>,
}

/// A goal and its graph.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    /// Its id.
    pub id: GoalId,
    /// What it is to achieve.
    pub objective: String,
    /// What the final acceptance checks (default: the objective itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<String>,
    /// Its bounds.
    #[serde(default)]
    pub limits: GoalLimits,
    /// Where it stands.
    pub status: GoalStatus,
    /// Why it stands there, when a person should know (blocked work, gaps, budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its works, in plan order.
    #[serde(default)]
    pub works: Vec<Work>,
    /// Every plan made, in order.
    #[serde(default)]
    pub revisions: Vec<PlanRevision>,
    /// The final acceptance's verdict, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Whether the final acceptance is under way (asked, not yet answered).
    #[serde(default)]
    pub accepting: bool,
    /// The person who accepted or rejected it, and what they said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

impl Goal {
    /// A new goal, waiting for its first plan.
    pub fn new(objective: impl Into<String>) -> Self {
        Self {
            id: GoalId::new(),
            objective: objective.into(),
            acceptance: None,
            limits: GoalLimits::default(),
            status: GoalStatus::Planning,
            reason: None,
            works: Vec::new(),
            revisions: Vec::new(),
            verdict: None,
            accepting: false,
            decided_by: None,
        }
    }

    /// Work `id`.
    pub fn work(&self, id: &str) -> Option<&Work> {
        self.works.iter().find(|w| w.id == id)
    }

    pub(crate) fn work_mut(&mut self, id: &str) -> Option<&mut Work> {
        self.works.iter_mut().find(|w| w.id == id)
    }

    /// What the final acceptance checks.
    pub fn criteria(&self) -> &str {
        self.acceptance.as_deref().unwrap_or(&self.objective)
    }

    /// Attempts work `w` may make in all.
    pub fn attempts_allowed(&self, w: &Work) -> u32 {
        self.limits
            .max_attempts
            .max(1)
            .saturating_add(w.extra_attempts)
    }
}

/// The id of the operation of a verifier agent that judges attempt `attempt` of work `work`
/// (as plan revision `revision` made it), or, with no work, the final acceptance of plan
/// revision `revision` (a goal is accepted at most once per revision: a new verdict needs a
/// new plan). Derived like [`work_operation_id`], so a verification is started once; no work
/// id can be `verify:…`, so the two never meet.
pub fn verification_operation_id(
    goal: GoalId,
    work: Option<&str>,
    revision: u32,
    attempt: u32,
) -> OperationId {
    work_operation_id(
        goal,
        &format!("verify:{}", work.unwrap_or_default()),
        revision,
        attempt,
    )
}

/// The id of the operation that makes attempt `attempt` of work `work` as plan revision
/// `revision` made it, in goal `goal`: the same every time it is asked, so a coordinator step
/// run again after a crash finds the operation it started instead of starting a second one;
/// a later revision's work of the same name gets operations of its own.
pub fn work_operation_id(goal: GoalId, work: &str, revision: u32, attempt: u32) -> OperationId {
    let fnv = |seed: u64| {
        let mut h = seed;
        for b in work
            .bytes()
            .chain([0xff])
            .chain(revision.to_le_bytes())
            .chain(attempt.to_le_bytes())
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    };
    let salt = (u128::from(fnv(0xcbf2_9ce4_8422_2325)) << 64) | u128::from(fnv(0x84222325cbf29ce4));
    let mut bytes = (goal.as_uuid().as_u128() ^ salt).to_be_bytes();
    // Version 8 (custom), RFC 4122 variant.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    OperationId(uuid::Uuid::from_bytes(bytes))
}
