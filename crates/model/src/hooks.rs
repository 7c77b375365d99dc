//! Lifecycle hooks around model calls. A hook that fails after the model answered is logged
//! and ignored: accounting or tracing must never turn a completed answer into a failure.

use crate::error::ModelError;
use crate::request::ChatRequest;
use crate::response::ModelResponse;
use rein_core::TokenUsage;

/// Observes (and may veto) model calls. Every method has a no-op default.
pub trait Hooks: Send + Sync {
    /// Before the request is sent; an `Err` vetoes the call (for example a spent budget).
    fn before_call(&self, _request: &ChatRequest) -> Result<(), String> {
        Ok(())
    }
    /// Final usage of a call.
    fn on_usage(&self, _usage: &TokenUsage) -> Result<(), String> {
        Ok(())
    }
    /// The call completed.
    fn on_completion(&self, _response: &ModelResponse) -> Result<(), String> {
        Ok(())
    }
    /// The call failed.
    fn on_error(&self, _error: &ModelError) -> Result<(), String> {
        Ok(())
    }
}

/// No hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}

/// Run a post-call hook, logging (not propagating) its failure.
pub(crate) fn soft(name: &str, result: Result<(), String>) {
    if let Err(e) = result {
        tracing::warn!(hook = name, error = %e, "model hook failed; the call's result is kept");
    }
}
