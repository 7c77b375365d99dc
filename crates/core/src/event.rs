//! Events: what happened, in order. Every event carries its operation, step and a
//! per-operation sequence number; the sequence is the replay cursor (SSE `id:`).

use crate::ids::{MessageId, OperationId};
use crate::instruction::InstructionKind;
use crate::message::{ToolCall, ToolStatus};
use crate::state::{BudgetKind, BudgetPolicy, FinishReason, HumanPrompt, HumanSelect, Status};
use crate::usage::{TokenUsage, Usd};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// A piece of a streaming model response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamChunk {
    /// Answer text.
    Text {
        /// The delta.
        text: String,
    },
    /// Reasoning text.
    Reasoning {
        /// The delta.
        text: String,
    },
    /// Part of a tool call.
    ToolCall {
        /// Position among the response's tool calls.
        index: u32,
        /// Call id, on the first delta.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Function name, on the first delta.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Arguments fragment.
        #[serde(default)]
        arguments: String,
    },
}

/// An amount a budget is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// Tokens.
    Tokens(u64),
    /// Dollars.
    Usd(Usd),
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_usd(n: &Usd) -> bool {
    n.is_zero()
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A step began.
    StepStart {
        /// Phase the brain was called in.
        phase: Cow<'static, str>,
    },
    /// A model call began.
    LlmStart {
        /// Assistant message being written.
        assistant_message_id: MessageId,
        /// `provider/model` when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Part of the model's response.
    LlmStream {
        /// Assistant message being written.
        assistant_message_id: MessageId,
        /// The delta.
        chunk: StreamChunk,
    },
    /// What the model call was sent, by admitted item and by context processor (emitted once
    /// the call has returned, for the inspector and `rein op show --context`).
    ContextReport {
        /// Assistant message being written.
        assistant_message_id: MessageId,
        /// The accounting.
        report: ContextReport,
    },
    /// The model call finished.
    LlmResult {
        /// Assistant message written.
        assistant_message_id: MessageId,
        /// Answer text.
        content: String,
        /// Tool calls requested.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        /// Tokens used by the call.
        #[serde(default)]
        usage: TokenUsage,
        /// Cost of the call.
        #[serde(default)]
        cost: Usd,
        /// What the provider's prompt cache saved on it (against every cached token at the
        /// input price; zero without a price).
        #[serde(default, skip_serializing_if = "is_zero_usd")]
        cache_saved: Usd,
        /// Why the model stopped, as the model runtime names it (`end_turn`, `tool_use`,
        /// `max_tokens`, ...), when the provider said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
    },
    /// A failed model call will be retried.
    StreamRetry {
        /// Attempt about to start (1-based).
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// Wait before it.
        delay_ms: u64,
        /// Error class (`rate_limit`, `overloaded`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_kind: Option<String>,
    },
    /// Tool calls are about to run.
    ToolPending {
        /// The calls.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool call has a result.
    ToolResult {
        /// The call.
        tool_call_id: Arc<str>,
        /// Tool message holding the result.
        tool_message_id: MessageId,
        /// Outcome.
        status: ToolStatus,
        /// Result text.
        content: String,
        /// How long the tool ran (0 for calls that did not run).
        #[serde(default, skip_serializing_if = "is_zero")]
        duration_ms: u64,
    },
    /// Calls wait for approval; the operation is parked.
    HumanApproveRequired {
        /// The calls.
        pending_tool_calls: Vec<ToolCall>,
        /// Assistant message owning them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<MessageId>,
        /// Why each call asks, by tool call id (absent for calls parked again).
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        reasons: std::collections::BTreeMap<String, crate::intervention::ApprovalReason>,
    },
    /// A question waits for an answer.
    HumanPromptRequired {
        /// The question.
        prompt: HumanPrompt,
    },
    /// A selection waits for a choice.
    HumanSelectRequired {
        /// The selection.
        select: HumanSelect,
    },
    /// Older context was summarized.
    CompressionComplete {
        /// The summary message.
        summary_message_id: MessageId,
        /// How many messages it replaced.
        compressed_count: u32,
    },
    /// Compression failed; the run continues uncompressed.
    CompressionError {
        /// What went wrong.
        message: String,
    },
    /// A budget was exceeded.
    BudgetExceeded {
        /// Which budget.
        budget: BudgetKind,
        /// Its limit.
        limit: Amount,
        /// What was reached.
        actual: Amount,
        /// What happens now.
        policy: BudgetPolicy,
    },
    /// The operation was interrupted.
    Interrupted {
        /// Why.
        reason: String,
        /// Whether it can resume.
        can_resume: bool,
    },
    /// A sub-agent was created for a task this operation delegated; it runs as its own
    /// operation (with its own event stream).
    SubAgentStarted {
        /// The child operation.
        sub_agent: OperationId,
        /// The agent it runs as (`None`: an ad-hoc sub-agent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// The task's title.
        title: String,
        /// The call that delegated it.
        tool_call_id: String,
    },
    /// A sub-agent ended; what it spent is now counted in this operation's usage.
    SubAgentEnded {
        /// The child operation.
        sub_agent: OperationId,
        /// The agent it ran as.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// How it ended.
        status: Status,
        /// Whether its answer counts as done work.
        success: bool,
        /// What it (and its own sub-agents) cost.
        cost: crate::usage::Usd,
        /// Tokens it used.
        total_tokens: u64,
    },
    /// The operation resumed.
    Resumed {
        /// Why.
        reason: String,
        /// Step count at resume.
        resumed_from_step: u32,
    },
    /// A step ended.
    StepComplete {
        /// Status after the step.
        status: Status,
        /// Instruction types executed, in order.
        instructions: Vec<InstructionKind>,
    },
    /// The operation finished.
    Done {
        /// Why.
        reason: FinishReason,
        /// Detail.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason_detail: Option<String>,
    },
    /// The operation failed.
    Error {
        /// What kind of failure.
        code: crate::failure::FailureCode,
        /// What went wrong.
        message: String,
    },
}

/// What one model call was sent: estimated tokens per admitted item, and what each context
/// processor changed. The items sum to `total_tokens`, the estimate of the whole request.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextReport {
    /// Admitted items in a fixed order (`system_role`, `memories`, `knowledge`, `skills`,
    /// `tool_list`, `plan`, `summary`, `history`, `force_finish`, `tool_schemas`), empty ones
    /// left out.
    pub items: Vec<AdmittedItem>,
    /// Each processor's effect, in pipeline order.
    pub processors: Vec<ProcessorEffect>,
    /// Estimated tokens of the whole request (messages and tool schemas).
    pub total_tokens: u64,
    /// Estimated tokens at the start of the request (tool schemas, then messages in order)
    /// equal to the previous call's of the same run: the prefix a provider's prompt cache can
    /// serve. 0 for a run's first call.
    #[serde(default)]
    pub stable_prefix_tokens: u64,
}

/// One kind of content a call admitted and what it cost.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmittedItem {
    /// Which (see [`ContextReport::items`]).
    pub item: String,
    /// Estimated tokens.
    pub tokens: u64,
    /// Messages (or, for `tool_schemas`, functions) it took, counted before adjacent system
    /// messages are merged into one.
    pub count: u32,
}

/// What one context processor did to the draft.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessorEffect {
    /// The processor.
    pub processor: String,
    /// Messages before it ran.
    pub messages_before: u32,
    /// Messages after it ran.
    pub messages_after: u32,
    /// Messages it added or rewrote.
    pub changed: u32,
    /// Estimated tokens it added (negative: removed).
    pub tokens_delta: i64,
}

/// An event with its position in the operation's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    /// Operation it belongs to.
    pub operation_id: OperationId,
    /// Step index (the state's step count when the step began, plus one).
    pub step: u32,
    /// Per-operation sequence number, strictly increasing, no gaps.
    pub seq: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}
