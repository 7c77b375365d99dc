//! Signing in to the web UI by name and password: passwords kept as argon2id PHC strings,
//! browser sessions held in an `HttpOnly`, `SameSite=Lax` cookie (and `Secure` when the request
//! came over TLS through a proxy), a CSRF token every state-changing request of a session must
//! carry, and a per-name limit on failed attempts, counted in the store so that every server
//! on the database locks a name together. Programs keep using API tokens.
//!
//! The CSRF token is derived from the session's secret (a SHA-256 under its own label), so it
//! needs no storage and dies with the session; a page of another origin can neither read the
//! cookie nor an answer of this server (no CORS), so it cannot learn the token.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use axum::http::{HeaderMap, HeaderValue, header};
use chrono::{DateTime, Utc};
use rein_store::{Sessions, StoreError};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use std::time::Duration;

/// The session cookie's name.
pub const COOKIE: &str = "rein_session";

/// The header a session's state-changing request carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// How long a session lasts.
pub const SESSION_DAYS: i64 = 14;

/// Failed sign-ins of one name within [`FAILURE_WINDOW`] after which further attempts are
/// refused until the oldest one leaves the window.
pub const MAX_FAILURES: usize = 5;

/// The window [`MAX_FAILURES`] counts in.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(15 * 60);

/// Shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// Longest password accepted, in characters (argon2 hashes any length; this bounds the work a
/// request can ask for).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// Why a password cannot be set or checked.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Shorter than [`MIN_PASSWORD_CHARS`].
    #[error("the password is shorter than {MIN_PASSWORD_CHARS} characters")]
    TooShort,
    /// Longer than [`MAX_PASSWORD_CHARS`].
    #[error("the password is longer than {MAX_PASSWORD_CHARS} characters")]
    TooLong,
    /// argon2 refused (it does not for these inputs; named rather than unwrapped).
    #[error("cannot hash the password: {0}")]
    Hash(String),
}

/// Refuse a password that cannot be set, naming why.
pub fn check_new_password(password: &str) -> Result<(), PasswordError> {
    let chars = password.chars().count();
    if chars > MAX_PASSWORD_CHARS {
        Err(PasswordError::TooLong)
    } else if chars < MIN_PASSWORD_CHARS {
        Err(PasswordError::TooShort)
    } else {
        Ok(())
    }
}

/// A new password's PHC string (argon2id, default parameters, a random salt). Slow on purpose:
/// call it off the async threads.
pub fn hash_password(password: &str) -> Result<String, PasswordError> {
    check_new_password(password)?;
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Whether `password` is the one `phc` was made from. Without a stored password (an unknown
/// name, or a user who has none) it checks against a stand-in all the same, so the answer
/// takes as long and tells nothing about which names exist. Slow on purpose: call it off the
/// async threads.
pub fn verify_password(password: &str, phc: Option<&str>) -> bool {
    static STAND_IN: OnceLock<Option<String>> = OnceLock::new();
    let stand_in = STAND_IN.get_or_init(|| {
        Argon2::default()
            .hash_password(b"a password nobody has")
            .ok()
            .map(|h| h.to_string())
    });
    let (phc, real) = match phc {
        Some(p) => (Some(p), true),
        None => (stand_in.as_deref(), false),
    };
    let Some(parsed) = phc.and_then(|p| PasswordHash::new(p).ok()) else {
        return false;
    };
    password.chars().count() <= MAX_PASSWORD_CHARS
        && Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
        && real
}

/// A new session secret: `rein_s_` and 64 hex digits (256 random bits).
pub fn new_secret() -> Result<String, std::io::Error> {
    Ok(format!("rein_s_{}", crate::auth::random_hex::<32>()?))
}

/// The CSRF token of the session whose secret is `secret`.
pub fn csrf_of(secret: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"rein csrf\0");
    h.update(secret.as_bytes());
    crate::auth::hex(&h.finalize())
}

/// Whether `given` is the CSRF token of `secret` (compared in constant time).
pub fn csrf_matches(secret: &str, given: &str) -> bool {
    crate::auth::same(&csrf_of(secret), given)
}

/// The session secret a request's `Cookie` header carries, if any.
pub fn cookie_secret(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, COOKIE)
}

