//! rein-operation: durable operations.
//!
//! The [`Driver`] builds the engine's executors from the model runtime ([`ModelPort`]), the
//! tool host ([`ToolHost`]: the rein-tools registry with durable executions) and the store, then
//! runs the loop: step, commit the step in one transaction, repeat until the operation parks
//! or ends. Human decisions, cancellation and crash recovery all continue from what is on
//! disk.

pub mod attachment;
mod driver;
mod embedder;
mod error;
mod model_port;
mod summarizer;
mod tools;

pub use driver::{CommitHook, Decision, Driver, RunEnd, StartOptions, derived_message_id};
pub use embedder::ProviderEmbedder;
pub use error::DriverError;
pub use model_port::{ContextSettings, ModelPort};
pub use rein_context::{FORCE_FINISH_PROMPT, Pipeline};
pub use rein_tools::{BuiltinConfig, Tool, ToolContext};
pub use summarizer::{ModelSummarizer, SUMMARY_INSTRUCTIONS};
pub use tools::ToolHost;
