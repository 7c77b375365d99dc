//! Driver errors.

use rein_core::OperationId;

/// What stopped the driver (a failed *operation* is a [`crate::RunEnd::Error`], not this).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rein_store::StoreError),
    /// No such operation.
    #[error("no operation {0}")]
    NotFound(OperationId),
    /// The request does not fit the operation's state.
    #[error("{0}")]
    Refused(String),
    /// The operation's model cannot be reached from this process (unknown provider, missing
    /// API key); nothing was changed.
    #[error(transparent)]
    ModelUnavailable(#[from] crate::models::ModelUnavailable),
    /// The operation was started with tools (MCP servers) this process does not have; nothing
    /// was changed.
    #[error("operation {operation} was started with tools this process does not have: {}; connect them (e.g. `--mcp NAME=COMMAND`) and try again", tools.join(", "))]
    MissingTools {
        /// The operation.
        operation: OperationId,
        /// Their identifiers.
        tools: Vec<String>,
    },
}
