//! Ports: the IO the built-in executors need, as traits the outer crates implement (model
//! runtime + context pipeline, tool registry, summarizer, event bus). Core stays free of any
//! async runtime: futures are plain boxed futures.

use crate::event::{AgentEvent, StreamChunk};
use crate::ids::MessageId;
use crate::instruction::CallLlmPayload;
use crate::message::{Message, Reasoning, ToolCall};
use crate::phase::ToolFollowUp;
use crate::state::{AgentState, ModelRef};
use crate::usage::{TokenUsage, Usd};
use futures::future::BoxFuture;
use std::sync::Arc;

/// A failure reported by a port.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct PortError {
    /// What kind of failure (a model call's classification kept intact).
    pub code: crate::failure::FailureCode,
    /// What went wrong.
    pub message: String,
}

impl PortError {
    /// A port error.
    pub fn new(code: impl Into<crate::failure::FailureCode>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// What the `call_llm` executor asks the model port for.
#[derive(Clone, Copy, Debug)]
pub struct LlmRequest<'a> {
    /// The operation's state (messages, manifests, activated tools, metadata).
    pub state: &'a AgentState,
    /// The instruction's payload (scope, model override).
    pub payload: &'a CallLlmPayload,
    /// Model to call.
    pub model: Option<&'a ModelRef>,
    /// Assistant message being written.
    pub assistant_message_id: MessageId,
    /// The step limit was crossed: send no tools and ask for a final answer.
    pub force_finish: bool,
}

/// A tool call as the model emitted it, before name resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawToolCall {
    /// Provider call id.
    pub id: String,
    /// Function name as sent.
    pub name: String,
    /// Arguments as sent.
    pub arguments: String,
    /// Provider signature to round-trip.
    pub thought_signature: Option<String>,
}

/// A finished model call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmOutput {
    /// Answer text.
    pub content: String,
    /// Reasoning, if any.
    pub reasoning: Option<Reasoning>,
    /// Tool calls in order.
    pub tool_calls: Vec<RawToolCall>,
    /// Tokens used.
    pub usage: TokenUsage,
    /// Cost of the call.
    pub cost: Usd,
    /// What the provider's prompt cache saved on it.
    pub cache_saved: Usd,
    /// Provider stop reason.
    pub stop_reason: Option<String>,
    /// Wall time of the call.
    pub elapsed_ms: u64,
    /// What the request admitted, when the port accounts for it.
    pub context: Option<crate::event::ContextReport>,
}

/// What a model call reports while it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LlmProgress {
    /// A piece of the response.
    Chunk(StreamChunk),
    /// A failed attempt will be retried.
    Retry {
        /// Attempt about to start.
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// Wait before it.
        delay_ms: u64,
        /// Error class.
        error_kind: Option<String>,
    },
}

/// Streams model responses. The context pipeline lives behind this port.
pub trait LlmPort: Send + Sync {
    /// Call the model; report progress through `on_progress` as it happens.
    fn call<'a>(
        &'a self,
        request: LlmRequest<'a>,
        on_progress: &'a (dyn Fn(LlmProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<LlmOutput, PortError>>;
}

/// A tool's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    /// Result text as the model will read it.
    pub content: String,
    /// Whether the call succeeded.
    pub success: bool,
    /// What the call cost.
    pub cost: Usd,
    /// Work the tool asks for next: its call stays pending until that work has ended.
    pub follow_up: Option<ToolFollowUp>,
    /// What a successful call changes in its operation besides its result, in order.
    pub effects: Vec<ToolEffect>,
    /// The host's record of this execution, committed with the step.
    pub execution: Option<crate::tool::ToolExecution>,
    /// The call runs elsewhere (a connected device) and answers later: its tool message stays
    /// `pending` with `content` as a note, and the operation waits for the answer.
    pub deferred: bool,
    /// Files the call produced (an interpreter's plot, a generated image): the host keeps them
    /// as artifacts of the operation's conversation, attached to the call's result.
    pub files: Vec<ToolFile>,
    /// What the model sees beside `content`: the images among `files` (a plot, a screenshot),
    /// set by the host once it kept them. They join the result message after its text; each
    /// provider's request places them where its API takes an image answering a call, and a
    /// model that cannot see reads a note instead.
    pub media: Vec<crate::message::ContentPart>,
}

/// A file a tool call produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFile {
    /// Its name (a path relative to where the tool wrote it).
    pub name: String,
    /// Its media type (`image/png`, `text/csv`).
    pub media_type: String,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// A change a tool makes to its operation besides its result. The engine applies a
/// successful call's effects in one place ([`ToolEffect::apply`]), so a new kind of change is
/// a variant here and an arm there, never a field a tool host forgets to read.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolEffect {
    /// Offer these tools (by identifier; installed ones only) from the next step on:
    /// progressive disclosure.
    ActivateTools(Vec<String>),
    /// Admit this skill from the next model call on.
    ActivateSkill(crate::tool::ActivatedSkill),
    /// Replace the operation's plan (the `todo` tool).
    ReplacePlan(Vec<crate::state::TodoItem>),
}

impl ToolEffect {
    /// Make the change in `state`, recorded at its current step; what is already there (an
    /// active tool or skill) stays as it was.
    pub fn apply(&self, state: &mut AgentState) {
        match self {
            Self::ActivateTools(identifiers) => {
                for identifier in identifiers {
                    let installed = state.tool_manifests.contains_key(identifier);
                    let active = state
                        .activated_tools
                        .iter()
                        .any(|a| &a.identifier == identifier);
                    if installed && !active {
                        state.activated_tools.push(crate::tool::ActivatedTool {
                            identifier: identifier.clone(),
                            activated_at_step: state.step_count,
                            source: "discovery".into(),
                        });
                    }
                }
            }
            Self::ActivateSkill(skill) => {
                if !state.activated_skills.iter().any(|s| s.name == skill.name) {
                    let mut skill = skill.clone();
                    skill.activated_at_step = state.step_count;
                    state.activated_skills.push(skill);
                }
            }
            Self::ReplacePlan(items) => state.todos = items.clone(),
        }
    }
}

impl ToolOutput {
    /// With `effect` applied when the call succeeds.
    pub fn with_effect(mut self, effect: ToolEffect) -> Self {
        self.effects.push(effect);
        self
    }

    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            success: true,
            ..Default::default()
        }
    }

    /// A call sent elsewhere; its result comes later (see [`ToolOutput::deferred`]).
    pub fn deferred(note: impl Into<String>) -> Self {
        Self {
            content: note.into(),
            success: true,
            deferred: true,
            ..Default::default()
        }
    }

    /// A failed result the model can read.
    pub fn failed(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            success: false,
            ..Default::default()
        }
    }
}

/// Executes tool calls. Arguments are already known to be valid JSON.
pub trait ToolPort: Send + Sync {
    /// Run one call. An `Err` becomes a failed tool result, not a failed operation.
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>>;
}

/// A summary of older messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Summary text.
    pub text: String,
    /// Tokens the summary call used.
    pub usage: TokenUsage,
    /// What it cost.
    pub cost: Usd,
    /// `provider/model` that wrote it.
    pub model_key: String,
}

/// Summarizes messages for context compression.
pub trait Summarizer: Send + Sync {
    /// Summarize `messages`, extending `existing_summary` when given.
    fn summarize<'a>(
        &'a self,
        messages: &'a [Arc<Message>],
        existing_summary: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Summary, PortError>>;
}

/// Receives events the moment they are emitted (the live channel; the returned step events
/// are the durable record).
pub trait EventSink: Send + Sync {
    /// One event.
    fn publish(&self, event: &AgentEvent);
}
