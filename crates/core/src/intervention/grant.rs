//! Grants: a person's "always for this tool", kept by the host (never by a client) and applied
//! by the checker. A grant covers one tool within one scope; it never covers a call the
//! security blacklist, the guard or a global audit flagged, nor a tool whose own policy is
//! `always`.

use serde::{Deserialize, Serialize};

/// Where a grant applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// The operation it was made in (and its sub-agents, which are decided on it).
    Operation,
    /// Every operation of the conversation it was made in.
    Topic,
    /// Every operation of the agent it was made for (its owner's agent of that name).
    Agent,
}

impl GrantScope {
    /// Every scope, narrowest first.
    pub const ALL: [GrantScope; 3] = [Self::Operation, Self::Topic, Self::Agent];

    /// Its name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Operation => "operation",
            Self::Topic => "topic",
            Self::Agent => "agent",
        }
    }

    /// How a person reads it ("this conversation").
    pub fn phrase(self) -> &'static str {
        match self {
            Self::Operation => "this operation",
            Self::Topic => "this conversation",
            Self::Agent => "this agent",
        }
    }
}

impl std::fmt::Display for GrantScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for GrantScope {
    type Err = UnknownGrantScope;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| UnknownGrantScope(s.to_owned()))
    }
}

/// A scope name that is none of `operation`, `topic`, `agent`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("grant scope `{0}`: use operation, topic or agent")]
pub struct UnknownGrantScope(pub String);

/// A grant in effect for an operation, as the host loaded it before a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveGrant {
    /// Its id (shown in decisions; `rein grant revoke ID`).
    pub id: String,
    /// `identifier` or `identifier/api`.
    pub tool: String,
    /// Where it applies.
    pub scope: GrantScope,
}
