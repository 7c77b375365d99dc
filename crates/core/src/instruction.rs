//! Instructions: what the brain asks the engine to do. Plain data, internally tagged by `type`
//! (snake_case), with the same JSON in memory, on the wire and on disk.

use crate::ids::MessageId;
use crate::message::ToolCall;
use crate::state::{FinishReason, ModelRef, SelectOption};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The payload of `call_llm`, shared by the agent that emits it and every executor that runs it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallLlmPayload {
    /// Message the new assistant turn hangs off (the last user or tool message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// Reuse this assistant message instead of creating one (a retried step, a resume).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assistant_message_id: Option<MessageId>,
    /// Force a new assistant message even when a placeholder is pending (after compression).
    pub create_assistant_message: bool,
    /// Model override; the state's model otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// Operation scope: `None` offers every tool, `Some(vec![])` offers none. Entries are
    /// `identifier/api` keys or bare identifiers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Whether this answers the first user message of the conversation.
    pub is_first_message: bool,
}

/// Run one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallToolPayload {
    /// Assistant message that requested the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The call.
    pub tool_call: ToolCall,
    /// Update this (pending) tool message instead of inserting one: resume after approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existing_tool_message_id: Option<MessageId>,
}

/// Run several independent tool calls concurrently.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallToolsBatchPayload {
    /// Assistant message that requested the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The calls, in the model's order.
    pub tool_calls: Vec<ToolCall>,
    /// Pending placeholder rows to update, by tool call id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub existing_tool_message_ids: BTreeMap<String, MessageId>,
}

/// Settle calls as aborted (the operation was cancelled while they were pending).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolveAbortedToolsPayload {
    /// Assistant message that requested the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The calls.
    pub tool_calls: Vec<ToolCall>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Pending placeholder rows to update, by tool call id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub existing_tool_message_ids: BTreeMap<String, MessageId>,
}

/// Why calls were refused without running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockedReason {
    /// Intervention was required but the operation is headless.
    Security,
    /// Not in the operation's allowed tools.
    ToolNotAllowed,
    /// The name matched no available tool.
    UnknownToolName,
    /// The step limit was reached before the call could run; the model is asked for a final
    /// answer instead.
    StepLimit,
}

/// Answer calls with refusals the model can read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolveBlockedToolsPayload {
    /// Assistant message that requested the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The calls.
    pub tool_calls: Vec<ToolCall>,
    /// Why they were refused.
    pub blocked_reason: BlockedReason,
    /// Text of the tool result; a default per reason otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_content: Option<String>,
}

/// Work handed to a sub-agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentTask {
    /// Short title (thread name).
    pub description: String,
    /// Self-contained instruction for the sub-agent.
    pub instruction: String,
    /// Whether the sub-agent sees the parent's messages.
    #[serde(default)]
    pub inherit_messages: bool,
    /// Deadline in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Agent to run; the parent's agent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_agent_id: Option<String>,
    /// The tool call that delegated the task; its result carries the sub-agent's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// System role of an ad-hoc sub-agent (one that is not a named agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// Tools the sub-agent may use, narrowing what it would otherwise get (never widening).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// Run one sub-agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecSubAgentPayload {
    /// Message the sub-agent's result attaches to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The task (boxed: it is the largest payload, and every instruction is as large as its
    /// largest variant).
    pub task: Box<SubAgentTask>,
}

/// Run several sub-agents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecSubAgentsPayload {
    /// Message the results attach to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<MessageId>,
    /// The tasks.
    pub tasks: Vec<SubAgentTask>,
}

/// Summarize older context.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressContextPayload {
    /// Estimated tokens of the current context.
    pub current_token_count: u64,
    /// Summary already in the context, to extend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_summary: Option<String>,
}

