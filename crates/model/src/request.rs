//! One request shape for every provider.

use rein_core::Message;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A function the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Model-facing name (`identifier__api`).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// Whether and which tool the model must call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tools.
    None,
    /// Some tool must be called.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// How hard the model should think.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Minimal.
    Low,
    /// Default.
    Medium,
    /// Maximal.
    High,
}

/// Reasoning settings; each provider uses what it understands (effort for OpenAI, a token
/// budget for Anthropic and Gemini).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningConfig {
    /// Effort level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<ReasoningEffort>,
    /// Thinking token budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

/// The shape of the answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text.
    #[default]
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// Schema name.
        name: String,
        /// The schema.
        schema: serde_json::Value,
        /// Enforce strictly where supported.
        #[serde(default)]
        strict: bool,
    },
}

/// How a request asks the provider to cache its prefix (Anthropic caches only up to the
/// breakpoints a request marks; see `protocol::anthropic::cache_breakpoints`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptCache {
    /// Leading messages that the operation's next call sends again unchanged; the messages
    /// after them are notes of this step only (the plan, a force-finish note). `None`: every
    /// message.
    pub stable_messages: Option<usize>,
    /// Keep Anthropic's cache entries for an hour instead of five minutes (writes cost more).
    pub long_ttl: bool,
    /// What the requests sharing this prefix have in common (the operation), sent as
    /// `prompt_cache_key` to providers that take one (the `prompt_cache_key` quirk).
    pub key: Option<String>,
}

/// A chat request.
#[derive(Clone, Debug, Default)]
pub struct ChatRequest {
    /// Model id at the provider.
    pub model: String,
    /// The conversation (system messages included; each adapter places them).
    pub messages: Vec<Arc<Message>>,
    /// Functions the model may call.
    pub tools: Vec<ToolSpec>,
    /// Tool policy.
    pub tool_choice: ToolChoice,
    /// Whether several tool calls may come in one turn.
    pub parallel_tool_calls: Option<bool>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Reasoning settings.
    pub reasoning: Option<ReasoningConfig>,
    /// The model reasons (the catalog says so): ask for its reasoning in a form that can be
    /// sent back on the next request (OpenAI Responses: `include` the encrypted content, which
    /// models that do not reason refuse).
    pub replay_reasoning: bool,
    /// Answer shape.
    pub response_format: ResponseFormat,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Provider metadata (user ids, tags).
    pub metadata: BTreeMap<String, String>,
    /// Send images even if the catalog says the model has no vision (a text note otherwise).
    pub allow_degrade: bool,
    /// Cancels the call, including any backoff wait.
    pub cancel: CancellationToken,
    /// Prompt caching: `None` asks for none.
    pub prompt_cache: Option<PromptCache>,
}

impl ChatRequest {
    /// A request for `model` with `messages`.
    pub fn new(model: impl Into<String>, messages: Vec<Arc<Message>>) -> Self {
        Self {
            model: model.into(),
            messages,
            ..Default::default()
        }
    }
}
