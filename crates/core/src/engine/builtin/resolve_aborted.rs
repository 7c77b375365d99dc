//! `resolve_aborted_tools`: pending calls settled as aborted.

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::instruction::{Instruction, InstructionKind, ResolveAbortedToolsPayload};
use crate::message::ToolStatus;
use crate::state::AgentState;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::HashSet;

use super::*;

/// `resolve_aborted_tools`: settle pending calls as aborted.
pub struct ResolveAbortedToolsExecutor;

impl PayloadExecutor for ResolveAbortedToolsExecutor {
    type Payload = ResolveAbortedToolsPayload;
    const KIND: InstructionKind = InstructionKind::ResolveAbortedTools;

    payload_of!(ResolveAbortedTools);

    fn run<'a>(
        &'a self,
        payload: ResolveAbortedToolsPayload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let reason = payload
                .reason
                .unwrap_or_else(|| "the operation was cancelled".into());
            let content = format!("Tool call aborted: {reason}.");
            for call in &payload.tool_calls {
                let existing = payload.existing_tool_message_ids.get(&*call.id).copied();
                let (parent, aborted) = (payload.parent_message_id, ToolStatus::Aborted);
                settle(
                    state,
                    cx,
                    call.clone(),
                    parent,
                    existing,
                    Outcome {
                        status: aborted,
                        content: content.clone(),
                        media: Vec::new(),
                        duration_ms: 0,
                    },
                );
            }
            let settled: HashSet<&str> = payload.tool_calls.iter().map(|c| c.id.as_ref()).collect();
            state
                .pending_tool_calls
                .retain(|c| !settled.contains(c.id.as_ref()));
            // An answer arriving later for a settled call is refused.
            state.async_calls.retain(|c| !settled.contains(c.as_str()));
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}
