//! Who is calling. API tokens are random, shown once, and stored as SHA-256 hashes; a request
//! carries one as `Authorization: Bearer …`, and a token may expire or carry scopes (`read`:
//! only `GET`; `run`: also change the user's own things; `admin`: an admin's powers, without
//! which an admin's token acts as a member's). A browser signed in by password (`signin`)
//! carries a session cookie instead, and its state-changing requests a CSRF token. A server
//! bound to loopback may run open (`--no-auth`): every request then acts as one local user.

use crate::AppState;
use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::Method;
use axum::http::request::Parts;
use rand::TryRngCore;
use rein_store::{Accounts, Sessions, TokenScope, TokenSpec, User};
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
    /// The API, as its user: labelled, expiring and scoped as given.
    Api(&'a TokenSpec),
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
        TokenFor::Api(spec) => store.add_token(user_id, &hash, spec).await?,
        TokenFor::Device(d) => {
            rein_store::Devices::add_device_token(store, user_id, &hash, d).await?
        }
    };
    Ok((token, record))
}

/// `N` random bytes from the operating system, in hex.
pub(crate) fn random_hex<const N: usize>() -> Result<String, std::io::Error> {
    Ok(hex(&random_bytes::<N>()?))
}

/// `N` random bytes from the operating system.
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N], std::io::Error> {
    let mut bytes = [0u8; N];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(std::io::Error::other)?;
    Ok(bytes)
}

/// Whether two secrets are equal, compared in time that does not depend on where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
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

pub(crate) fn hex(bytes: &[u8]) -> String {
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

/// What authenticated a request, by its hash: an event stream re-checks it, so revoking a
/// token or ending a session ends the streams it opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// An API token.
    Token(String),
    /// A browser session.
    Session(String),
}

/// The credential a request carries, as [`Caller`] reads it (a bearer token first, then the
/// session cookie); none on a server without tokens.
pub fn credential(app: &crate::App, headers: &axum::http::HeaderMap) -> Option<Credential> {
    if matches!(app.auth, AuthMode::Open(_)) {
        return None;
    }
    if let Ok(token) = bearer_token(headers) {
        Some(Credential::Token(hash_token(token)))
    } else {
        crate::signin::cookie_secret(headers).map(|s| Credential::Session(hash_token(s)))
    }
}

/// Whether a credential still authenticates (always true for none).
pub async fn still_valid(app: &crate::App, credential: Option<&Credential>) -> bool {
    match credential {
        None => true,
        Some(Credential::Token(hash)) => !matches!(app.store.user_for_token(hash).await, Ok(None)),
        Some(Credential::Session(hash)) => !matches!(
            app.store.user_for_session(hash, chrono::Utc::now()).await,
            Ok(None)
        ),
    }
}

/// The authenticated user of a request, acting with what its credential allows: a token
/// without the `run` scope may only read, and one without `admin` acts as a member.
#[derive(Clone, Debug)]
pub struct Caller(pub User);

/// The authenticated user of a request whatever its token's scopes: for the one thing any
/// credential may do, signing itself out.
#[derive(Clone, Debug)]
pub struct SignedIn(pub User);

/// A person at a signed-in browser (or the one user of a server without tokens): for what a
/// token must not do on its own, making another token. A token could otherwise mint one that
/// outlives it or holds scopes it lacks; GitHub's tokens are made in the browser for the same
/// reason.
#[derive(Clone, Debug)]
pub struct Person(pub User);

