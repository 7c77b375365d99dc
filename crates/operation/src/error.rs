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
    /// A decision that does not fit its call (approving a question, answering a call that asks
    /// nothing, an answer that is not one of the options); nothing was written.
    #[error(transparent)]
    Decision(#[from] rein_core::engine::DecisionError),
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
    /// A caller-chosen topic id is not one: 1 to 128 ASCII letters, digits, `-`, `_`, `.` or
    /// `:` (ids travel in URLs, logs and the store); nothing was written.
    #[error(
        "topic id {0:?} is not valid: use 1 to 128 ASCII letters, digits, '-', '_', '.' or ':'"
    )]
    InvalidTopic(String),
    /// An edit or a regeneration that does not fit the topic's conversation; nothing was
    /// written.
    #[error(transparent)]
    Branch(#[from] crate::driver::BranchError),
    /// The operation's external agent cannot run in this process (not enabled here); nothing
    /// was written.
    #[error(transparent)]
    External(#[from] crate::external::ExternalError),
    /// The operation targets a device its owner does not have; nothing was written.
    #[error("no device `{0}`: connect it with `rein connect --name {0}` first")]
    UnknownDevice(String),
    /// Knowledge bases named for an operation that its owner does not have; nothing was
    /// written.
    #[error("no knowledge base named {}; `rein kb list` shows yours", .0.join(", "))]
    UnknownKnowledge(Vec<String>),
    /// A spend cap with a model that has no price; nothing was written.
    #[error(transparent)]
    Unpriced(#[from] crate::pricing::Unpriced),
    /// A grant that cannot be made; nothing was written.
    #[error(transparent)]
    Grant(#[from] crate::grants::GrantError),
    /// Skills named for an operation that this process does not have; nothing was written.
    #[error("no skill named {}; `rein skill list` shows the available ones", .0.join(", "))]
    UnknownSkills(Vec<String>),
}

/// The topic id rule as a regular expression (for API documents); [`check_topic_id`] applies it.
pub const TOPIC_ID_PATTERN: &str = "^[A-Za-z0-9._:-]{1,128}$";

/// Refuse a caller-chosen topic id that could not be shown, logged or put in a URL as is.
pub fn check_topic_id(id: &str) -> Result<(), DriverError> {
    let ok = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if ok {
        Ok(())
    } else {
        // A hostile id may be huge: the refusal quotes its start only.
        let shown: String = id.chars().take(40).collect();
        Err(DriverError::InvalidTopic(shown))
    }
}
