//! Users, their API tokens (stored as hashes only) and their agents: what a multi-user server
//! needs beyond operations. The single-user CLI never touches it.
//! The SQL behind [`Accounts`] is `sql/accounts.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

rein_core::named_enum! {
    /// What a user may do beyond their own things.
    #[derive(Default)]
    pub enum UserRole as "role" {
        /// Manages users: creates them, changes their role, disables them.
        Admin = "admin",
        /// Sees and changes only their own things.
        #[default]
        Member = "member",
    }
}

rein_core::named_enum! {
    /// What an API token may do; a token made without scopes may do all its user's role
    /// allows.
    pub enum TokenScope as "token scope" {
        /// Read: `GET` requests (event streams included).
        Read = "read",
        /// Read and change the user's own things: start operations, decide, edit agents.
        Run = "run",
        /// What an admin may do beyond their own things (users, their tokens, everyone's
        /// usage); without it an admin's token acts as a member's.
        Admin = "admin",
    }
}

/// What a new API token is: its label, when it expires, what it may do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenSpec {
    /// What it is for.
    pub label: Option<String>,
    /// When it stops authenticating (never when absent).
    pub expires_at: Option<DateTime<Utc>>,
    /// What it may do (all its user's role allows when absent).
    pub scopes: Option<Vec<TokenScope>>,
}

/// The user an API token authenticates, with what the token lets them do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenHolder {
    /// Whose token it is.
    pub user: User,
    /// The token's scopes (all the role allows when absent).
    pub scopes: Option<Vec<TokenScope>>,
}

/// Caps on what operations may spend per UTC day and calendar month, in cost and in tokens
/// (input and output): the server's defaults per user, the server's own total, or one user's
/// overrides of the defaults (each absent field: the default).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Caps {
    /// Cost per UTC day (USD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_cost: Option<rein_core::usage::Usd>,
    /// Cost per UTC calendar month (USD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_cost: Option<rein_core::usage::Usd>,
    /// Tokens per UTC day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_tokens: Option<u64>,
    /// Tokens per UTC calendar month.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_tokens: Option<u64>,
}

impl Caps {
    /// These caps where set, `defaults` where not.
    pub fn over(self, defaults: Caps) -> Caps {
        Caps {
            daily_cost: self.daily_cost.or(defaults.daily_cost),
            monthly_cost: self.monthly_cost.or(defaults.monthly_cost),
            daily_tokens: self.daily_tokens.or(defaults.daily_tokens),
            monthly_tokens: self.monthly_tokens.or(defaults.monthly_tokens),
        }
    }
}

/// A user with what signing in by password checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PasswordHolder {
    /// The user.
    pub user: User,
    /// Their password's argon2id PHC string (absent when they have none: tokens only).
    pub password_hash: Option<String>,
}

/// A user of a server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Stable id.
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// What they may do.
    #[serde(default)]
    pub role: UserRole,
    /// When they were disabled (their tokens authenticate nothing).
    #[serde(default)]
    pub disabled_at: Option<DateTime<Utc>>,
    /// Their caps over the server's defaults.
    #[serde(default)]
    pub caps: Caps,
}

/// An API token's record (never the token itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiToken {
    /// Id (shown in listings, used to revoke).
    pub id: String,
    /// For a device token: the device it connects (it authenticates nothing else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Owner.
    pub user_id: String,
    /// What it is for.
    pub label: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last authenticated request, to the minute (a use within a minute of the one recorded
    /// is not written).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Revoked (a revoked token authenticates nothing).
    pub revoked_at: Option<DateTime<Utc>>,
    /// When it stops authenticating (never when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    /// What it may do (all its user's role allows when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<TokenScope>>,
}

/// A user's agent: a name and its configuration (model, system role, tools, limits).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// Owner's user id.
    pub owner: String,
    /// Name, unique per owner.
    pub name: String,
    /// Configuration as JSON (`rein_operation::AgentProfile` defines its shape).
    pub config: serde_json::Value,
    /// Counts the agent's changes: 1 when created, one more on every write. Operations record
    /// the version they started from. Ignored when writing (the store counts).
    pub version: u64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// One version of an agent's configuration, as it was written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentVersion {
    /// Its number (1 when the agent was created, one more at every write).
    pub version: u64,
    /// The configuration it had.
    pub config: serde_json::Value,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

