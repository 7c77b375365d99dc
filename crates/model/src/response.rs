//! Folding a stream of [`ModelEvent`]s into one [`ModelResponse`].

use crate::error::ModelError;
use crate::event::{Citation, ModelEvent, StopReason};
use futures::{Stream, StreamExt};
use rein_core::TokenUsage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A finished tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseToolCall {
    /// Position in the response.
    pub index: u32,
    /// Provider call id (synthesized by the adapter where the provider has none).
    pub id: Option<String>,
    /// Function name.
    pub name: String,
    /// Arguments exactly as streamed.
    pub arguments_raw: String,
    /// Arguments parsed; `None` when they are not valid JSON (see `arguments_error`).
    pub arguments: Option<serde_json::Value>,
    /// Why the arguments did not parse.
    pub arguments_error: Option<String>,
    /// Signature to send back unchanged (Gemini).
    pub thought_signature: Option<String>,
}

/// Everything a model call produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Provider response id.
    pub response_id: Option<String>,
    /// Model that answered.
    pub model: Option<String>,
    /// Answer text.
    pub text: String,
    /// Reasoning text.
    pub reasoning: Option<String>,
    /// Reasoning signature (Anthropic).
    pub reasoning_signature: Option<String>,
    /// Encrypted reasoning blocks.
    pub redacted_reasoning: Vec<String>,
    /// Reasoning item in encrypted form (OpenAI Responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_reasoning: Option<rein_core::message::EncryptedReasoning>,
    /// Refusal text.
    pub refusal: Option<String>,
    /// Tool calls, by index.
    pub tool_calls: Vec<ResponseToolCall>,
    /// Token usage, if reported.
    pub usage: Option<TokenUsage>,
    /// What the provider says the call cost, when it says (a gateway's `usage.cost`).
    pub reported_cost: Option<rein_core::Usd>,
    /// Why it stopped.
    pub stop_reason: Option<StopReason>,
    /// The provider's stop value.
    pub stop_reason_raw: Option<String>,
    /// The failure, if the call failed.
    pub error: Option<ModelError>,
    /// The call failed after producing some output (kept above).
    pub partial: bool,
    /// Cited sources.
    pub citations: Vec<Citation>,
    /// Retries that happened before this result.
    pub retries: u32,
}

/// What [`Collector::peek`] shows.
#[derive(Debug)]
pub struct Peek<'a> {
    /// Text so far.
    pub text: &'a str,
    /// Tool calls started so far.
    pub tool_calls_pending: usize,
    /// Refusal so far.
    pub refusal: Option<&'a str>,
    /// Reasoning so far.
    pub reasoning: Option<&'a str>,
    /// Stop reason, once known.
    pub stop_reason: Option<StopReason>,
}

/// Folds events into a response; usable incrementally.
#[derive(Debug, Default)]
pub struct Collector {
    response: ModelResponse,
    calls: BTreeMap<u32, ResponseToolCall>,
}

fn append(slot: &mut Option<String>, text: &str) {
    slot.get_or_insert_with(String::new).push_str(text);
}

impl Collector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold one event.
    pub fn push(&mut self, event: &ModelEvent) {
        let r = &mut self.response;
        match event {
            ModelEvent::Start { response_id, model } => {
                if response_id.is_some() {
                    r.response_id.clone_from(response_id);
                }
                if model.is_some() {
                    r.model.clone_from(model);
                }
            }
            ModelEvent::TextDelta { text } => r.text.push_str(text),
            ModelEvent::ReasoningDelta { text } => append(&mut r.reasoning, text),
            ModelEvent::ReasoningSignature { signature } => {
                append(&mut r.reasoning_signature, signature)
            }
            ModelEvent::RedactedReasoning { data } => r.redacted_reasoning.push(data.clone()),
            ModelEvent::EncryptedReasoning { id, content } => {
                r.encrypted_reasoning = Some(rein_core::message::EncryptedReasoning {
                    id: id.clone(),
                    content: content.clone(),
                });
            }
            ModelEvent::RefusalDelta { text } => append(&mut r.refusal, text),
            ModelEvent::ToolCallStart {
                index,
                id,
                name,
                thought_signature,
            } => {
                let call = self
                    .calls
                    .entry(*index)
                    .or_insert_with(|| ResponseToolCall {
                        index: *index,
                        id: None,
                        name: String::new(),
                        arguments_raw: String::new(),
                        arguments: None,
                        arguments_error: None,
                        thought_signature: None,
                    });
                if id.is_some() {
                    call.id.clone_from(id);
                }
                if !name.is_empty() {
                    call.name.clone_from(name);
                }
                if thought_signature.is_some() {
                    call.thought_signature.clone_from(thought_signature);
                }
            }
            ModelEvent::ToolCallDelta { index, arguments } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.arguments_raw.push_str(arguments);
                }
            }
            ModelEvent::ToolCallEnd { .. } => {}
            ModelEvent::Usage { usage } => r.usage = Some(*usage),
            ModelEvent::Cost { cost } => r.reported_cost = Some(*cost),
            ModelEvent::Citation { citation } => r.citations.push(citation.clone()),
            ModelEvent::Retry { .. } => r.retries += 1,
            ModelEvent::Stop { reason, raw } => {
                r.stop_reason = Some(*reason);
                if raw.is_some() {
                    r.stop_reason_raw.clone_from(raw);
                }
            }
            ModelEvent::Error { error } => {
                r.error = Some(error.clone());
                r.stop_reason = Some(StopReason::Error);
            }
        }
    }

    /// A cheap look at what has been folded so far.
    pub fn peek(&self) -> Peek<'_> {
        Peek {
            text: &self.response.text,
            tool_calls_pending: self.calls.len(),
            refusal: self.response.refusal.as_deref(),
            reasoning: self.response.reasoning.as_deref(),
            stop_reason: self.response.stop_reason,
        }
    }

    /// The response so far, with tool-call arguments parsed.
    pub fn finish(mut self) -> ModelResponse {
        for (_, mut call) in std::mem::take(&mut self.calls) {
            let raw = call.arguments_raw.trim();
            let parsed = if raw.is_empty() {
                Ok(serde_json::json!({}))
            } else {
                serde_json::from_str(raw)
            };
            match parsed {
                Ok(v) => call.arguments = Some(v),
                Err(e) => call.arguments_error = Some(format!("arguments are not valid JSON: {e}")),
            }
            self.response.tool_calls.push(call);
        }
        let r = &mut self.response;
        r.partial = r.error.is_some()
            && (!r.text.is_empty() || !r.tool_calls.is_empty() || r.reasoning.is_some());
        self.response
    }
}

/// Collect a whole stream.
pub async fn collect(mut stream: impl Stream<Item = ModelEvent> + Unpin) -> ModelResponse {
    let mut c = Collector::new();
    while let Some(e) = stream.next().await {
        c.push(&e);
    }
    c.finish()
}
