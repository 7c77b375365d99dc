//! Driver errors.

use rein_core::OperationId;

/// What stopped the driver (a failed *operation* is a [`crate::RunEnd::Error`], not this).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rein_store::StoreError),
    /// rein's store failed during a step (the disk, the database connection): the step was not
    /// committed; the operation continues from its last commit when resumed.
    #[error(
        "operation {operation}: the database failed during a step, which was not recorded (resume continues from the last commit): {message}"
    )]
    Unrecorded {
        /// The operation.
        operation: OperationId,
        /// What failed.
        message: String,
    },
    /// No such operation.
    #[error("no operation {0}")]
    NotFound(OperationId),
    /// The request does not fit the operation's state; nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
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
    /// An MCP server its owner defined does not answer (or cannot be used); nothing was
    /// written.
    #[error(
        "your MCP server `{name}` cannot be used: {why}; fix it or remove it with `rein settings mcp remove {name}`"
    )]
    OwnMcpUnavailable {
        /// The server's name.
        name: String,
        /// Why.
        why: String,
    },
    /// An agent file that cannot be imported here; nothing was written.
    #[error(transparent)]
    AgentImport(#[from] crate::driver::AgentImportError),
    /// An operation file that cannot be imported; nothing was written.
    #[error(transparent)]
    Archive(#[from] rein_store::ArchiveError),
    /// A replay that cannot be made; nothing was sent.
    #[error(transparent)]
    Replay(#[from] crate::driver::ReplayError),
    /// A fork that cannot be made; nothing was written.
    #[error(transparent)]
    Fork(#[from] crate::driver::ForkError),
    /// Skills named for an operation that this process does not have; nothing was written.
    #[error("no skill named {}; `rein skill list` shows the available ones", .0.join(", "))]
    UnknownSkills(Vec<String>),
}

/// Why a request does not fit an operation's state (each a 409 over HTTP): what the caller can
/// change, named.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A decision for an operation that is not parked on one.
    #[error("operation {operation} is {status:?}, not waiting for a decision")]
    NotWaiting {
        /// The operation.
        operation: OperationId,
        /// What it is doing.
        status: rein_core::state::Status,
    },
    /// An answer without naming the call, while several questions are open.
    #[error(
        "operation {operation} has {} open questions; name the call to answer ({})",
        questions.len(),
        questions.join(", ")
    )]
    WhichQuestion {
        /// The operation.
        operation: OperationId,
        /// The open questions' call ids.
        questions: Vec<String>,
    },
    /// "Approve all" on an operation whose pending calls are all questions.
    #[error(
        "operation {operation} waits only for answers to questions ({}); answer them",
        questions.join(", ")
    )]
    OnlyQuestions {
        /// The operation.
        operation: OperationId,
        /// The questions' call ids.
        questions: Vec<String>,
    },
    /// A decision on a call that was decided before.
    #[error("tool call {0} was already decided")]
    AlreadyDecided(String),
    /// A decision on a call the operation (or, `in_tree`, its tree) does not wait for.
    #[error(
        "operation {operation} has no pending tool call {tool_call}{}; pending: {}",
        if *in_tree { " in its tree" } else { "" },
        pending.join(", ")
    )]
    NoSuchCall {
        /// The operation decided on.
        operation: OperationId,
        /// The call named.
        tool_call: String,
        /// Whether its sub-agents' calls were looked at too.
        in_tree: bool,
        /// What does wait.
        pending: Vec<String>,
    },
    /// The engine refused to continue it (not interrupted, interrupted for good, not waiting
    /// for its sub-agents).
    #[error(transparent)]
    Runtime(#[from] rein_core::RuntimeError),
    /// The end of its sub-agents does not fit its state.
    #[error(transparent)]
    SubAgents(rein_core::engine::DecisionError),
    /// A queued prompt that cannot be read back (written by another version).
    #[error("its queued prompt cannot be read: {0}")]
    QueuedPrompt(serde_json::Error),
    /// A prompt that cannot be kept to start later.
    #[error("cannot keep the prompt: {0}")]
    PromptNotKept(serde_json::Error),
    /// An asynchronous call's answer that lost every race with other writers.
    #[error("operation {operation} kept changing while answering call {tool_call}; try again")]
    KeptChanging {
        /// The operation.
        operation: OperationId,
        /// The call answered.
        tool_call: String,
    },
    /// An external agent on a device, continued by a process without devices.
    #[error(
        "operation {operation} runs an agent on device `{device}`: only a rein server with devices runs it"
    )]
    DevicesOnlyOnServer {
        /// The operation.
        operation: OperationId,
        /// Its device.
        device: String,
    },
    /// No working directory for an external agent (none in the spec, and this process has
    /// none).
    #[error("{0}")]
    NoWorkingDirectory(std::io::Error),
    /// A resume while another operation of the conversation holds it.
    #[error(
        "operation {other} of this conversation is {status:?}; resume {operation} after it ends"
    )]
    TopicBusy {
        /// The operation to resume.
        operation: OperationId,
        /// The one holding the conversation.
        other: OperationId,
        /// What that one is doing.
        status: rein_core::state::Status,
    },
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
