//! Providers a user brought: their own base URL and API key for a model provider, which only
//! their operations use. The store holds the key sealed ([`SealedKey`]); sealing and opening
//! are rein-operation's (`secrets`), with a key the database never sees. The SQL behind
//! [`OwnProviders`] is `sql/own_providers.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// An API key as stored: sealed with the server's secret key `key_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedKey {
    /// Which secret key sealed it (a fingerprint, not the key).
    pub key_id: String,
    /// Base64 of the nonce and the ciphertext.
    pub sealed: String,
}

/// One provider a user brought.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnProvider {
    /// The provider id (`openai`, `anthropic`, ...).
    pub provider: String,
    /// Their base URL for it (`None`: the server's).
    pub base_url: Option<String>,
    /// Their API key for it, sealed (`None`: the server's, where it lends one).
    pub key: Option<SealedKey>,
    /// Last set.
    pub updated_at: DateTime<Utc>,
}

/// What a sealed secret of a user belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealedFor {
    /// The API key of a provider they brought ([`OwnProvider`]).
    Provider(String),
    /// The headers of an MCP server they defined ([`crate::OwnMcpServer`]).
    McpServer(String),
}

impl SealedFor {
    /// What its seal is bound to besides its owner, so a secret copied to another place (or
    /// another user) does not open there: the provider id; `mcp:` and the server's name
    /// (a provider id never holds a `:`).
    pub fn label(&self) -> String {
        match self {
            SealedFor::Provider(id) => id.clone(),
            SealedFor::McpServer(name) => format!("mcp:{name}"),
        }
    }
}

/// A stored secret: whose, for what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredKey {
    /// Whose.
    pub user_id: String,
    /// What it is for.
    pub place: SealedFor,
    /// The secret, sealed.
    pub key: SealedKey,
}

/// A sealed secret being moved to another secret key ([`OwnProviders::reseal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resealed {
    /// Whose.
    pub user_id: String,
    /// What it is for.
    pub place: SealedFor,
    /// The key id it was sealed with when read; a row sealed since is left alone.
    pub was: String,
    /// The key sealed with the new secret key.
    pub key: SealedKey,
}

/// Providers users brought. Every method is one statement, [`OwnProviders::reseal`] one
/// transaction.
pub trait OwnProviders {
    /// Set (insert or replace) `user_id`'s settings for `own.provider`.
    fn put_own_provider<'a>(
        &'a self,
        user_id: &'a str,
        own: &'a OwnProvider,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// `user_id`'s providers, by provider id.
    fn own_providers<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<OwnProvider>, StoreError>>;

    /// Forget `user_id`'s settings for `provider`; whether there were any.
    fn delete_own_provider<'a>(
        &'a self,
        user_id: &'a str,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Every sealed secret of every user: provider keys and MCP servers' headers (rotating
    /// the secret key).
    fn sealed_keys(&self) -> BoxFuture<'_, Result<Vec<StoredKey>, StoreError>>;

    /// Replace sealed secrets in one transaction, each only while it is still sealed with
    /// the key id it was read with; how many were replaced.
    fn reseal<'a>(&'a self, keys: &'a [Resealed]) -> BoxFuture<'a, Result<u64, StoreError>>;
}
