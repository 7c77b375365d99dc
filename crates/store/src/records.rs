//! What the store keeps, as Rust types.

use chrono::{DateTime, Utc};
use rein_core::instruction::InstructionKind;
use rein_core::phase::RuntimeContext;
use rein_core::spec::OperationSpec;
use rein_core::state::{FinishReason, Status};
pub use rein_core::tool::{Effect, ExecStatus, ToolExecution};
use rein_core::{AgentEvent, AgentState, Message, OperationId, ToolCall, Usd};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What started an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// `rein run`.
    Cli,
    /// The HTTP API.
    Api,
    /// A cron schedule.
    Schedule,
    /// A heartbeat.
    Heartbeat,
    /// A parent operation.
    SubAgent,
}

/// A new operation: its initial state (with the user message) and where it belongs.
#[derive(Clone, Debug)]
pub struct NewOperation {
    /// Initial state; its messages are stored in the topic.
    pub state: AgentState,
    /// Conversation.
    pub topic_id: String,
    /// Agent name.
    pub agent: Option<String>,
    /// What started it.
    pub trigger: Trigger,
    /// Parent operation (sub-agents).
    pub parent_operation: Option<OperationId>,
    /// Context of the first step.
    pub next_context: Option<RuntimeContext>,
    /// The user it belongs to (`None`: the local single-user CLI).
    pub owner: Option<String>,
    /// What it may do; read back by every process that continues it.
    pub spec: OperationSpec,
    /// The start of what it was asked ([`prompt_start`]), for lists.
    pub prompt: Option<String>,
    /// Claim a running slot and the lease for a process in the same transaction (`None`: the
    /// operation is created unclaimed, e.g. by the CLI, which runs it itself).
    pub admission: Option<Admission>,
    /// A sub-agent's thread: its messages are kept there, not in the topic's conversation.
    pub thread: Option<NewThread>,
    /// How a top-level operation takes its turn in its conversation (one operation at a time);
    /// `None` for a sub-agent, which runs within its parent's turn.
    pub gate: Option<TopicGate>,
    /// The Responses API request it answers, kept with it in the same transaction (its
    /// `operation_id` is this operation's), so a response never exists without its request.
    pub response: Option<crate::ResponseRequest>,
}

/// One operation at a time per conversation: what a new operation does when another one of
/// its topic is running or parked (or queued before it), decided in the transaction that
/// creates it.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicGate {
    /// Wait, refuse, or interrupt the one in the way.
    pub when_busy: rein_core::spec::WhenBusy,
    /// What starting it later takes, kept as the caller gave it (its prompt and where it goes);
    /// given back by [`crate::Store::next_queued`].
    pub deferred: serde_json::Value,
}

/// How creating an operation went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    /// It may run now.
    Ready,
    /// Another operation of its conversation is running, parked or queued: it is queued and
    /// starts after it (nothing of it is in the conversation yet).
    Queued {
        /// The operation in the way (running or parked; the first queued one when none is).
        behind: OperationId,
        /// Its status.
        status: Status,
    },
}

/// A queued operation, oldest first in its topic, with what starting it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuedOperation {
    /// The operation.
    pub id: OperationId,
    /// What its creator deferred ([`TopicGate::deferred`]).
    pub deferred: serde_json::Value,
}

/// Where a sub-agent's thread hangs in its parent's topic.
#[derive(Clone, Debug)]
pub struct NewThread {
    /// The parent's tool message that delegated the task.
    pub parent_message_id: Option<rein_core::MessageId>,
    /// The task's title.
    pub title: String,
}

/// A thread of a topic: one sub-agent's conversation (its id is the sub-agent's operation id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Thread {
    /// Id (the sub-agent's operation id).
    pub id: String,
    /// The topic it belongs to.
    pub topic_id: String,
    /// The parent's tool message it hangs from.
    pub parent_message_id: Option<String>,
    /// The sub-agent's operation.
    pub operation_id: String,
    /// The operation that delegated to it.
    pub parent_operation: String,
    /// The agent it runs as.
    pub agent: Option<String>,
    /// The task's title.
    pub title: String,
    /// Created.
    pub created_at: DateTime<Utc>,
}

/// How many operations may run at once, each holding a live lease.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// Per owner (user).
    pub per_owner: Option<u64>,
    /// Across all owners.
    pub total: Option<u64>,
}

