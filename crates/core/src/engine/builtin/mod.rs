//! Built-in executors, one per file, each handed its own instruction's payload through one
//! adapter ([`Typed`]). The outer crates override any of them through the executor table; the
//! defaults already do the accounting, message bookkeeping and events every host needs. This
//! file holds the adapter and what several executors share: writing a tool's result message
//! and settling a call.

mod call_llm;
mod call_tool;
mod call_tools_batch;
mod compress;
mod finish;
mod request_human;
mod resolve_aborted;
mod resolve_blocked;

pub use call_llm::CallLlmExecutor;
pub use call_tool::CallToolExecutor;
pub use call_tools_batch::CallToolsBatchExecutor;
pub use compress::{CompressContextExecutor, Kept};
pub use finish::FinishExecutor;
pub(crate) use finish::finish;
pub use request_human::{HumanRequest, RequestHumanExecutor};
pub use resolve_aborted::ResolveAbortedToolsExecutor;
pub use resolve_blocked::{ResolveBlockedToolsExecutor, blocked_text};

use super::executor::{ExecContext, ExecError, ExecOutput, Executor};
use crate::event::EventKind;
use crate::ids::MessageId;
use crate::instruction::{Instruction, InstructionKind};
use crate::message::{Message, ToolCall, ToolStatus};
use crate::phase::{Phase, RuntimeContext, ToolResultPayload};
use crate::state::AgentState;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::time::Instant;

/// `PayloadExecutor::payload` for an instruction variant that carries `{ payload }`.
macro_rules! payload_of {
    ($variant:ident) => {
        fn payload(ins: Instruction) -> Result<Self::Payload, Instruction> {
            match ins {
                Instruction::$variant { payload } => Ok(payload),
                other => Err(other),
            }
        }
    };
}
pub(crate) use payload_of;

/// A built-in executor of one instruction type, handed that instruction's own payload.
pub trait PayloadExecutor: Send + Sync + 'static {
    /// What it is handed.
    type Payload: Send + 'static;
    /// The instruction type it executes (named when it is handed another).
    const KIND: InstructionKind;
    /// The payload of `ins`, or `ins` back when it is not this executor's type.
    fn payload(ins: Instruction) -> Result<Self::Payload, Instruction>;
    /// Execute `payload` on `state`.
    fn run<'a>(
        &'a self,
        payload: Self::Payload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>>;
}

/// The one adapter from the instruction enum the executor table dispatches on to a typed
/// executor.
pub struct Typed<E>(pub E);

impl<E: PayloadExecutor> Executor for Typed<E> {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        match E::payload(ins) {
            Ok(payload) => self.0.run(payload, state, cx),
            Err(other) => {
                let e = wrong(E::KIND, &other);
                async move { Err(e) }.boxed()
            }
        }
    }
}

fn wrong(kind: InstructionKind, ins: &Instruction) -> ExecError {
    ExecError::new(
        crate::failure::Fault::ExecutorMismatch,
        format!(
            "{} executor received a {} instruction",
            kind.as_str(),
            ins.kind().as_str()
        ),
    )
}

pub(crate) fn ctx(phase: Phase) -> Option<RuntimeContext> {
    Some(RuntimeContext::new(phase))
}

pub(crate) fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Write a tool result: fill the existing (pending) message when there is one, else append.
pub(crate) fn write_tool_message(
    state: &mut AgentState,
    call: &ToolCall,
    parent: Option<MessageId>,
    existing: Option<MessageId>,
    status: ToolStatus,
    content: &str,
) -> MessageId {
    let existing = existing
        .and_then(|id| state.message_mut(id).map(|m| m.id))
        .or_else(|| state.tool_message_mut(&call.id).map(|m| m.id));
    if let Some(id) = existing
        && let Some(m) = state.message_mut(id)
    {
        m.set_text(content);
        m.tool_status = Some(status);
        return id;
    }
    let m = Message::tool_result(call, parent, status, content);
    let id = m.id;
    state.push_message(m);
    id
}

/// How a tool call ended.
pub(crate) struct Outcome {
    pub(crate) status: ToolStatus,
    pub(crate) content: String,
    /// Images the model sees after `content` ([`crate::engine::ports::ToolOutput::media`]).
    pub(crate) media: Vec<crate::message::ContentPart>,
    /// How long it ran (0 when it did not run).
    pub(crate) duration_ms: u64,
}

/// Answer a tool call: write (or fill in) its result message, emit `tool_result`, and return
/// the phase payload describing it.
pub(crate) fn settle(
    state: &mut AgentState,
    cx: &ExecContext<'_>,
    call: ToolCall,
    parent: Option<MessageId>,
    existing: Option<MessageId>,
    outcome: Outcome,
) -> ToolResultPayload {
    let Outcome {
        status,
        content,
        media,
        duration_ms,
    } = outcome;
    // What every tool returned becomes message text here, once: the message, its event and
    // the payload carry the same normalised text (see `crate::text`).
    let content = match crate::text::message_text(&content) {
        std::borrow::Cow::Borrowed(_) => content,
        std::borrow::Cow::Owned(normal) => normal,
    };
    let id = write_tool_message(state, &call, parent, existing, status, &content);
    if !media.is_empty()
        && let Some(m) = state.message_mut(id)
    {
        m.content.extend(media);
    }
    cx.emit(EventKind::ToolResult {
        tool_call_id: call.id.clone(),
        tool_message_id: id,
        status,
        content: content.clone(),
        duration_ms,
    });
    ToolResultPayload {
        parent_message_id: parent,
        tool_message_id: id,
        tool_call: call,
        status,
        content,
        execution_ms: 0,
        follow_up: None,
    }
}
