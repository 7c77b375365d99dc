//! rein-model: the model runtime.
//!
//! One request shape ([`ChatRequest`]) is translated into each provider's wire protocol
//! (OpenAI Chat Completions and the OpenAI-compatible family, OpenAI Responses, Anthropic
//! Messages, Gemini, Ollama), and every response stream is normalized into one event shape
//! ([`ModelEvent`]) with usage, stop reason and classified errors. Parsers are pure state
//! machines over framed bytes ([`framing`]); the HTTP transport, retries and cancellation sit
//! on top. Besides chat: embeddings, image generation ([`images`]: OpenAI's Images API,
//! Gemini's image output), video rendering as a job ([`video`]: Gemini's Veo), and speech and
//! transcription ([`audio`]).

pub mod audio;
pub mod cassette;
pub mod catalog;
mod context_cache;
pub mod demo;
pub mod error;
pub mod event;
pub mod framing;
pub mod hooks;
pub mod images;
pub mod protocol;
pub mod provider;
pub mod registry;
pub mod request;
pub mod response;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transport;
pub mod video;

pub use catalog::{Capabilities, Catalog, ModelInfo, TokenizerHint};
pub use error::{ErrorKind, ModelError};
pub use event::{ModelEvent, StopReason};
pub use hooks::{HookObjection, Hooks};
pub use images::{GeneratedImage, GeneratedImages, ImageRequest};
pub use protocol::Protocol;
pub use provider::{EventStream, ModelProvider, Provider};
pub use registry::{ProviderConfig, Registry, UserProvider};
pub use request::{ChatRequest, PromptCache, ToolChoice, ToolSpec};
pub use response::{Collector, ModelResponse, collect};
pub use transport::{ReqwestTransport, RetryPolicy, Transport};