/// A group as stored: a saved set of agents with a supervisor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GroupRecord {
    /// Owner's user id.
    pub owner: String,
    /// Name, unique per owner.
    pub name: String,
    /// Configuration as JSON (`rein_operation::GroupProfile` defines its shape).
    pub config: serde_json::Value,
    /// Counts the group's changes (1 when created). Ignored when writing.
    pub version: u64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Users, tokens and agents. Every method is one transaction.
pub trait Accounts: Send + Sync {
    /// Create a user; [`StoreError::Conflict`] when the name is taken.
    fn create_user<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<User, StoreError>>;
    /// Create a user who signs in through an OpenID Connect provider as `subject` (its issuer
    /// and `sub`), with `role`; [`StoreError::Conflict`] when the name or the subject is taken.
    fn create_oidc_user<'a>(
        &'a self,
        name: &'a str,
        subject: &'a str,
        role: UserRole,
    ) -> BoxFuture<'a, Result<User, StoreError>>;
    /// The user who signs in as `subject` at an OpenID Connect provider.
    fn user_by_oidc_subject<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, Result<Option<User>, StoreError>>;
    /// A user by name.
    fn user_by_name<'a>(&'a self, name: &'a str)
    -> BoxFuture<'a, Result<Option<User>, StoreError>>;
    /// A user by id.
    fn user_by_id<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<User>, StoreError>>;
    /// Set a user's caps over the server's defaults (replacing what was set); whether there is
    /// such a user.
    fn set_caps<'a>(
        &'a self,
        user_id: &'a str,
        caps: &'a Caps,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Set (or with `None` clear) the working directory a user chose for their operations;
    /// whether there is such a user.
    fn set_working_directory<'a>(
        &'a self,
        user_id: &'a str,
        dir: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// The working directory a user chose for their operations, if any.
    fn working_directory<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
    /// Every user, by name.
    fn list_users<'a>(&'a self) -> BoxFuture<'a, Result<Vec<User>, StoreError>>;
    /// Give a user `role`; whether there is such a user.
    fn set_role<'a>(
        &'a self,
        user_id: &'a str,
        role: UserRole,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Disable a user (their tokens, device tokens included, authenticate nothing from the
    /// next request on) or enable them again; whether there is such a user.
    fn set_disabled<'a>(
        &'a self,
        user_id: &'a str,
        disabled: bool,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Store a token's hash for a user.
    fn add_token<'a>(
        &'a self,
        user_id: &'a str,
        token_hash: &'a str,
        spec: &'a TokenSpec,
    ) -> BoxFuture<'a, Result<ApiToken, StoreError>>;
    /// The user a (not revoked, not expired) API token hash belongs to, unless they are
    /// disabled, with the token's scopes; records the use. A device token is no API token
    /// ([`crate::Devices::device_for_token`]).
    fn user_for_token<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, Result<Option<TokenHolder>, StoreError>>;
    /// Set a user's password (its argon2id PHC string; `None` removes it, leaving tokens as the
    /// only way in); whether there is such a user.
    fn set_password<'a>(
        &'a self,
        user_id: &'a str,
        password_hash: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// A user by name with their password's PHC string.
    fn user_with_password<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<PasswordHolder>, StoreError>>;
    /// A user's tokens, newest first.
    fn list_tokens<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ApiToken>, StoreError>>;
    /// Revoke one of a user's tokens; whether it was active.
    fn revoke_token<'a>(
        &'a self,
        user_id: &'a str,
        token_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Revoke the (not revoked) token whose hash is `token_hash` (a client signing itself
    /// out); whether there was one.
    fn revoke_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Create or replace an agent, keeping the version it becomes; returns that version.
    fn put_agent<'a>(&'a self, agent: &'a AgentRecord) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// One agent.
    fn get_agent<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentRecord>, StoreError>>;
    /// A user's agents by name.
    fn list_agents<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AgentRecord>, StoreError>>;
    /// Delete an agent and its versions; whether it existed.
    fn delete_agent<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// An agent's versions, newest first (those written since versions were kept).
    fn agent_versions<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AgentVersion>, StoreError>>;
    /// Create or replace a group; returns its version after the write.
    fn put_group<'a>(&'a self, group: &'a GroupRecord) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// One group.
    fn get_group<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<GroupRecord>, StoreError>>;
    /// A user's groups by name.
    fn list_groups<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Vec<GroupRecord>, StoreError>>;
    /// Delete a group; whether it existed.
    fn delete_group<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