/// A running slot claimed with a lease: by which process, until when, under which limits.
#[derive(Clone, Debug)]
pub struct Admission {
    /// The process that will run it (its lease owner).
    pub node: String,
    /// Lease end.
    pub until: DateTime<Utc>,
    /// Now (leases that ran out before it do not count).
    pub now: DateTime<Utc>,
    /// The limits.
    pub limits: RunLimits,
}

/// Whose running limit was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityScope {
    /// The operation's owner's.
    Owner,
    /// The server's, across all owners.
    All,
}

impl std::fmt::Display for CapacityScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CapacityScope::Owner => "for this user",
            CapacityScope::All => "in all",
        })
    }
}

/// What claiming an operation for a run gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Claimed: the lease is this process's.
    Claimed,
    /// Another process holds a live lease.
    Busy,
}

/// Why the last process that tried could not resume an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecoveryNote {
    /// What stood in the way (missing key, unknown provider, missing MCP server, ...).
    pub reason: String,
    /// Attempts so far.
    pub attempts: u64,
    /// When recovery tries again.
    pub retry_at: Option<DateTime<Utc>>,
}

/// Which operations [`crate::Store::list_operations`] returns.
#[derive(Clone, Debug)]
pub struct OperationFilter {
    /// Only this status.
    pub status: Option<Status>,
    /// Only this owner's.
    pub owner: Option<String>,
    /// Only this agent's.
    pub agent: Option<String>,
    /// Only the sub-agents of this operation.
    pub parent: Option<OperationId>,
    /// Only this topic's (its conversation's operations and their sub-agents').
    pub topic: Option<String>,
    /// Only operations that are not sub-agents.
    pub top_level: bool,
    /// Leave out operations whose lease this process (node) holds: a server's recovery must
    /// not take up an operation it created claimed and is about to run.
    pub not_leased_by: Option<String>,
    /// At most this many.
    pub limit: u32,
}

impl Default for OperationFilter {
    fn default() -> Self {
        Self {
            status: None,
            owner: None,
            agent: None,
            parent: None,
            topic: None,
            top_level: false,
            not_leased_by: None,
            limit: 100,
        }
    }
}

rein_core::named_enum! {
    /// A human decision's state.
    pub enum InterventionStatus as "intervention_status" {
        /// Waiting.
        Pending = "pending",
        /// Approved.
        Approved = "approved",
        /// Rejected.
        Rejected = "rejected",
        /// Aborted with the operation.
        Aborted = "aborted",
        /// Nobody decided in time.
        Expired = "expired",
        /// A question (`ask_user`) was answered; `outcome` holds the answer as given.
        Answered = "answered",
    }
}

/// A pending (or decided) approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Intervention {
    /// Operation.
    pub operation_id: OperationId,
    /// The call awaiting a decision.
    pub call: ToolCall,
    /// Who may decide (a user id); `None` for anyone with access.
    pub owner: Option<String>,
    /// Status.
    pub status: InterventionStatus,
    /// Why it asks: what decided (the blacklist, the guard, the mode, the tool's policy, ...),
    /// the rule, a sentence, and for a shell rule the part of the command it matched. `None`
    /// for calls parked before reasons were recorded.
    #[schemars(with = "Option<serde_json::Value>")]
    pub reason: Option<rein_core::intervention::ApprovalReason>,
    /// Why it was rejected, aborted or expired; for an answered question, the answer.
    pub outcome: Option<String>,
    /// Who decided.
    pub decided_by: Option<String>,
    /// When.
    pub decided_at: Option<DateTime<Utc>>,
    /// Deadline for a decision.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was requested.
    pub created_at: DateTime<Utc>,
}

/// Everything one step changed, committed in one transaction.
#[derive(Clone, Debug)]
pub struct StepCommit {
    /// Operation.
    pub operation_id: OperationId,
    /// Commit index, 1-based; `(operation, step_index)` is the idempotency key.
    pub step_index: u64,
    /// The conversation its messages belong to (the operation's topic).
    pub topic_id: String,
    /// State after the step. Its small fields are written whole; its message list and tool
    /// manifests only as far as `changes` says they changed.
    pub state: AgentState,
    /// Context of the next step.
    pub next_context: Option<RuntimeContext>,
    /// What the step ran.
    pub instructions: Vec<StepRan>,
    /// What the step changed in the message list and the tool manifests.
    pub changes: StateChanges,
    /// Events the step emitted.
    pub events: Vec<AgentEvent>,
    /// Tool executions it started or finished.
    pub tool_executions: Vec<ToolExecution>,
    /// Approvals it requested.
    pub interventions: Vec<Intervention>,
    /// The thread its messages belong to (a sub-agent's: its operation id).
    pub thread_id: Option<String>,
    /// Sub-agents it delegated to, created with it.
    pub children: Vec<NewOperation>,
}

