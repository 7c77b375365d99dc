//! Who is calling. API tokens are random, shown once, and stored as SHA-256 hashes; a request
//! carries one as `Authorization: Bearer …`. A server bound to loopback may run open
//! (`--no-auth`): every request then acts as one local user.

use crate::AppState;
use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use rand::TryRngCore;
use rein_store::{Accounts, User};
use sha2::{Digest, Sha256};

/// How requests are authenticated.
#[derive(Clone, Debug)]
pub enum AuthMode {
    /// A bearer token is required.
    Tokens,
    /// No authentication: every request is this user (loopback only).
    Open(User),
}

/// A fresh token: `rein_` and 48 hex digits (192 random bits).
pub fn new_token() -> Result<String, std::io::Error> {
    Ok(format!("rein_{}", random_hex::<24>()?))
}

/// What a new token authenticates.
#[derive(Clone, Copy, Debug)]
pub enum TokenFor<'a> {
    /// The API, as its user; labelled as given.
    Api(Option<&'a str>),
    /// Only the connection of the user's device of this name (`rein connect`).
    Device(&'a str),
}

/// Why a token could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// The operating system gave no random bytes.
    #[error("cannot generate a token: {0}")]
    Random(#[from] std::io::Error),
    /// Its hash could not be stored.
    #[error(transparent)]
    Store(#[from] rein_store::StoreError),
}

impl From<IssueError> for ApiError {
    fn from(e: IssueError) -> Self {
        match e {
            IssueError::Store(s) => s.into(),
            IssueError::Random(r) => ApiError::internal(r.to_string()),
        }
    }
}

/// A new token of `user_id` (stored as its hash): the token, shown this once, and its record.
/// The one way tokens are made: `rein token create`, the admin API, `rein serve --init-admin`,
/// and a login approved from another device.
pub async fn issue_token(
    store: &rein_store::SqlStore,
    user_id: &str,
    what: TokenFor<'_>,
) -> Result<(String, rein_store::ApiToken), IssueError> {
    let token = new_token()?;
    let hash = hash_token(&token);
    let record = match what {
        TokenFor::Api(label) => store.add_token(user_id, &hash, label).await?,
        TokenFor::Device(d) => {
            rein_store::Devices::add_device_token(store, user_id, &hash, d).await?
        }
    };
    Ok((token, record))
}

/// `N` random bytes from the operating system, in hex.
pub(crate) fn random_hex<const N: usize>() -> Result<String, std::io::Error> {
    let mut bytes = [0u8; N];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(std::io::Error::other)?;
    Ok(hex(&bytes))
}

/// Whether `user` administers `app`: an admin, or the one user of a server without tokens
/// (its operator).
pub fn administers(app: &crate::App, user: &User) -> bool {
    matches!(app.auth, AuthMode::Open(_)) || user.role == rein_store::UserRole::Admin
}

/// What is stored for a token.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The token of an `Authorization: Bearer <token>` header (the scheme is case-insensitive,
/// as HTTP says).
pub fn bearer_token(headers: &axum::http::HeaderMap) -> Result<&str, ApiError> {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("missing `Authorization: Bearer <token>`"))?;
    header
        .to_str()
        .ok()
        .map(str::trim)
        .and_then(|h| h.split_once(char::is_whitespace))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::unauthorized("the Authorization header is not `Bearer <token>`"))
}

/// Whether the token of `headers` still belongs to a user (an event stream re-checks it, so
/// revoking a token ends the streams it opened). Always true without tokens.
pub async fn still_valid(app: &crate::App, token_hash: Option<&str>) -> bool {
    match token_hash {
        None => true,
        Some(hash) => !matches!(app.store.user_for_token(hash).await, Ok(None)),
    }
}

/// The authenticated user of a request.
#[derive(Clone, Debug)]
pub struct Caller(pub User);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        if let AuthMode::Open(user) = &app.auth {
            return Ok(Caller(user.clone()));
        }
        let token = bearer_token(&parts.headers)?;
        let user = app
            .store
            .user_for_token(&hash_token(token))
            .await?
            .ok_or_else(|| ApiError::unauthorized("unknown or revoked token"))?;
        Ok(Caller(user))
    }
}

impl crate::api::Input for Caller {
    fn document(doc: &mut crate::api::OperationDoc, _g: &mut schemars::generate::SchemaGenerator) {
        doc.secured = true;
        doc.error(401, "No token, or an unknown or revoked one");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let with = |v: &str| {
            let mut h = axum::http::HeaderMap::new();
            h.insert(
                axum::http::header::AUTHORIZATION,
                axum::http::HeaderValue::from_str(v).unwrap(),
            );
            h
        };
        for ok in ["Bearer abc", "bearer abc", "BEARER   abc ", "bEaReR\tabc"] {
            assert_eq!(bearer_token(&with(ok)).unwrap(), "abc", "{ok}");
        }
        for bad in ["Basic abc", "Bearer", "Bearerabc", "Bearer  "] {
            assert!(bearer_token(&with(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens_are_random_prefixed_and_hashed_stably() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with("rein_") && a.len() == 5 + 48, "{a}");
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
