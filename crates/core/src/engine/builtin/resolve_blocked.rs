//! `resolve_blocked_tools`: refused calls answered with a result the model can read.

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::instruction::{BlockedReason, Instruction, InstructionKind, ResolveBlockedToolsPayload};
use crate::message::ToolStatus;
use crate::phase::{Phase, ToolsBatchResultPayload};
use crate::state::AgentState;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::*;

/// Default text of a blocked result.
pub fn blocked_text(reason: BlockedReason) -> &'static str {
    match reason {
        BlockedReason::Security => {
            "Blocked by security policy: this call needs human approval and no human is available in this run."
        }
        BlockedReason::ToolNotAllowed => {
            "Tool execution blocked because the tool is not allowed in the current execution scope."
        }
        BlockedReason::UnknownToolName => "This tool does not exist.",
        BlockedReason::StepLimit => {
            "Not run: the step limit was reached. Answer now with what you have, without tools."
        }
    }
}

/// `resolve_blocked_tools`: answer refused calls so the model can read why.
pub struct ResolveBlockedToolsExecutor;

impl PayloadExecutor for ResolveBlockedToolsExecutor {
    type Payload = ResolveBlockedToolsPayload;
    const KIND: InstructionKind = InstructionKind::ResolveBlockedTools;

    payload_of!(ResolveBlockedTools);

    fn run<'a>(
        &'a self,
        payload: ResolveBlockedToolsPayload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let ResolveBlockedToolsPayload {
                parent_message_id,
                tool_calls,
                blocked_reason,
                blocked_content,
            } = payload;
            let content =
                blocked_content.unwrap_or_else(|| blocked_text(blocked_reason).to_owned());
            let mut results = Vec::with_capacity(tool_calls.len());
            for call in tool_calls {
                let blocked = ToolStatus::Blocked;
                results.push(settle(
                    state,
                    cx,
                    call,
                    parent_message_id,
                    None,
                    Outcome {
                        status: blocked,
                        content: content.clone(),
                        media: Vec::new(),
                        duration_ms: 0,
                    },
                ));
            }
            let next = ctx(Phase::ToolsBatchResult(ToolsBatchResultPayload {
                parent_message_id,
                results,
            }));
            Ok(ExecOutput::new(next))
        }
        .boxed()
    }
}
