//! Grants: a person's "always for this tool", kept here (never in a client) and loaded by the
//! process that runs an operation before each of its steps, so a revoked grant stops at the next
//! call. A grant names one tool (`identifier` or `identifier/api`) within one scope: the
//! operation tree it was made in (its root), a conversation, or an agent of its owner. The
//! checker never lets a grant cover a call the security blacklist, the guard or a global audit
//! flagged.
//! The SQL behind [`Grants`] is `sql/grants.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::intervention::{ActiveGrant, GrantScope};
use serde::{Deserialize, Serialize};

/// The pattern of a grant id (`grant_` and a UUID in hex).
pub const GRANT_ID_PATTERN: &str = "^grant_[0-9a-f]{32}$";

/// Whether `id` has a grant id's shape (checked before any lookup).
pub fn valid_grant_id(id: &str) -> bool {
    id.strip_prefix("grant_").is_some_and(|h| {
        h.len() == 32
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A grant as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrantRecord {
    /// Its id (`grant_…`).
    pub id: String,
    /// Its user (`None`: the local CLI's).
    pub owner: Option<String>,
    /// Where it applies.
    pub scope: GrantScope,
    /// The operation tree's root, the topic or the agent name it applies to.
    pub target: String,
    /// `identifier` or `identifier/api`.
    pub tool: String,
    /// The operation whose pending call it was made from.
    pub operation_id: Option<String>,
    /// That call.
    pub tool_call_id: Option<String>,
    /// Who made it (a user name, `cli`).
    pub created_by: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
    /// When it was revoked (a revoked grant covers nothing).
    pub revoked_at: Option<DateTime<Utc>>,
    /// Who revoked it.
    pub revoked_by: Option<String>,
}

impl GrantRecord {
    /// The grant as the checker uses it.
    pub fn active(&self) -> ActiveGrant {
        ActiveGrant {
            id: self.id.clone(),
            tool: self.tool.clone(),
            scope: self.scope,
        }
    }
}

/// A grant to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewGrant {
    /// Its user.
    pub owner: Option<String>,
    /// Where it applies.
    pub scope: GrantScope,
    /// The root operation, topic or agent name.
    pub target: String,
    /// `identifier` or `identifier/api`.
    pub tool: String,
    /// The operation whose pending call it was made from.
    pub operation_id: Option<String>,
    /// That call.
    pub tool_call_id: Option<String>,
    /// Who makes it.
    pub created_by: Option<String>,
}

/// What an operation is, for finding the grants that apply to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantSubject<'a> {
    /// Its user.
    pub owner: Option<&'a str>,
    /// The root of its operation tree (itself for a top-level operation).
    pub root: &'a str,
    /// Its conversation.
    pub topic: &'a str,
    /// The agent it runs as.
    pub agent: Option<&'a str>,
}

/// Which grants to list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantFilter {
    /// Only this scope.
    pub scope: Option<GrantScope>,
    /// Only this target (with `scope`).
    pub target: Option<String>,
    /// Revoked ones too.
    pub include_revoked: bool,
}

/// Grants. Every method is one transaction.
pub trait Grants: Send + Sync {
    /// Record a grant. An active grant of the same owner, scope, target and tool is returned
    /// as it is (granting twice makes one grant).
    fn create_grant<'a>(
        &'a self,
        grant: &'a NewGrant,
    ) -> BoxFuture<'a, Result<GrantRecord, StoreError>>;
    /// One grant of `owner`.
    fn grant<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<GrantRecord>, StoreError>>;
    /// `owner`'s grants, newest first.
    fn list_grants<'a>(
        &'a self,
        owner: Option<&'a str>,
        filter: &'a GrantFilter,
    ) -> BoxFuture<'a, Result<Vec<GrantRecord>, StoreError>>;
    /// The active grants that apply to an operation (its tree, its topic, its agent).
    fn grants_for<'a>(
        &'a self,
        subject: &'a GrantSubject<'a>,
    ) -> BoxFuture<'a, Result<Vec<ActiveGrant>, StoreError>>;
    /// Revoke `owner`'s grant `id`; the grant as revoked (`NotFound` when `owner` has none
    /// such; revoking twice keeps the first revocation).
    fn revoke_grant<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
        by: Option<&'a str>,
    ) -> BoxFuture<'a, Result<GrantRecord, StoreError>>;
}