/// The value of the cookie `name` a request carries, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// Whether the request reached the proxy in front of this server over TLS (`rein serve`
/// speaks plain HTTP; a TLS-terminating proxy says so in `X-Forwarded-Proto`). A forged header
/// only makes the cookie stricter.
pub fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` value that stores a session (`None`: one that removes it).
pub fn set_cookie(secret: Option<&str>, secure: bool) -> HeaderValue {
    let (value, age) = match secret {
        Some(s) => (s, SESSION_DAYS * 24 * 3600),
        None => ("", 0),
    };
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={age}{secure}");
    // The secret is hex and the rest fixed text: always a valid header value.
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// How long `name` must wait before trying again (`None`: it may try now): failed sign-ins are
/// counted in the store, so every server on the database locks a name together.
pub async fn locked_for(
    store: &(dyn Sessions + Sync),
    name: &str,
    now: DateTime<Utc>,
) -> Result<Option<Duration>, StoreError> {
    let window = window();
    let failures = store
        .sign_in_failures(&name.to_lowercase(), now - window)
        .await?;
    if failures.count < MAX_FAILURES as u64 {
        return Ok(None);
    }
    let until = failures.oldest.unwrap_or(now) + window;
    Ok(Some((until - now).to_std().unwrap_or_default()))
}

/// Count a failed sign-in (or a wrong current password) of `name`.
pub async fn count_failure(
    store: &(dyn Sessions + Sync),
    name: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    store
        .record_sign_in_failure(&name.to_lowercase(), now, now - window())
        .await
}

/// Forget `name`'s failures (it signed in).
pub async fn forget_failures(store: &(dyn Sessions + Sync), name: &str) -> Result<(), StoreError> {
    store.clear_sign_in_failures(&name.to_lowercase()).await
}

fn window() -> chrono::Duration {
    chrono::Duration::from_std(FAILURE_WINDOW).unwrap_or(chrono::Duration::minutes(15))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_and_unknown_names_fail_alike() {
        let phc = hash_password("correct horse").unwrap();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(verify_password("correct horse", Some(&phc)));
        assert!(!verify_password("correct hors", Some(&phc)));
        assert!(!verify_password("correct horse", None));
        assert!(!verify_password("x", Some("not a phc string")));
        assert!(matches!(
            hash_password("short"),
            Err(PasswordError::TooShort)
        ));
        let long = "é".repeat(MAX_PASSWORD_CHARS + 1);
        assert!(matches!(hash_password(&long), Err(PasswordError::TooLong)));
    }

    #[test]
    fn the_csrf_token_belongs_to_its_session() {
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert!(csrf_matches(&a, &csrf_of(&a)));
        assert!(!csrf_matches(&a, &csrf_of(&b)));
        assert!(!csrf_matches(&a, ""));
        assert_ne!(csrf_of(&a), crate::hash_token(&a), "not the stored hash");
    }

    #[test]
    fn the_cookie_is_found_among_others_and_set_strictly() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; rein_session=rein_s_ab ; b=2"),
        );
        assert_eq!(cookie_secret(&h), Some("rein_s_ab"));
        h.insert(header::COOKIE, HeaderValue::from_static("rein_sessionx=1"));
        assert_eq!(cookie_secret(&h), None);
        let set = set_cookie(Some("rein_s_ab"), true);
        let set = set.to_str().unwrap();
        for part in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/"] {
            assert!(set.contains(part), "{set}");
        }
        assert!(!set_cookie(None, false).to_str().unwrap().contains("Secure"));
        assert!(
            set_cookie(None, false)
                .to_str()
                .unwrap()
                .contains("Max-Age=0")
        );
    }
}