/// What a step changed in the bulky parts of the state, against the state last committed:
/// a commit writes these parts only as far as they changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StateChanges {
    /// Messages the step created or changed (written to the topic).
    pub messages: Vec<Arc<Message>>,
    /// Leading positions of the message list that still hold the same message ids.
    pub kept: usize,
    /// Length of the committed message list.
    pub previous: usize,
    /// Whether the tool manifests changed (then they are written again).
    pub manifests_changed: bool,
    /// The ids the committed list held from `kept` on (what the step moved or dropped), so
    /// the list before the step can be rebuilt from the list after it.
    pub removed: Vec<rein_core::MessageId>,
    /// The committed versions of the messages the step changed in place (not the ones it
    /// created), so each message's body before the step can be rebuilt.
    pub replaced: Vec<Arc<Message>>,
    /// The committed tool manifests, when the step changed them.
    pub manifests_before: Option<Arc<rein_core::tool::ToolManifestMap>>,
}

impl StateChanges {
    /// What changed from `before` (the committed state) to `after`. Messages compare by
    /// pointer first (a step shares the ones it did not touch), by value only when a message
    /// was copied; so does the manifest map.
    pub fn between(before: &AgentState, after: &AgentState) -> Self {
        let manifests_changed = !Arc::ptr_eq(&before.tool_manifests, &after.tool_manifests)
            && before.tool_manifests != after.tool_manifests;
        let manifests_before = manifests_changed.then(|| Arc::clone(&before.tool_manifests));
        // The common case, checked in one pass of pointer comparisons: the step left every
        // message where it was (shared, untouched) and appended.
        let untouched = before
            .messages
            .iter()
            .zip(&after.messages)
            .take_while(|(b, a)| Arc::ptr_eq(b, a))
            .count();
        if untouched == before.messages.len() {
            return Self {
                messages: after.messages[untouched..].to_vec(),
                kept: untouched,
                previous: untouched,
                manifests_changed,
                removed: Vec::new(),
                replaced: Vec::new(),
                manifests_before,
            };
        }
        let shared: std::collections::HashSet<*const Message> =
            before.messages.iter().map(Arc::as_ptr).collect();
        let by_id: std::collections::HashMap<rein_core::MessageId, &Arc<Message>> =
            before.messages.iter().map(|m| (m.id, m)).collect();
        let mut messages = Vec::new();
        let mut replaced = Vec::new();
        for m in &after.messages {
            if shared.contains(&Arc::as_ptr(m)) {
                continue;
            }
            match by_id.get(&m.id) {
                None => messages.push(Arc::clone(m)),
                Some(b) if ***b != **m => {
                    messages.push(Arc::clone(m));
                    replaced.push(Arc::clone(b));
                }
                Some(_) => {}
            }
        }
        let kept = before
            .messages
            .iter()
            .zip(&after.messages)
            .take_while(|(b, a)| b.id == a.id)
            .count();
        Self {
            messages,
            kept,
            previous: before.messages.len(),
            manifests_changed,
            removed: before.messages[kept..].iter().map(|m| m.id).collect(),
            replaced,
            manifests_before,
        }
    }
}

/// Whether a commit took effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Written.
    Committed,
    /// A commit with this key already exists; nothing was written.
    Duplicate,
}

/// How much of what an operation was asked its record keeps, in characters.
pub const PROMPT_START_CHARS: usize = 120;

