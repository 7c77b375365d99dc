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
    let mut bytes = [0u8; 24];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(std::io::Error::other)?;
    Ok(format!("rein_{}", hex(&bytes)))
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

/// The authenticated user of a request.
#[derive(Clone, Debug)]
pub struct Caller(pub User);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        if let AuthMode::Open(user) = &app.auth {
            return Ok(Caller(user.clone()));
        }
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("missing `Authorization: Bearer <token>`"))?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header is not `Bearer <token>`")
            })?;
        let user = app
            .store
            .user_for_token(&hash_token(token))
            .await?
            .ok_or_else(|| ApiError::unauthorized("unknown or revoked token"))?;
        Ok(Caller(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