/// One instruction of the brain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Instruction {
    /// Call the model.
    CallLlm {
        /// What to call.
        #[serde(default)]
        payload: CallLlmPayload,
    },
    /// Run one tool.
    CallTool {
        /// The call.
        payload: CallToolPayload,
    },
    /// Run several tools concurrently.
    CallToolsBatch {
        /// The calls.
        payload: CallToolsBatchPayload,
    },
    /// Settle calls as aborted.
    ResolveAbortedTools {
        /// The calls.
        payload: ResolveAbortedToolsPayload,
    },
    /// Refuse calls with a readable result.
    ResolveBlockedTools {
        /// The calls.
        payload: ResolveBlockedToolsPayload,
    },
    /// Run a sub-agent.
    ExecSubAgent {
        /// The task.
        payload: ExecSubAgentPayload,
    },
    /// Run several sub-agents.
    ExecSubAgents {
        /// The tasks.
        payload: ExecSubAgentsPayload,
    },
    /// Ask a human a free-text question and park.
    RequestHumanPrompt {
        /// The question.
        prompt: String,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Extra data for the interface.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<serde_json::Value>,
    },
    /// Ask a human to choose and park.
    RequestHumanSelect {
        /// Choices.
        options: Vec<SelectOption>,
        /// Several allowed.
        #[serde(default)]
        multi: bool,
        /// The question.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Extra data for the interface.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<serde_json::Value>,
    },
    /// Park calls until a human approves or rejects each.
    RequestHumanApprove {
        /// The calls needing a decision.
        pending_tool_calls: Vec<ToolCall>,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Assistant message that owns the calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<MessageId>,
        /// The pending tool messages already exist (re-park).
        #[serde(default)]
        skip_create_tool_message: bool,
        /// Why each call asks, by tool call id (the checker's decision; stored with the
        /// intervention and shown to whoever decides it).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        reasons: BTreeMap<String, crate::intervention::ApprovalReason>,
    },
    /// Summarize older context.
    CompressContext {
        /// Sizes.
        #[serde(default)]
        payload: CompressContextPayload,
    },
    /// End the operation.
    Finish {
        /// Why.
        reason: FinishReason,
        /// Detail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason_detail: Option<String>,
    },
}

/// The `type` tag of an instruction, usable as an executor-table key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum InstructionKind {
    /// `call_llm`
    CallLlm,
    /// `call_tool`
    CallTool,
    /// `call_tools_batch`
    CallToolsBatch,
    /// `resolve_aborted_tools`
    ResolveAbortedTools,
    /// `resolve_blocked_tools`
    ResolveBlockedTools,
    /// `exec_sub_agent`
    ExecSubAgent,
    /// `exec_sub_agents`
    ExecSubAgents,
    /// `request_human_prompt`
    RequestHumanPrompt,
    /// `request_human_select`
    RequestHumanSelect,
    /// `request_human_approve`
    RequestHumanApprove,
    /// `compress_context`
    CompressContext,
    /// `finish`
    Finish,
    /// `external_turn`: what an external agent CLI reported for one of its model turns (its
    /// text and the tool calls it ran itself), recorded rather than executed by rein.
    ExternalTurn,
}

impl InstructionKind {
    /// The snake_case tag.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CallLlm => "call_llm",
            Self::CallTool => "call_tool",
            Self::CallToolsBatch => "call_tools_batch",
            Self::ResolveAbortedTools => "resolve_aborted_tools",
            Self::ResolveBlockedTools => "resolve_blocked_tools",
            Self::ExecSubAgent => "exec_sub_agent",
            Self::ExecSubAgents => "exec_sub_agents",
            Self::RequestHumanPrompt => "request_human_prompt",
            Self::RequestHumanSelect => "request_human_select",
            Self::RequestHumanApprove => "request_human_approve",
            Self::CompressContext => "compress_context",
            Self::Finish => "finish",
            Self::ExternalTurn => "external_turn",
        }
    }
}

impl Instruction {
    /// The instruction's type.
    pub fn kind(&self) -> InstructionKind {
        match self {
            Self::CallLlm { .. } => InstructionKind::CallLlm,
            Self::CallTool { .. } => InstructionKind::CallTool,
            Self::CallToolsBatch { .. } => InstructionKind::CallToolsBatch,
            Self::ResolveAbortedTools { .. } => InstructionKind::ResolveAbortedTools,
            Self::ResolveBlockedTools { .. } => InstructionKind::ResolveBlockedTools,
            Self::ExecSubAgent { .. } => InstructionKind::ExecSubAgent,
            Self::ExecSubAgents { .. } => InstructionKind::ExecSubAgents,
            Self::RequestHumanPrompt { .. } => InstructionKind::RequestHumanPrompt,
            Self::RequestHumanSelect { .. } => InstructionKind::RequestHumanSelect,
            Self::RequestHumanApprove { .. } => InstructionKind::RequestHumanApprove,
            Self::CompressContext { .. } => InstructionKind::CompressContext,
            Self::Finish { .. } => InstructionKind::Finish,
        }
    }

    /// `finish` with a detail.
    pub fn finish(reason: FinishReason, detail: impl Into<String>) -> Self {
        Self::Finish {
            reason,
            reason_detail: Some(detail.into()),
        }
    }
}