/// The start of `text` as an operation's record keeps it: one line (line breaks and runs of
/// blanks as one space), at most [`PROMPT_START_CHARS`] characters, `…` when cut.
pub fn prompt_start(text: &str) -> String {
    // Whatever wrote it, the record takes it on both backends (PostgreSQL refuses U+0000).
    let text = rein_core::text::visible_controls(text);
    let words: Vec<&str> = text.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= PROMPT_START_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(PROMPT_START_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The queryable summary of an operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OperationRecord {
    /// Id.
    pub id: OperationId,
    /// Agent name.
    pub agent: Option<String>,
    /// Conversation.
    pub topic_id: String,
    /// What started it.
    pub trigger: Trigger,
    /// Provider.
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Status.
    pub status: Status,
    /// Why it finished.
    pub finish_reason: Option<FinishReason>,
    /// Detail.
    pub finish_detail: Option<String>,
    /// Counted steps.
    pub step_count: u64,
    /// Step limit.
    pub max_steps: Option<u64>,
    /// Commits so far.
    pub commit_seq: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Cost.
    pub cost: Usd,
    /// Approval requests.
    pub approval_requests: u64,
    /// Cancellation requested by someone outside the running process.
    pub cancel_requested: bool,
    /// Failure.
    pub error: Option<String>,
    /// Parent operation.
    pub parent_operation: Option<OperationId>,
    /// The root of its operation tree (`None` for a root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_operation: Option<OperationId>,
    /// 0 for a root, 1 for its sub-agents, ...
    #[serde(default)]
    pub depth: u64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// The user it belongs to.
    pub owner: Option<String>,
    /// The start of what it was asked (one line, at most 120 characters); none for operations
    /// created before rein kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Why it could not be resumed, when the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryNote>,
    /// What it is doing, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
}

/// What a running operation is doing, in which step, since when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Activity {
    /// The step (counted steps so far, this one included).
    pub step: u32,
    /// Since when.
    pub since: DateTime<Utc>,
    /// What.
    #[serde(flatten)]
    pub doing: Doing,
}

/// What a step is busy with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "doing", rename_all = "snake_case")]
pub enum Doing {
    /// Deciding what to do next (the brain, between calls).
    Deciding,
    /// Waiting for the model.
    ModelCall {
        /// `provider/model`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Running tools.
    Tools {
        /// `identifier/api` of each call.
        names: Vec<String>,
    },
    /// Waiting to retry a failed model call.
    BackingOff {
        /// The attempt that follows.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// When it starts.
        retry_at: DateTime<Utc>,
        /// What failed (`rate_limit`, `overloaded`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_kind: Option<String>,
    },
}

/// A record with its full state and next context.
#[derive(Clone, Debug)]
pub struct StoredOperation {
    /// Summary.
    pub record: OperationRecord,
    /// State, messages included.
    pub state: AgentState,
    /// Context of the next step.
    pub next_context: Option<RuntimeContext>,
    /// Messages the state refers to that were deleted from the topic (left out of `state`).
    pub missing_messages: Vec<String>,
    /// What it may do. Operations started before specs were stored get one rebuilt from their
    /// state (without an allow-list, which those operations did not keep).
    pub spec: OperationSpec,
}

/// What one committed step ran: instructions or, with none, a transition made outside a step
/// (a person's decision, a settlement). Stored and answered as its name: the instruction's
/// `type` tag, or `human_decision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepRan {
    /// An instruction of this kind.
    Instruction(InstructionKind),
    /// A transition outside a step: a person's decision, a settlement.
    HumanDecision,
}

impl StepRan {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Instruction(kind) => kind.as_str(),
            Self::HumanDecision => "human_decision",
        }
    }
}

impl From<InstructionKind> for StepRan {
    fn from(kind: InstructionKind) -> Self {
        Self::Instruction(kind)
    }
}

impl std::fmt::Display for StepRan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StepRan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StepRan {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        if name == "human_decision" {
            return Ok(Self::HumanDecision);
        }
        InstructionKind::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&name))
            .map(Self::Instruction)
    }
}

impl schemars::JsonSchema for StepRan {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StepRan".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An instruction's `type`, or `human_decision` (a transition outside a step).",
            "anyOf": [g.subschema_for::<InstructionKind>(), {"type": "string", "enum": ["human_decision"]}]
        })
    }
}

/// One committed step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRecord {
    /// Commit index.
    pub step_index: u64,
    /// Status after it.
    pub status: Status,
    /// What it ran.
    pub instructions: Vec<StepRan>,
    /// When.
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_step_ran_is_stored_as_its_name() {
        let ran = vec![
            StepRan::Instruction(InstructionKind::CallLlm),
            StepRan::HumanDecision,
        ];
        let text = serde_json::to_string(&ran).unwrap();
        assert_eq!(text, r#"["call_llm","human_decision"]"#);
        assert_eq!(serde_json::from_str::<Vec<StepRan>>(&text).unwrap(), ran);
        assert!(serde_json::from_str::<StepRan>(r#""teleport""#).is_err());
    }
}
