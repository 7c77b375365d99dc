//! The operation's state: the serializable "passport" the engine threads through every step.

use crate::ids::{MessageId, OperationId};
use crate::instruction::Instruction;
use crate::intervention::{SecurityRule, UserInterventionConfig};
use crate::message::{Message, Role, ToolCall};
use crate::tool::{ActivatedTool, Fnv, ToolManifest, ToolManifestMap};
use crate::usage::{Cost, Usage, Usd};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

crate::named_enum! {
    /// Where an operation is in its life.
    #[derive(Default)]
    pub enum Status as "status" {
        /// Created, not started.
        #[default]
        Idle = "idle",
        /// Accepted while another operation of its conversation was running or parked: it starts
        /// when that one ends (its prompt joins the conversation then, after what came before).
        Queued = "queued",
        /// Executing steps.
        Running = "running",
        /// Parked until a human approves, answers or selects.
        WaitingForHuman = "waiting_for_human",
        /// Parked until an asynchronous (device, deferred) tool reports back.
        WaitingForAsyncTool = "waiting_for_async_tool",
        /// Parked while the sub-agents it delegated to run; it continues once all have ended.
        WaitingForSubAgents = "waiting_for_sub_agents",
        /// Stopped on request or by a budget; `interruption` says whether it can resume.
        Interrupted = "interrupted",
        /// Finished; `finish` says why.
        Done = "done",
        /// Failed; `error` says why.
        Error = "error",
    }
}

impl Status {
    /// A resumable pause that waits for something outside the loop.
    pub fn is_parked(self) -> bool {
        matches!(
            self,
            Status::WaitingForHuman | Status::WaitingForAsyncTool | Status::WaitingForSubAgents
        )
    }

    /// Stops the instruction loop: parked or interrupted.
    pub fn is_blocked(self) -> bool {
        self.is_parked() || self == Status::Interrupted
    }

    /// Will never run again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Done | Status::Error)
    }
}

crate::named_enum! {
    /// Why an operation finished.
    pub enum FinishReason as "finish_reason" {
        /// The model answered without asking for tools.
        Completed = "completed",
        /// The user cancelled.
        UserRequested = "user_requested",
        /// The user aborted pending tool calls.
        UserAborted = "user_aborted",
        /// The step limit forced a final answer.
        MaxStepsCompleted = "max_steps_completed",
        /// A cost budget with policy `stop` was exceeded.
        CostLimitExceeded = "cost_limit_exceeded",
        /// A token budget with policy `stop` was exceeded.
        TokenLimitExceeded = "token_limit_exceeded",
        /// An external agent took more steps than the step limit and was stopped (it cannot be
        /// made to answer early the way rein's own brain is).
        StepLimitExceeded = "step_limit_exceeded",
        /// The same tool call with the same arguments repeated too often.
        LoopDetected = "loop_detected",
        /// The model kept naming tools that do not exist.
        ToolNameErrors = "tool_name_errors",
        /// A deadline passed.
        Timeout = "timeout",
        /// The agent decided to stop (including unknown phases).
        AgentDecision = "agent_decision",
        /// A queued user message takes over.
        QueuedMessageInterrupt = "queued_message_interrupt",
        /// Finished after an error phase.
        ErrorRecovery = "error_recovery",
        /// The host is shutting down.
        SystemShutdown = "system_shutdown",
    }
}

impl FinishReason {
    /// Whether this outcome is a success a caller may treat as "the work was done".
    pub fn is_success(self) -> bool {
        matches!(
            self,
            FinishReason::Completed | FinishReason::MaxStepsCompleted
        )
    }
}

/// How an operation finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finish {
    /// Reason code.
    pub reason: FinishReason,
    /// Human-readable detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// An operation failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateError {
    /// What kind of failure (written as its name: `executor_missing`, `rate_limit`, ...).
    pub code: crate::failure::FailureCode,
    /// What went wrong.
    pub message: String,
}

crate::named_enum! {
    /// What to do when a budget is exceeded.
    #[derive(Default)]
    pub enum BudgetPolicy as "budget_policy" {
        /// Finish with `cost_limit_exceeded` / `token_limit_exceeded`.
        #[default]
        Stop = "stop",
        /// Interrupt, resumable once the budget is raised.
        Interrupt = "interrupt",
        /// Emit a `budget_exceeded` event once per budget and keep going.
        Warn = "warn",
    }
}

/// Which budget a check concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// Total tokens of the operation.
    Tokens,
    /// Total cost of the operation.
    Cost,
    /// Cost of a single model call.
    ModelCallCost,
    /// Cost of a single tool call.
    ToolCallCost,
}

