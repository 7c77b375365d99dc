//! Grants as people make them: approving a pending call "always" for its operation, its
//! conversation or its agent. The grant is recorded in the store (the checker reads it from
//! there before every step, so revoking one stops it at the next call) and never covers a call
//! the security blacklist, the command guard or a global audit flagged: such a call is asked
//! every time, and a grant cannot be made from it.

use rein_core::OperationId;
use rein_core::intervention::GrantScope;
use rein_core::spec::OperationSpec;
use rein_store::GrantSubject;

/// Why a grant was not made; nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// The call was flagged by the blacklist, the guard or a global audit: it is asked every
    /// time, whatever was granted.
    #[error(
        "tool call {call} was flagged by {rule}: it is asked every time, and no grant can cover it; approve it once instead"
    )]
    EveryTime {
        /// The call.
        call: String,
        /// The rule that flagged it.
        rule: String,
    },
    /// A question is answered, not granted.
    #[error("tool call {0} is a question: answer it; a grant is for tools that run")]
    Question(String),
    /// Agent scope for an operation that runs as no agent.
    #[error("operation {0} runs as no agent: grant for the operation or the conversation instead")]
    NoAgent(OperationId),
    /// No pending call has this id in the operation's tree.
    #[error("operation {operation} has no pending tool call {call}")]
    NotPending {
        /// The operation.
        operation: OperationId,
        /// The call.
        call: String,
    },
}

/// What a grant of `scope`, made on a call of operation `id`, applies to: the root of its
/// operation tree, its conversation, or its agent.
pub fn target(
    scope: GrantScope,
    id: OperationId,
    spec: &OperationSpec,
    topic: &str,
) -> Result<String, GrantError> {
    Ok(match scope {
        GrantScope::Operation => spec.delegation.as_ref().map_or(id, |d| d.root).to_string(),
        GrantScope::Topic => topic.to_owned(),
        GrantScope::Agent => spec
            .agent
            .as_ref()
            .map(|a| a.name.clone())
            .ok_or(GrantError::NoAgent(id))?,
    })
}

/// The root of `id`'s tree as text (a grant's operation target).
pub fn root_of(id: OperationId, spec: &OperationSpec) -> String {
    spec.delegation.as_ref().map_or(id, |d| d.root).to_string()
}

/// What the store matches grants against for operation `id` (whose tree root is `root`).
pub fn subject<'a>(spec: &'a OperationSpec, root: &'a str, topic: &'a str) -> GrantSubject<'a> {
    GrantSubject {
        owner: spec.owner.as_deref(),
        root,
        topic,
        agent: spec.agent.as_ref().map(|a| a.name.as_str()),
    }
}
