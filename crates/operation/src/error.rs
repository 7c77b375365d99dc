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
}