/// Whether a request of this method changes something (and so needs the `run` scope, and from
/// a browser session a CSRF token).
fn changes(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Who sent the request; `scoped`: hold a token to its scopes. A request with an
/// `Authorization` header is judged by its token alone; one without, by its session cookie.
async fn authenticate(parts: &Parts, app: &AppState, scoped: bool) -> Result<User, ApiError> {
    if let AuthMode::Open(user) = &app.auth {
        return Ok(user.clone());
    }
    let has_token = parts
        .headers
        .contains_key(axum::http::header::AUTHORIZATION);
    match crate::signin::cookie_secret(&parts.headers) {
        Some(secret) if !has_token => session_user(parts, app, secret).await,
        _ => token_user(parts, app, scoped).await,
    }
}

/// The user of the request's bearer token, acting with what its scopes allow when `scoped`.
async fn token_user(parts: &Parts, app: &AppState, scoped: bool) -> Result<User, ApiError> {
    let token = bearer_token(&parts.headers)?;
    let holder = app
        .store
        .user_for_token(&hash_token(token))
        .await?
        .ok_or_else(|| ApiError::unauthorized("unknown, expired or revoked token"))?;
    let mut user = holder.user;
    let Some(scopes) = holder.scopes.filter(|_| scoped) else {
        return Ok(user);
    };
    let may_change = scopes.contains(&TokenScope::Run) || scopes.contains(&TokenScope::Admin);
    if changes(&parts.method) && !may_change {
        let named: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            crate::error_code::ApiErrorCode::InsufficientScope,
            format!(
                "this token may only read (its scopes: {}); a {} needs the `run` scope",
                named.join(", "),
                parts.method
            ),
        ));
    }
    if !scopes.contains(&TokenScope::Admin) {
        user.role = rein_store::UserRole::Member;
    }
    Ok(user)
}

/// The user of the session whose cookie secret is `secret`; a change must carry its CSRF token.
async fn session_user(parts: &Parts, app: &AppState, secret: &str) -> Result<User, ApiError> {
    let (user, _) = app
        .store
        .user_for_session(&hash_token(secret), chrono::Utc::now())
        .await?
        .ok_or_else(|| ApiError::unauthorized("the session ended or expired: sign in again"))?;
    if changes(&parts.method) {
        let given = parts
            .headers
            .get(crate::signin::CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !crate::signin::csrf_matches(secret, given) {
            return Err(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                crate::error_code::ApiErrorCode::CsrfTokenInvalid,
                format!(
                    "a signed-in browser's {} must carry the session's CSRF token in `{}` (GET /v1/session answers it)",
                    parts.method,
                    crate::signin::CSRF_HEADER
                ),
            ));
        }
    }
    Ok(user)
}

/// The caller of a request whose HTTP method does not say whether it changes something (a
/// JSON-RPC `POST`): held to its token's scopes and its session's CSRF token as a change when
/// `changes`, as a read otherwise.
pub async fn caller_for(
    headers: &axum::http::HeaderMap,
    app: &AppState,
    changes: bool,
) -> Result<User, ApiError> {
    let mut probe = axum::http::Request::new(());
    *probe.method_mut() = if changes { Method::POST } else { Method::GET };
    *probe.headers_mut() = headers.clone();
    let (parts, ()) = probe.into_parts();
    authenticate(&parts, app, true).await
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        authenticate(parts, app, true).await.map(Caller)
    }
}

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        authenticate(parts, app, false).await.map(SignedIn)
    }
}

impl FromRequestParts<AppState> for Person {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        let user = authenticate(parts, app, true).await?;
        let by_token = parts
            .headers
            .contains_key(axum::http::header::AUTHORIZATION);
        if by_token && !matches!(app.auth, AuthMode::Open(_)) {
            return Err(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                crate::error_code::ApiErrorCode::InsufficientScope,
                "a token cannot make tokens: sign in in a browser (Settings, Your tokens) or ask an admin",
            ));
        }
        Ok(Person(user))
    }
}

impl crate::api::Input for Person {
    fn document(doc: &mut crate::api::OperationDoc, _g: &mut schemars::generate::SchemaGenerator) {
        doc.secured = true;
        doc.error(401, "No session, or an expired one");
        doc.error(
            403,
            "A token (tokens are made from a signed-in browser or by an admin), or a signed-in browser's change without its CSRF token",
        );
    }
}

impl crate::api::Input for SignedIn {
    fn document(doc: &mut crate::api::OperationDoc, g: &mut schemars::generate::SchemaGenerator) {
        Caller::document(doc, g);
    }
}

impl crate::api::Input for Caller {
    fn document(doc: &mut crate::api::OperationDoc, _g: &mut schemars::generate::SchemaGenerator) {
        doc.secured = true;
        doc.error(
            401,
            "No token or session, or an unknown, expired or revoked one",
        );
        doc.error(
            403,
            "A token whose scopes do not cover the request, or a signed-in browser's change without its CSRF token",
        );
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
