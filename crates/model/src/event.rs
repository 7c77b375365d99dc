//! The normalized stream: every adapter turns its provider's wire events into these.

use crate::error::ModelError;
use rein_core::TokenUsage;
use serde::{Deserialize, Serialize};

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Finished its answer.
    EndTurn,
    /// Wants tools run.
    ToolUse,
    /// Hit the output limit.
    MaxTokens,
    /// Refused.
    Refusal,
    /// A safety filter stopped it.
    ContentFilter,
    /// Hit a stop sequence.
    StopSequence,
    /// Failed.
    Error,
}

impl StopReason {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Refusal => "refusal",
            StopReason::ContentFilter => "content_filter",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Error => "error",
        }
    }
}

/// A source the model cited (web search grounding, annotations).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// Where.
    pub url: String,
    /// Its title, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// One normalized streaming event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    /// The response began.
    Start {
        /// Provider response id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_id: Option<String>,
        /// Model that answers (may differ from the requested alias).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Answer text.
    TextDelta {
        /// The delta.
        text: String,
    },
    /// Reasoning (thinking, summaries).
    ReasoningDelta {
        /// The delta.
        text: String,
    },
    /// Signature of the reasoning so far (Anthropic); send back unchanged.
    ReasoningSignature {
        /// The signature.
        signature: String,
    },
    /// A reasoning item in encrypted form (OpenAI Responses); send back unchanged.
    EncryptedReasoning {
        /// The item's id.
        id: String,
        /// Its encrypted content.
        content: String,
    },
    /// Encrypted reasoning; send back unchanged.
    RedactedReasoning {
        /// Opaque data.
        data: String,
    },
    /// Refusal text.
    RefusalDelta {
        /// The delta.
        text: String,
    },
    /// A tool call begins.
    ToolCallStart {
        /// Position among the response's tool calls.
        index: u32,
        /// Provider call id (Gemini has none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Function name.
        name: String,
        /// Signature to send back unchanged (Gemini).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thought_signature: Option<String>,
    },
    /// More argument text of a tool call.
    ToolCallDelta {
        /// Which call.
        index: u32,
        /// JSON fragment.
        arguments: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// Which call.
        index: u32,
    },
    /// Token usage (cumulative: a later event replaces an earlier one).
    Usage {
        /// Counts.
        usage: TokenUsage,
    },
    /// What the provider says the call cost (a gateway's `usage.cost`, in USD); it replaces
    /// the cost rein would compute from the usage and the model's price.
    Cost {
        /// The amount.
        cost: rein_core::Usd,
    },
    /// A cited source.
    Citation {
        /// The source.
        citation: Citation,
    },
    /// A failed attempt will be retried.
    Retry {
        /// The attempt about to start (2 = first retry).
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// Wait before it.
        delay_ms: u64,
        /// Why.
        error: ModelError,
    },
    /// The model stopped.
    Stop {
        /// Normalized reason.
        reason: StopReason,
        /// The provider's own value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<String>,
    },
    /// The call failed (after anything received before it).
    Error {
        /// What went wrong.
        error: ModelError,
    },
}
