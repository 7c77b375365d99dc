//! The runtime context handed to the brain: which phase the operation is in, with that phase's
//! typed payload, plus per-step facts. Executors produce the next context.

use crate::ids::MessageId;
use crate::instruction::SubAgentTask;
use crate::message::{ToolCall, ToolStatus};
use serde::{Deserialize, Serialize};

/// A follow-up a tool asks for after it returns (a tool that delegates to sub-agents).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolFollowUp {
    /// Run one sub-agent next.
    SubAgent {
        /// The task.
        task: SubAgentTask,
    },
    /// Run several sub-agents next.
    SubAgents {
        /// The tasks.
        tasks: Vec<SubAgentTask>,
    },
}

/// The user spoke.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserInputPayload {
    /// The user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
    /// Whether it is the conversation's first message.
    pub is_first_message: bool,
}

/// The model answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmResultPayload {
    /// The assistant message holding the answer; parent of its tool results.
    pub assistant_message_id: MessageId,
    /// Answer text.
    #[serde(default)]
    pub content: String,
    /// Tool calls in the model's order; unresolved names have an empty identifier.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Provider stop reason (`end_turn`, `tool_use`, `max_tokens`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The call was the final one after the step limit: no tools were offered, and tools it
    /// asks for anyway are not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub final_call: bool,
}

impl LlmResultPayload {
    /// Whether the model asked for any tool.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

/// One tool call finished (or was settled).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultPayload {
    /// Assistant message that requested the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The tool message holding the result.
    pub tool_message_id: MessageId,
    /// The call.
    pub tool_call: ToolCall,
    /// Outcome.
    pub status: ToolStatus,
    /// Result text as the model will see it.
    #[serde(default)]
    pub content: String,
    /// How long it ran.
    #[serde(default)]
    pub execution_ms: u64,
    /// Work the tool asks for next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<ToolFollowUp>,
}

/// Several tool calls finished.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolsBatchResultPayload {
    /// Assistant message that requested the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// Per call, in tool-call order.
    #[serde(default)]
    pub results: Vec<ToolResultPayload>,
}

/// A sub-agent's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentOutcome {
    /// Whether it succeeded.
    pub success: bool,
    /// The sub-agent's thread or operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Its final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Its failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Sub-agent results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentsResultPayload {
    /// Message the results attach to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// One per task, in task order.
    pub results: Vec<SubAgentOutcome>,
}

/// A human answered a prompt or selection (the answer is already a user message).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HumanResponsePayload {
    /// The user message carrying the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
}

/// A human approved one pending call; run it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanApprovedToolPayload {
    /// The approved call.
    pub tool_call: ToolCall,
    /// Assistant message that requested it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// Pending tool message to fill in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_message_id: Option<MessageId>,
}

/// A human aborted pending work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanAbortPayload {
    /// Assistant message owning the pending calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// Why.
    pub reason: String,
    /// Calls to settle as aborted.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
}

/// Compression ran (or was skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionResultPayload {
    /// Message the next assistant turn hangs off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The summary message, when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_message_id: Option<MessageId>,
    /// Nothing was compressed.
    pub skipped: bool,
}

/// Something failed in a way the agent may react to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorPayload {
    /// What kind of failure.
    pub code: crate::failure::FailureCode,
    /// What happened.
    pub message: String,
}

/// The phase an operation is in, with its payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Phase {
    /// Nothing has happened yet (or no specific trigger).
    Init,
    /// A user message arrived.
    UserInput(UserInputPayload),
    /// The model answered.
    LlmResult(LlmResultPayload),
    /// One tool finished.
    ToolResult(ToolResultPayload),
    /// A batch of tools finished.
    ToolsBatchResult(ToolsBatchResultPayload),
    /// One sub-agent finished.
    SubAgentResult(SubAgentsResultPayload),
    /// Several sub-agents finished.
    SubAgentsBatchResult(SubAgentsResultPayload),
    /// A human answered a prompt or selection.
    HumanResponse(HumanResponsePayload),
    /// A human approved a pending call.
    HumanApprovedTool(HumanApprovedToolPayload),
    /// A human aborted.
    HumanAbort(HumanAbortPayload),
    /// Compression finished.
    CompressionResult(CompressionResultPayload),
    /// An error the agent may recover from.
    Error(ErrorPayload),
}

impl Phase {
    /// The snake_case name.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Init => "init",
            Phase::UserInput(_) => "user_input",
            Phase::LlmResult(_) => "llm_result",
            Phase::ToolResult(_) => "tool_result",
            Phase::ToolsBatchResult(_) => "tools_batch_result",
            Phase::SubAgentResult(_) => "sub_agent_result",
            Phase::SubAgentsBatchResult(_) => "sub_agents_batch_result",
            Phase::HumanResponse(_) => "human_response",
            Phase::HumanApprovedTool(_) => "human_approved_tool",
            Phase::HumanAbort(_) => "human_abort",
            Phase::CompressionResult(_) => "compression_result",
            Phase::Error(_) => "error",
        }
    }
}

/// Facts recomputed by the host for every step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepContext {
    /// A user message is queued behind this operation: finish at the next safe point.
    pub has_queued_messages: bool,
    /// Tools activated for this step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub activated_tool_ids: Vec<String>,
    /// The agent's open todo items.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<String>,
}

/// What the brain sees besides the state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeContext {
    /// Phase and payload.
    pub phase: Phase,
    /// Per-step facts.
    #[serde(default)]
    pub step: StepContext,
}

impl RuntimeContext {
    /// A context in `phase` with default step facts.
    pub fn new(phase: Phase) -> Self {
        Self {
            phase,
            step: StepContext::default(),
        }
    }
}
