//! The facts every adapter reads out of its CLI's stream, in one vocabulary.

use rein_core::Usd;
use rein_core::usage::TokenUsage;

/// One fact an external agent's stream states.
#[derive(Clone, Debug, PartialEq)]
pub enum Observed {
    /// The CLI's session id (what a later turn resumes).
    Session(String),
    /// The model it runs.
    Model(String),
    /// A new model turn begins (a CLI that says so; others are split at the first output after
    /// tool results).
    Turn,
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// A tool call the agent made (and runs itself).
    ToolCall {
        /// Its id in the stream.
        id: String,
        /// The tool, as the agent names it.
        name: String,
        /// Its arguments.
        arguments: serde_json::Value,
    },
    /// A tool call's outcome.
    ToolResult {
        /// The call.
        id: String,
        /// What it returned.
        content: String,
        /// Whether it failed.
        is_error: bool,
    },
    /// What one model turn used, as reported when it ended.
    Usage {
        /// Tokens.
        tokens: TokenUsage,
        /// Cost, when the CLI reports one.
        cost: Option<Usd>,
    },
    /// The run's totals as the CLI reports them at its end; they replace the sum of the turns.
    Totals {
        /// Tokens.
        tokens: Option<TokenUsage>,
        /// Cost.
        cost: Option<Usd>,
    },
    /// The final answer, when the CLI repeats it at the end.
    Result(String),
    /// The run failed; what the CLI said.
    Failed(String),
}
