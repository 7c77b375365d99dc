//! The model port: turns the engine's `call_llm` into a model-runtime request and the
//! normalized stream back into the engine's output. Until the context engine lands, request
//! assembly here is minimal: system messages, every tool call paired with a result, tool
//! schemas from the manifests (none when force-finishing, with a closing instruction).

use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use rein_core::Usd;
use rein_core::engine::ports::{
    LlmOutput, LlmPort, LlmProgress, LlmRequest, PortError, RawToolCall,
};
use rein_core::event::StreamChunk;
use rein_core::intervention::key_listed;
use rein_core::message::Reasoning;
use rein_core::message::{Message, Role, ToolStatus};
use rein_core::tool::mangle;
use rein_model::{Catalog, ChatRequest, ErrorKind, ModelEvent, ModelProvider, ToolSpec};
use rein_store::Store;
use std::collections::HashSet;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The system instruction added when the step limit forces a final answer.
pub const FORCE_FINISH_PROMPT: &str = "You have reached the maximum step limit. Please summarize your progress and provide a final response. Do not attempt to use any tools.";

/// Calls one provider for the engine.
pub struct ModelPort {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// Provider id (for pricing).
    pub provider_id: String,
    /// Catalog for prices.
    pub catalog: Arc<Catalog>,
    /// Store for the parent-message preflight.
    pub store: Arc<dyn Store>,
    /// Cancels the model call (and any backoff) when the operation is cancelled.
    pub cancel: CancellationToken,
}

/// The conversation as the provider must see it: every assistant tool call answered (calls
/// whose result is missing get an "interrupted" result), pending placeholders dropped.
fn provider_messages(messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool && m.tool_status != Some(ToolStatus::Pending))
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        if m.role == Role::Tool && m.tool_status == Some(ToolStatus::Pending) {
            continue;
        }
        out.push(Arc::clone(m));
        if m.role == Role::Assistant {
            for call in m.tool_calls.iter().filter(|c| !answered.contains(&*c.id)) {
                out.push(Arc::new(Message::tool_result(
                    call,
                    Some(m.id),
                    ToolStatus::Aborted,
                    "This tool call was interrupted and has no result.",
                )));
            }
        }
    }
    out
}

impl LlmPort for ModelPort {
    fn call<'a>(
        &'a self,
        req: LlmRequest<'a>,
        on_progress: &'a (dyn Fn(LlmProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<LlmOutput, PortError>> {
        async move {
            // A conversation edited while the operation ran must not get an answer attached to
            // a message that no longer exists.
            if let Some(parent) = req.payload.parent_message_id
                && !self
                    .store
                    .message_exists(parent)
                    .await
                    .map_err(|e| PortError::new("store_error", e.to_string()))?
            {
                return Err(PortError::new(
                    "conversation_parent_missing",
                    format!("the message {parent} this answer would follow was deleted"),
                ));
            }
            let model = req
                .model
                .map(|m| m.model.to_string())
                .ok_or_else(|| PortError::new("config", "the operation has no model"))?;
            let mut messages = provider_messages(&req.state.messages);
            let mut tools = Vec::new();
            if req.force_finish {
                messages.push(Arc::new(Message::system(FORCE_FINISH_PROMPT)));
            } else {
                for m in req.state.tool_manifests.values() {
                    for api in &m.apis {
                        if req
                            .payload
                            .allowed_tools
                            .as_ref()
                            .is_none_or(|l| key_listed(l, &m.identifier, &api.name))
                        {
                            tools.push(ToolSpec {
                                name: mangle(&m.identifier, &api.name),
                                description: api.description.clone(),
                                parameters: api.parameters.clone(),
                            });
                        }
                    }
                }
            }
            let mut chat = ChatRequest::new(model.clone(), messages);
            chat.tools = tools;
            chat.cancel = self.cancel.child_token();
            let mut stream = self.provider.chat(chat);
            let mut collector = rein_model::Collector::new();
            while let Some(event) = stream.next().await {
                match &event {
                    ModelEvent::TextDelta { text } => {
                        on_progress(LlmProgress::Chunk(StreamChunk::Text { text: text.clone() }))
                    }
                    ModelEvent::ReasoningDelta { text } => {
                        on_progress(LlmProgress::Chunk(StreamChunk::Reasoning {
                            text: text.clone(),
                        }))
                    }
                    ModelEvent::ToolCallStart {
                        index, id, name, ..
                    } => on_progress(LlmProgress::Chunk(StreamChunk::ToolCall {
                        index: *index,
                        id: id.clone(),
                        name: Some(name.clone()),
                        arguments: String::new(),
                    })),
                    ModelEvent::ToolCallDelta { index, arguments } => {
                        on_progress(LlmProgress::Chunk(StreamChunk::ToolCall {
                            index: *index,
                            id: None,
                            name: None,
                            arguments: arguments.clone(),
                        }))
                    }
                    ModelEvent::Retry {
                        attempt,
                        max_attempts,
                        delay_ms,
                        error,
                    } => on_progress(LlmProgress::Retry {
                        attempt: *attempt,
                        max_attempts: *max_attempts,
                        delay_ms: *delay_ms,
                        error_kind: Some(error.kind.as_str().to_owned()),
                    }),
                    _ => {}
                }
                collector.push(&event);
            }
            let r = collector.finish();
            let usage = r.usage.unwrap_or_default();
            let cost = self
                .catalog
                .cost(&self.provider_id, &model, &usage)
                .unwrap_or(Usd::ZERO);
            let reasoning = (r.reasoning.is_some()
                || r.reasoning_signature.is_some()
                || !r.redacted_reasoning.is_empty())
            .then(|| Reasoning {
                text: r.reasoning.clone().unwrap_or_default(),
                signature: r.reasoning_signature.clone(),
                redacted: r.redacted_reasoning.clone(),
            });
            if let Some(e) = &r.error {
                if e.kind == ErrorKind::Cancelled {
                    // Keep what was said; the engine interrupts at the next boundary.
                    return Ok(LlmOutput {
                        content: r.text,
                        reasoning,
                        usage,
                        cost,
                        stop_reason: Some("cancelled".into()),
                        ..Default::default()
                    });
                }
                // The kind becomes the error code; the message keeps the provider's details.
                let mut detail = e.message.clone();
                if let Some(s) = e.http_status.filter(|s| *s != 200) {
                    detail.push_str(&format!(" (HTTP {s})"));
                }
                if let Some(c) = e.provider_code.as_deref().or(e.provider_type.as_deref()) {
                    detail.push_str(&format!(" [{c}]"));
                }
                return Err(PortError::new(e.kind.as_str(), detail));
            }
            let tool_calls = r
                .tool_calls
                .iter()
                .map(|c| RawToolCall {
                    // Gemini has no call ids: synthesize stable ones.
                    id: c
                        .id
                        .clone()
                        .unwrap_or_else(|| format!("call_{}_{}", c.index, c.name)),
                    name: c.name.clone(),
                    arguments: c.arguments_raw.clone(),
                    thought_signature: c.thought_signature.clone(),
                })
                .collect();
            Ok(LlmOutput {
                content: r.text,
                reasoning,
                tool_calls,
                usage,
                cost,
                stop_reason: r.stop_reason.map(|s| s.as_str().to_owned()),
                elapsed_ms: 0,
            })
        }
        .boxed()
    }
}