/// Limits on what an operation may consume. Every limit is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// Maximum total tokens (input + output) across all model calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Maximum total cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<Usd>,
    /// Maximum cost of any one model call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_model_call_cost: Option<Usd>,
    /// Maximum cost of any one tool call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_call_cost: Option<Usd>,
    /// What happens when a limit is exceeded.
    pub on_exceeded: BudgetPolicy,
}

/// Why and when an operation was interrupted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interruption {
    /// Human-readable reason.
    pub reason: String,
    /// When.
    pub interrupted_at: DateTime<Utc>,
    /// The instruction that had not run yet, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_instruction: Option<Box<Instruction>>,
    /// Whether `resume` is allowed.
    pub can_resume: bool,
    /// How the operation finishes when the interruption is settled instead of resumed
    /// (`user_requested` when absent; `timeout` for an expired approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
}

/// A sub-agent an operation delegated to and waits for: a child operation answering one task
/// of one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentRun {
    /// The child operation.
    pub operation_id: OperationId,
    /// The call that delegated the task; the child's answer becomes (part of) its result.
    pub tool_call_id: String,
    /// The agent it runs as (`None`: an ad-hoc sub-agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The task's title.
    pub title: String,
}

/// A free-text question for a human.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HumanPrompt {
    /// The question.
    pub prompt: String,
    /// Why the agent asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Extra data for the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

/// One choice of a selection prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectOption {
    /// Shown to the human.
    pub label: String,
    /// Returned to the agent.
    pub value: String,
}

/// A selection question for a human.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HumanSelect {
    /// The choices.
    pub options: Vec<SelectOption>,
    /// Whether several may be chosen.
    #[serde(default)]
    pub multi: bool,
    /// The question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Why the agent asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Extra data for the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

/// Which model an operation talks to.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelRef {
    /// Provider id (`openai`, `anthropic`, `ollama`, ...).
    pub provider: Arc<str>,
    /// Model id at that provider.
    pub model: Arc<str>,
}

impl ModelRef {
    /// `provider/model`, the key used in usage and cost maps.
    pub fn key(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// Facts about where and for whom the operation runs; dynamic audits read them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Metadata {
    /// Directory the operation's file and shell tools are scoped to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// The shell's sandbox (from the spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::spec::Sandbox>,
    /// The user it belongs to (`None`: this machine's one user). Stored under its earlier
    /// name, `user_id`, so states written before it was typed read the same.
    #[serde(rename = "user_id", default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Agent that runs the operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Conversation the operation belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// The knowledge bases it may search (from the spec), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<String>,
    /// The hosts `web.fetch` may reach (from the spec; `None`: any public host). While it is
    /// set, the shell and the interpreters get no network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<String>>,
    /// The most tokens of knowledge chunks a model call carries (from the spec; `None`: the
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge_tokens: Option<u32>,
    /// Which learnt memories it reads and is read for (from the spec).
    #[serde(default, skip_serializing_if = "crate::spec::MemoryScope::is_user")]
    pub memory_scope: crate::spec::MemoryScope,
    /// The task a remote agent runs for it (an `a2a:NAME` operation), once the remote agent
    /// has named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task: Option<RemoteTask>,
    /// Anything else the host wants to carry.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// A remote agent's task, as the operation it runs for keeps it: enough for any process
/// continuing the operation to follow the same task rather than send the request again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteTask {
    /// Its id on the remote agent.
    pub id: String,
    /// A person's answer to the remote agent's last question, decided but not yet sent to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<crate::question::Answer>,
}

/// Tracks consecutive identical tool calls for the loop breaker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolRepeat {
    /// Signature of the last executed call (see [`ToolRepeat::signature`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<u64>,
    /// How many times in a row it ran.
    pub count: u32,
}

/// A canonical hash of a JSON document, computed while parsing (no tree is built): object
/// members are combined order-independently, so `{"a":1,"b":2}` and `{"b":2, "a":1}` agree.
struct CanonicalHash(u64);

fn leaf(tag: &[u8], bytes: &[u8]) -> CanonicalHash {
    let mut h = Fnv::new();
    h.bytes(tag).bytes(bytes);
    CanonicalHash(h.finish())
}

impl<'de> Deserialize<'de> for CanonicalHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CanonicalVisitor)
    }
}

struct CanonicalVisitor;

