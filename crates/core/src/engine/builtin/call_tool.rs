//! `call_tool`: one tool call through the tool port, its result written as the call's tool
//! message, with usage, cost, activated tools and plan changes recorded.

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::engine::ports::ToolPort;
use crate::event::EventKind;
use crate::instruction::{CallToolPayload, Instruction, InstructionKind};
use crate::message::ToolStatus;
use crate::phase::{Phase, ToolFollowUp};
use crate::state::AgentState;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Instant;

use super::*;

/// `call_tool` over a [`ToolPort`].
pub struct CallToolExecutor {
    /// The tool port.
    pub port: Arc<dyn ToolPort>,
}

impl PayloadExecutor for CallToolExecutor {
    type Payload = CallToolPayload;
    const KIND: InstructionKind = InstructionKind::CallTool;

    payload_of!(CallTool);

    fn run<'a>(
        &'a self,
        payload: CallToolPayload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let CallToolPayload {
                parent_message_id,
                tool_call: call,
                existing_tool_message_id,
            } = payload;
            cx.emit(EventKind::ToolPending {
                tool_calls: vec![call.clone()],
            });
            let started = Instant::now();
            let output = if !call.is_resolved() {
                crate::engine::ports::ToolOutput::failed(format!(
                    "Tool `{}` does not exist.",
                    call.api
                ))
            } else if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments) {
                crate::engine::ports::ToolOutput::failed(format!(
                    "Invalid arguments for `{}`: not valid JSON ({e}). Call it again with a JSON \
                     object that matches its parameters.",
                    call.key()
                ))
            } else {
                match self.port.call(&call, state).await {
                    Ok(out) => out,
                    // rein could not record the call (its intent, its result): not the tool's
                    // failure to show the model, but the step's, which is then not committed.
                    Err(e) if e.code.is_unrecorded() => {
                        return Err(ExecError::new(
                            e.code,
                            format!("tool `{}`: {}", call.key(), e.message),
                        ));
                    }
                    Err(e) => crate::engine::ports::ToolOutput::failed(format!(
                        "Tool `{}` failed: {}",
                        call.key(),
                        e.message
                    )),
                }
            };
            let ms = elapsed_ms(started);
            if output.deferred && !state.async_calls.iter().any(|c| **c == *call.id) {
                state.async_calls.push(call.id.to_string());
            }
            let status = match (output.success, &output.follow_up) {
                // Answered once it reports back (a device).
                _ if output.deferred => ToolStatus::Pending,
                // Answered once the sub-agents it delegated to have ended.
                (true, Some(_)) => ToolStatus::Pending,
                (true, None) => ToolStatus::Succeeded,
                (false, _) => ToolStatus::Failed,
            };
            if output.success {
                for effect in &output.effects {
                    effect.apply(state);
                }
            }
            let key = call.key();
            // A deferred call is counted when it answers.
            if !output.deferred {
                state.usage.record_tool(&key, output.success, ms);
            }
            state.cost.record_tool(&key, output.cost);
            let mut result = settle(
                state,
                cx,
                call,
                parent_message_id,
                existing_tool_message_id,
                Outcome {
                    status,
                    content: output.content,
                    media: output.media,
                    duration_ms: ms,
                },
            );
            result.execution_ms = ms;
            if output.success
                && let Some(follow_up) = &output.follow_up
            {
                // Kept in the state, not only in the phase: the turn's other calls may park
                // for approval first, and the tasks must still start once they are decided.
                let tasks = match follow_up {
                    ToolFollowUp::SubAgent { task } => vec![task.clone()],
                    ToolFollowUp::SubAgents { tasks } => tasks.clone(),
                };
                for mut task in tasks {
                    task.tool_call_id = Some(result.tool_call.id.to_string());
                    state.delegated.push(task);
                }
            }
            result.follow_up = output.follow_up;
            let next = ctx(Phase::ToolResult(result));
            let mut out = ExecOutput::new(next);
            out.tool_call_costs = vec![output.cost];
            out.tool_executions = output.execution.into_iter().collect();
            Ok(out)
        }
        .boxed()
    }
}
