//! Lifecycle hooks around model calls. A hook that fails after the model answered is logged
//! and ignored: accounting or tracing must never turn a completed answer into a failure.

use crate::error::ModelError;
use crate::request::ChatRequest;
use crate::response::ModelResponse;
use rein_core::TokenUsage;

/// What a hook says against a call: before it, a veto (the call fails as `vetoed` with this
/// reason); after it, an objection that is logged while the call's result is kept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookObjection(pub String);

impl From<&str> for HookObjection {
    fn from(reason: &str) -> Self {
        HookObjection(reason.to_owned())
    }
}

/// Observes (and may veto) model calls. Every method has a no-op default.
pub trait Hooks: Send + Sync {
    /// Before the request is sent; an `Err` vetoes the call (for example a spent budget).
    fn before_call(&self, _request: &ChatRequest) -> Result<(), HookObjection> {
        Ok(())
    }
    /// Final usage of a call.
    fn on_usage(&self, _usage: &TokenUsage) -> Result<(), HookObjection> {
        Ok(())
    }
    /// The call completed.
    fn on_completion(&self, _response: &ModelResponse) -> Result<(), HookObjection> {
        Ok(())
    }
    /// The call failed.
    fn on_error(&self, _error: &ModelError) -> Result<(), HookObjection> {
        Ok(())
    }
}

/// No hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}

/// Run a post-call hook, logging (not propagating) its failure.
pub(crate) fn soft(name: &str, result: Result<(), HookObjection>) {
    if let Err(e) = result {
        tracing::warn!(hook = name, error = %e, "model hook failed; the call's result is kept");
    }
}
