//! `call_llm`: one model call through the model port, streamed into the assistant message, with
//! usage and cost recorded and the tool calls it asked for resolved to installed tools.

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::engine::ports::{LlmPort, LlmRequest};
use crate::event::EventKind;
use crate::instruction::{CallLlmPayload, Instruction, InstructionKind};
use crate::message::{Message, Role, ToolCall};
use crate::phase::{LlmResultPayload, Phase};
use crate::state::{AgentState, Status};
use crate::tool::resolve_name;
use chrono::Utc;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Instant;

use super::*;

/// `call_llm` over an [`LlmPort`].
pub struct CallLlmExecutor {
    /// The model port.
    pub port: Arc<dyn LlmPort>,
}

impl PayloadExecutor for CallLlmExecutor {
    type Payload = CallLlmPayload;
    const KIND: InstructionKind = InstructionKind::CallLlm;

    payload_of!(CallLlm);

    fn run<'a>(
        &'a self,
        payload: CallLlmPayload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let assistant_id = payload
                .assistant_message_id
                .or(if payload.create_assistant_message {
                    None
                } else {
                    state.pending_assistant_message_id
                })
                .unwrap_or_default();
            let model = payload.model.clone().or_else(|| state.model.clone());
            let model_key = model.as_ref().map(|m| m.key());
            state.status = Status::Running;
            cx.emit(EventKind::LlmStart {
                assistant_message_id: assistant_id,
                model: model_key.clone(),
            });
            let on_chunk = move |progress| match progress {
                crate::engine::ports::LlmProgress::Chunk(chunk) => cx.emit(EventKind::LlmStream {
                    assistant_message_id: assistant_id,
                    chunk,
                }),
                crate::engine::ports::LlmProgress::Retry {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_kind,
                } => cx.emit(EventKind::StreamRetry {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_kind,
                }),
            };
            let started = Instant::now();
            let request = LlmRequest {
                state,
                payload: &payload,
                model: model.as_ref(),
                assistant_message_id: assistant_id,
                force_finish: state.force_finish,
            };
            let mut out =
                self.port.call(request, &on_chunk).await.map_err(|e| {
                    ExecError::new(e.code, format!("model call failed: {}", e.message))
                })?;
            let elapsed = if out.elapsed_ms > 0 {
                out.elapsed_ms
            } else {
                elapsed_ms(started)
            };

            let tool_calls: Vec<ToolCall> = std::mem::take(&mut out.tool_calls)
                .into_iter()
                .map(|raw| {
                    let mut call = match resolve_name(&state.tool_manifests, &raw.name) {
                        Some((identifier, api)) => {
                            ToolCall::new(raw.id, identifier, api, raw.arguments)
                        }
                        None => ToolCall::unresolved(raw.id, raw.name, raw.arguments),
                    };
                    call.thought_signature = raw.thought_signature.map(Arc::from);
                    call
                })
                .collect();

            let key = model_key
                .clone()
                .unwrap_or_else(|| "unknown/unknown".into());
            state.usage.record_llm(&key, &out.usage, elapsed);
            state.cost.record_llm(&key, out.cost);

            let parent = payload.parent_message_id.or_else(|| {
                state
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.id != assistant_id)
                    .map(|m| m.id)
            });
            if state.message(assistant_id).is_none() {
                let mut m = Message::assistant("");
                m.id = assistant_id;
                state.push_message(m);
            }
            let Some(message) = state.message_mut(assistant_id) else {
                return Err(ExecError::new(
                    crate::failure::Fault::Internal,
                    "assistant message vanished",
                ));
            };
            message.role = Role::Assistant;
            message.set_text(&out.content);
            message.reasoning = out.reasoning.clone();
            message.tool_calls = tool_calls.clone();
            message.parent_id = parent;
            message.model = model_key;
            message.usage = Some(out.usage);
            message.created_at = Utc::now();

            if let Some(report) = out.context.take() {
                cx.emit(EventKind::ContextReport {
                    assistant_message_id: assistant_id,
                    report,
                });
            }
            cx.emit(EventKind::LlmResult {
                assistant_message_id: assistant_id,
                content: out.content.clone(),
                tool_calls: tool_calls.clone(),
                usage: out.usage,
                cost: out.cost,
                cache_saved: out.cache_saved,
                stop_reason: out.stop_reason.clone(),
            });
            let next = ctx(Phase::LlmResult(LlmResultPayload {
                assistant_message_id: assistant_id,
                content: out.content,
                tool_calls,
                stop_reason: out.stop_reason,
                final_call: state.force_finish,
            }));
            Ok(ExecOutput::new(next))
        }
        .boxed()
    }
}
