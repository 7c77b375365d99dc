//! Why something failed, as a closed set: a port's, an executor's, an operation's. A failed
//! model call keeps the model runtime's classification ([`ErrorKind`]) all the way into the
//! operation's state, its `error` event and the API; rein's own failures are [`Fault`]s. Both
//! are written as their snake_case names, so records and events read the same as before they
//! were typed; a name this build does not know (written by another build) is kept as it was.

use std::borrow::Cow;
use std::fmt;

crate::named_enum! {
    /// What kind of failure a model call had: the caller's decision (retry, shrink the
    /// context, fix the key) depends on it, not on which vendor answered.
    pub enum ErrorKind as "model error kind" {
        /// Missing or wrong credentials (401).
        Auth = "auth",
        /// Credentials lack access (403).
        Permission = "permission",
        /// Unknown model or endpoint (404).
        NotFound = "not_found",
        /// Too many requests (429).
        RateLimit = "rate_limit",
        /// The provider is overloaded (Anthropic 529, `overloaded_error`).
        Overloaded = "overloaded",
        /// The prompt does not fit the model's window.
        ContextLengthExceeded = "context_length_exceeded",
        /// The request is malformed or unsupported.
        InvalidRequest = "invalid_request",
        /// A safety filter refused the content.
        ContentFiltered = "content_filtered",
        /// Billing or quota exhausted (not transient).
        Quota = "quota",
        /// The provider failed (5xx, in-stream server errors).
        ServerError = "server_error",
        /// The connection failed.
        Network = "network",
        /// The request timed out.
        Timeout = "timeout",
        /// The stream ended before it finished.
        StreamInterrupted = "stream_interrupted",
        /// The model returned nothing.
        EmptyCompletion = "empty_completion",
        /// The stream could not be parsed.
        MalformedStream = "malformed_stream",
        /// The caller cancelled.
        Cancelled = "cancelled",
        /// A requested capability is missing (checked before sending).
        Unsupported = "unsupported",
        /// A hook vetoed the call.
        Vetoed = "vetoed",
        /// Configuration is missing or wrong (no base URL, no key, no model).
        Config = "config",
        /// A replayed request does not match the cassette.
        ReplayMismatch = "replay_mismatch",
    }
}

impl ErrorKind {
    /// Whether a failure of this kind may succeed when tried again unchanged.
    pub fn is_transient(self) -> bool {
        match self {
            ErrorKind::RateLimit
            | ErrorKind::Overloaded
            | ErrorKind::ServerError
            | ErrorKind::Network
            | ErrorKind::Timeout
            | ErrorKind::StreamInterrupted
            | ErrorKind::EmptyCompletion => true,
            ErrorKind::Auth
            | ErrorKind::Permission
            | ErrorKind::NotFound
            | ErrorKind::ContextLengthExceeded
            | ErrorKind::InvalidRequest
            | ErrorKind::ContentFiltered
            | ErrorKind::Quota
            | ErrorKind::MalformedStream
            | ErrorKind::Cancelled
            | ErrorKind::Unsupported
            | ErrorKind::Vetoed
            | ErrorKind::Config
            | ErrorKind::ReplayMismatch => false,
        }
    }
}

crate::named_enum! {
    /// rein's own failures (not the model's).
    pub enum Fault as "failure code" {
        /// The store failed.
        Store = "store_error",
        /// Reading or writing a file failed.
        Io = "io",
        /// No tool implements the call.
        ToolNotFound = "tool_not_found",
        /// The call's arguments break its schema.
        InvalidArguments = "invalid_arguments",
        /// rein broke one of its own invariants.
        Internal = "internal",
        /// The agent (the brain) failed to decide.
        AgentFailed = "agent_failed",
        /// The agent returned no instruction.
        AgentNoInstructions = "agent_no_instructions",
        /// No executor runs an instruction of this kind.
        ExecutorMissing = "executor_missing",
        /// An executor was given an instruction of another kind.
        ExecutorMismatch = "executor_mismatch",
        /// A delegation was refused (no such agent, too deep, over budget).
        SubAgentRefused = "sub_agent_refused",
        /// A group's supervisor could not decide.
        SupervisorFailed = "supervisor_failed",
        /// The message the operation answers was deleted while it ran.
        ConversationParentMissing = "conversation_parent_missing",
        /// A queued operation could not start.
        QueuedStartFailed = "queued_start_failed",
        /// An external agent was interrupted.
        ExternalInterrupted = "external_interrupted",
        /// An external agent's program is not installed.
        ExternalMissing = "external_missing",
        /// An external agent failed.
        ExternalFailed = "external_failed",
        /// A remote agent (A2A) failed, refused the task, or could not be reached.
        RemoteAgentFailed = "remote_agent_failed",
        /// A scripted model (`crate::testing`) has no turns left.
        ScriptExhausted = "script_exhausted",
    }
}

/// Why a port, an executor or an operation failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FailureCode {
    /// A model call failed, as the model runtime classified it.
    Model(ErrorKind),
    /// rein itself failed.
    Rein(Fault),
    /// A code this build does not know, read from a record another build wrote.
    Other(String),
}

impl FailureCode {
    /// Whether rein's own store failed ([`Fault::Store`]: the disk, the database connection).
    /// A step that meets such a failure is not an outcome to record: the host does not commit
    /// it, the run fails visibly, and the operation continues from its last commit when
    /// resumed, as after a crash.
    pub fn is_unrecorded(&self) -> bool {
        matches!(self, FailureCode::Rein(Fault::Store))
    }

    /// Its name, as records, events and the API write it.
    pub fn as_str(&self) -> &str {
        match self {
            FailureCode::Model(k) => k.as_str(),
            FailureCode::Rein(f) => f.as_str(),
            FailureCode::Other(s) => s,
        }
    }

    /// The code named `name`: a model error kind, a fault, or kept as it was.
    pub fn named(name: &str) -> Self {
        if let Ok(k) = name.parse() {
            FailureCode::Model(k)
        } else if let Ok(f) = name.parse() {
            FailureCode::Rein(f)
        } else {
            FailureCode::Other(name.to_owned())
        }
    }
}

impl From<ErrorKind> for FailureCode {
    fn from(k: ErrorKind) -> Self {
        FailureCode::Model(k)
    }
}

impl From<Fault> for FailureCode {
    fn from(f: Fault) -> Self {
        FailureCode::Rein(f)
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for FailureCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FailureCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for FailureCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for FailureCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        Ok(FailureCode::named(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_back_as_written_and_no_name_is_taken_twice() {
        for k in ErrorKind::ALL {
            let code = FailureCode::from(k);
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<FailureCode>(&json).unwrap(), code);
            assert!(k.as_str().parse::<Fault>().is_err(), "{k} is both");
        }
        for f in Fault::ALL {
            assert_eq!(FailureCode::named(f.as_str()), FailureCode::Rein(f));
        }
        let old: FailureCode = serde_json::from_str("\"executor_failed\"").unwrap();
        assert_eq!(old, FailureCode::Other("executor_failed".into()));
        assert_eq!(serde_json::to_string(&old).unwrap(), "\"executor_failed\"");
        assert!(FailureCode::from(Fault::Store) == "store_error");
    }
}