impl<'de> serde::de::Visitor<'de> for CanonicalVisitor {
    type Value = CanonicalHash;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<CanonicalHash, E> {
        Ok(leaf(b"n", b""))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<CanonicalHash, E> {
        Ok(leaf(b"b", &[u8::from(v)]))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<CanonicalHash, E> {
        Ok(leaf(b"i", &v.to_le_bytes()))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<CanonicalHash, E> {
        // Non-negative integers hash alike whether they arrive as i64 or u64.
        match i64::try_from(v) {
            Ok(i) => self.visit_i64(i),
            Err(_) => Ok(leaf(b"u", &v.to_le_bytes())),
        }
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<CanonicalHash, E> {
        Ok(leaf(b"f", &v.to_bits().to_le_bytes()))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CanonicalHash, E> {
        Ok(leaf(b"s", v.as_bytes()))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<CanonicalHash, A::Error> {
        let mut h = Fnv::new();
        h.bytes(b"[");
        while let Some(CanonicalHash(item)) = seq.next_element::<CanonicalHash>()? {
            h.bytes(&item.to_le_bytes());
        }
        Ok(CanonicalHash(h.finish()))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<CanonicalHash, A::Error> {
        let mut sum: u64 = 0;
        let mut count: u64 = 0;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let CanonicalHash(value) = map.next_value::<CanonicalHash>()?;
            let mut h = Fnv::new();
            h.bytes(key.as_bytes())
                .bytes(b"=")
                .bytes(&value.to_le_bytes());
            sum = sum.wrapping_add(h.finish());
            count += 1;
        }
        let mut h = Fnv::new();
        h.bytes(b"{")
            .bytes(&count.to_le_bytes())
            .bytes(&sum.to_le_bytes());
        Ok(CanonicalHash(h.finish()))
    }
}

impl ToolRepeat {
    /// A stable 64-bit signature of a call: its tool, API and arguments in canonical form (key
    /// order and whitespace do not make two calls different; malformed arguments compare as
    /// trimmed text).
    pub fn signature(call: &ToolCall) -> u64 {
        let mut h = Fnv::new();
        h.bytes(call.identifier.as_bytes())
            .bytes(b"/")
            .bytes(call.api.as_bytes())
            .bytes(b"\0");
        match serde_json::from_str::<CanonicalHash>(&call.arguments) {
            Ok(CanonicalHash(v)) => {
                h.bytes(&v.to_le_bytes());
            }
            Err(_) => {
                h.bytes(b"raw").bytes(call.arguments.trim().as_bytes());
            }
        }
        h.finish()
    }

    /// Count one more executed call.
    pub fn record(&mut self, call: &ToolCall) {
        self.record_signature(Self::signature(call));
    }

    /// Count one more executed call, by its [`ToolRepeat::signature`].
    pub fn record_signature(&mut self, sig: u64) {
        if self.last == Some(sig) {
            self.count += 1;
        } else {
            self.last = Some(sig);
            self.count = 1;
        }
    }
}

/// The complete, serializable state of one operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// Which operation.
    pub operation_id: OperationId,
    /// Lifecycle status.
    #[serde(default)]
    pub status: Status,
    /// The conversation the model works on. Messages are shared, so cloning a state (every
    /// step, every batched tool) copies pointers, not transcripts; mutate through
    /// [`AgentState::message_mut`], which copies one message on write.
    #[serde(default)]
    pub messages: Vec<Arc<Message>>,
    /// Committed steps (a step that finishes does not count).
    #[serde(default)]
    pub step_count: u32,
    /// Step limit; crossing it forces a final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Set once the step limit is crossed: the next model call gets no tools.
    #[serde(default)]
    pub force_finish: bool,
    /// Default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// What has been consumed.
    #[serde(default)]
    pub usage: Usage,
    /// What has been spent.
    #[serde(default)]
    pub cost: Cost,
    /// Limits on usage and cost.
    #[serde(default)]
    pub budget: Budget,
    /// Budgets already warned about (policy `warn` reports each once).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub budget_warnings: BTreeSet<BudgetKind>,
    /// Tool calls waiting for a human decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_tool_calls: Vec<ToolCall>,
    /// Assistant message owning the pending calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_parent_message_id: Option<MessageId>,
    /// Open free-text question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_human_prompt: Option<HumanPrompt>,
    /// Open selection question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_human_select: Option<HumanSelect>,
    /// Assistant placeholder the next model call must reuse (consumed once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_assistant_message_id: Option<MessageId>,
    /// Set while interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interruption: Option<Interruption>,
    /// Tool calls whose results come from outside any step (a connected device runs them), by
    /// call id, in call order: their tool messages stay `pending` and the operation waits
    /// (`waiting_for_async_tool`) until each is answered (`AgentRuntime::complete_async_tool`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub async_calls: Vec<String>,
    /// Tasks tool calls delegated in the current turn, not started yet: the next instruction
    /// after the turn's tools have run starts them (`exec_sub_agents`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegated: Vec<crate::instruction::SubAgentTask>,
    /// The sub-agents this operation waits for (status `waiting_for_sub_agents`), in the
    /// order of the calls that delegated to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_agents: Vec<SubAgentRun>,
    /// Tools available to the operation, by identifier: a snapshot shared by every clone of
    /// the state (change it with `Arc::make_mut`).
    #[serde(default)]
    pub tool_manifests: Arc<ToolManifestMap>,
    /// Tools activated during the operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activated_tools: Vec<ActivatedTool>,
    /// Skills admitted into the calls, in activation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub activated_skills: Vec<crate::tool::ActivatedSkill>,
    /// The agent's plan, as last written with the `todo` tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<TodoItem>,
    /// Approval mode and allow-list.
    #[serde(default)]
    pub intervention: UserInterventionConfig,
    /// Security rules; `None` means the default blacklist, an empty list means none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_blacklist: Option<Vec<SecurityRule>>,
    /// Host facts (working directory, agent, topic).
    #[serde(default)]
    pub metadata: Metadata,
    /// Rounds in which the model named unknown tools.
    #[serde(default)]
    pub tool_name_error_rounds: u32,
    /// Loop-breaker bookkeeping.
    #[serde(default)]
    pub tool_repeat: ToolRepeat,
    /// Set when finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<Finish>,
    /// Set on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StateError>,
    /// Sequence number the next event gets (the replay cursor).
    #[serde(default)]
    pub next_event_seq: u64,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl AgentState {
    /// A fresh idle state for `operation_id` with zeroed accounting.
    pub fn new(operation_id: OperationId) -> Self {
        let now = Utc::now();
        Self {
            operation_id,
            status: Status::Idle,
            messages: Vec::new(),
            step_count: 0,
            max_steps: None,
            force_finish: false,
            model: None,
            usage: Usage::default(),
            cost: Cost::default(),
            budget: Budget::default(),
            budget_warnings: BTreeSet::new(),
            pending_tool_calls: Vec::new(),
            pending_parent_message_id: None,
            pending_human_prompt: None,
            pending_human_select: None,
            pending_assistant_message_id: None,
            interruption: None,
            delegated: Vec::new(),
            async_calls: Vec::new(),
            sub_agents: Vec::new(),
            tool_manifests: Arc::default(),
            activated_tools: Vec::new(),
            activated_skills: Vec::new(),
            todos: Vec::new(),
            intervention: UserInterventionConfig::default(),
            security_blacklist: None,
            metadata: Metadata::default(),
            tool_name_error_rounds: 0,
            tool_repeat: ToolRepeat::default(),
            finish: None,
            error: None,
            next_event_seq: 0,
            created_at: now,
            updated_at: now,
        }
    }

    /// What the operation answered: its last assistant message with text (`None` before it
    /// said anything).
    pub fn final_answer(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.text_content().trim().is_empty())
            .map(|m| m.text_content())
    }

    /// Builder: add a manifest.
    pub fn with_tool(mut self, manifest: ToolManifest) -> Self {
        Arc::make_mut(&mut self.tool_manifests)
            .insert(manifest.identifier.clone(), Arc::new(manifest));
        self
    }

    /// Builder: append a message.
    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(Arc::new(message));
        self
    }

    /// Append a message.
    pub fn push_message(&mut self, message: Message) {
        self.messages.push(Arc::new(message));
    }

    /// Replace the message with the same id, or append it.
    pub fn upsert_message(&mut self, message: Arc<Message>) {
        match self.messages.iter_mut().find(|m| m.id == message.id) {
            Some(slot) => *slot = message,
            None => self.messages.push(message),
        }
    }

    /// The message with `id`.
    pub fn message(&self, id: MessageId) -> Option<&Message> {
        self.messages
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.as_ref())
    }

    /// Mutable access to the message with `id`.
    pub fn message_mut(&mut self, id: MessageId) -> Option<&mut Message> {
        self.messages
            .iter_mut()
            .find(|m| m.id == id)
            .map(Arc::make_mut)
    }

    /// The tool message answering `tool_call_id`.
    pub fn tool_message_mut(&mut self, tool_call_id: &str) -> Option<&mut Message> {
        self.messages
            .iter_mut()
            .rev()
            .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(tool_call_id))
            .map(Arc::make_mut)
    }

    /// Whether the conversation holds exactly one user message (the model answers the first).
    pub fn is_first_user_turn(&self) -> bool {
        self.messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count()
            == 1
    }

    /// The latest assistant message that requested tools: the current turn.
    pub fn current_tool_turn(&self) -> Option<&Message> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
            .map(|m| m.as_ref())
    }
}

/// One item of the agent's plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// What to do.
    pub text: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// The plan as a checklist, one item a line: `[x]` done, `[>]` in progress, `[ ]` pending.
pub fn render_plan(items: &[TodoItem]) -> String {
    items
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Done => "[x]",
                TodoStatus::InProgress => "[>]",
                TodoStatus::Pending => "[ ]",
            };
            format!("{mark} {}", t.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Progress of a plan item.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
}
