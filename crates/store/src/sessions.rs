//! Browser sessions: a person signed in to the web UI by name and password holds a random
//! secret in a cookie; only its SHA-256 is stored. Failed sign-ins are counted here too, by
//! name, so every server on the database sees the same count. A session authenticates until it expires,
//! is ended (signing out, or an admin ending a user's sessions), or while its user is disabled.
//! The SQL behind [`Sessions`] is `sql/sessions.rs`.

use crate::StoreError;
use crate::accounts::User;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// A session as stored (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionRecord {
    /// Id (shown in listings).
    pub id: String,
    /// Whose.
    pub user_id: String,
    /// The browser it was made for, as it named itself (`User-Agent`, cut to 200 characters).
    pub client: Option<String>,
    /// Signed in.
    pub created_at: DateTime<Utc>,
    /// When it stops authenticating.
    pub expires_at: DateTime<Utc>,
    /// Last authenticated request (kept to the minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Ended (signed out or ended by an admin).
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Failed sign-ins of one name in a window: how many, and when the oldest was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failures {
    /// How many.
    pub count: u64,
    /// The oldest's instant (`None`: there were none).
    pub oldest: Option<DateTime<Utc>>,
}

/// Browser sessions. Every method is one statement.
pub trait Sessions {
    /// Record a new session whose secret hashes to `secret_hash`.
    fn create_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        secret_hash: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The user and session of a secret's hash that is not ended or expired at `now` and whose
    /// user is not disabled; notes the use at most once a minute.
    fn user_for_session<'a>(
        &'a self,
        secret_hash: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<(User, SessionRecord)>, StoreError>>;

    /// End the session of a secret's hash (signing out); whether it was live.
    fn end_session<'a>(
        &'a self,
        secret_hash: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// A user's sessions that are neither ended nor expired at `now`, newest first.
    fn list_sessions<'a>(
        &'a self,
        user_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Vec<SessionRecord>, StoreError>>;

    /// End every live session of a user; how many there were.
    fn end_sessions<'a>(
        &'a self,
        user_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// The failed sign-ins of `name` since `since`.
    fn sign_in_failures<'a>(
        &'a self,
        name: &'a str,
        since: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Failures, StoreError>>;

    /// Record a failed sign-in of `name` at `at`, forgetting every name's failures from before
    /// `forget_before`.
    fn record_sign_in_failure<'a>(
        &'a self,
        name: &'a str,
        at: DateTime<Utc>,
        forget_before: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Forget `name`'s failed sign-ins (it signed in).
    fn clear_sign_in_failures<'a>(&'a self, name: &'a str)
    -> BoxFuture<'a, Result<(), StoreError>>;
}
