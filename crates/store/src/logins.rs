//! Sign-ins from another device (`rein login URL`, after OAuth's device authorization grant,
//! RFC 8628): the CLI asks for a login and keeps its secret, the person approves the login's
//! short code while signed in elsewhere (the web UI), and the CLI, polling with the secret,
//! receives an API token once. Only the secret's hash is stored; a login expires unapproved,
//! and an approved one is claimed at most once.
//! The SQL behind [`Logins`] is `sql/logins.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;

/// A login as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginRecord {
    /// The hash of the secret the CLI polls with.
    pub id: String,
    /// What the person confirms (`ABCD-EFGH`).
    pub user_code: String,
    /// What the CLI says it is (the new token's label).
    pub client: String,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it is worth nothing any more, approved or not.
    pub expires_at: DateTime<Utc>,
    /// The user who approved it.
    pub approved_by: Option<String>,
    /// When the CLI received its token.
    pub claimed_at: Option<DateTime<Utc>>,
}

/// What polling a login finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginClaim {
    /// Not approved yet.
    Pending,
    /// Approved by this user and now claimed (the caller makes the token): this happens once.
    Approved {
        /// Who approved it.
        user_id: String,
        /// The CLI's name for itself.
        client: String,
    },
    /// Expired, or its token was already received.
    Gone,
}

/// Sign-ins from another device.
pub trait Logins {
    /// Record a login: `id` is the secret's hash. At most `max_pending` unexpired unapproved
    /// logins exist at once (a public route records them): `None` when that many do.
    fn create_login<'a>(
        &'a self,
        login: &'a LoginRecord,
        max_pending: u64,
    ) -> BoxFuture<'a, Result<Option<()>, StoreError>>;

    /// The unexpired, unapproved login with this code, as the person about to approve it sees
    /// it.
    fn pending_login<'a>(
        &'a self,
        user_code: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<LoginRecord>, StoreError>>;

    /// Approve the unexpired, unapproved login with this code as `user_id`; whether there was
    /// one.
    fn approve_login<'a>(
        &'a self,
        user_code: &'a str,
        user_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Poll the login whose secret hashes to `id`: claimed in the same statement when it is
    /// approved, so two polls never both receive a token.
    fn claim_login<'a>(
        &'a self,
        id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<LoginClaim, StoreError>>;
}
