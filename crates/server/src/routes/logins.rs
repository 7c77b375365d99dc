//! `/v1/logins`: signing in a CLI on another machine (`rein login URL`), after OAuth's device
//! authorization grant (RFC 8628). The CLI asks for a login (no token needed) and gets a
//! secret and a short code; the person, signed in to the web UI, opens
//! `/#login=CODE`, sees which client asks, and approves; the CLI, polling with the secret,
//! receives a new API token of that person once (until then it is answered `409
//! authorization_pending`). Codes expire after ten minutes, at most
//! [`MAX_PENDING`] wait at once, and only the secret's hash is stored.

use crate::AppState;
use crate::api::{Api, Method, NoContent, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::{Body, LoginCodePath};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use rand::TryRngCore;
use rein_store::{Accounts, LoginClaim, LoginRecord, Logins};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long a login may wait for its approval.
pub const LIFETIME_SECS: u64 = 600;

/// How often the CLI polls, in seconds.
pub const INTERVAL_SECS: u64 = 1;

/// Logins that may wait for approval at once (the route that makes them is public).
pub const MAX_PENDING: u64 = 100;

/// The letters of a code: no vowels (no words), none that read alike.
const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";

/// The pattern of a code.
pub const CODE_PATTERN: &str = "^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$";

/// `POST /v1/logins` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewLogin {
    /// What the asking client calls itself (shown to the person who approves; the new token's
    /// label), e.g. the machine's name.
    #[schemars(length(min = 1, max = 64), pattern(r"\S"))]
    pub client: String,
}

/// `POST /v1/logins` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct LoginStarted {
    /// The secret to poll with (`POST /v1/login-tokens`); never shown to the person.
    pub login: String,
    /// What the person approves at `/#login=CODE` (`ABCD-EFGH`).
    pub user_code: String,
    /// Seconds until it expires.
    pub expires_in: u64,
    /// Seconds between polls.
    pub interval: u64,
}

/// `GET /v1/logins/{code}` answer: what the person is asked to approve.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct LoginAsk {
    /// The code.
    pub user_code: String,
    /// What the asking client calls itself.
    pub client: String,
    /// When it expires.
    pub expires_at: chrono::DateTime<Utc>,
}

/// `POST /v1/login-tokens` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimLogin {
    /// The secret `POST /v1/logins` answered.
    #[schemars(length(min = 1, max = 128))]
    pub login: String,
}

/// `POST /v1/login-tokens` answer, given once.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct LoginToken {
    /// A new API token of the person who approved.
    pub token: String,
    /// Their name.
    pub user: String,
}

/// A new code: eight letters of [`ALPHABET`] as `ABCD-EFGH`, each equally likely (bytes past
/// the last whole multiple of the alphabet's length are drawn again).
fn new_code() -> Result<String, std::io::Error> {
    let whole = 256 - 256 % ALPHABET.len();
    let mut letters = String::with_capacity(9);
    while letters.len() < 9 {
        let mut byte = [0u8; 1];
        rand::rngs::OsRng
            .try_fill_bytes(&mut byte)
            .map_err(std::io::Error::other)?;
        let b = usize::from(byte[0]);
        if b < whole {
            if letters.len() == 4 {
                letters.push('-');
            }
            letters.push(char::from(ALPHABET[b % ALPHABET.len()]));
        }
    }
    Ok(letters)
}

/// Refuse what is not a login code, naming it.
pub(crate) fn check_code(code: &str) -> Result<(), ApiError> {
    let ok = code.len() == 9
        && code.bytes().enumerate().all(|(i, b)| match i {
            4 => b == b'-',
            _ => ALPHABET.contains(&b),
        });
    if ok {
        Ok(())
    } else {
        let shown: String = code.chars().take(20).collect();
        Err(ApiError::bad_request(format!(
            "{shown:?} is not a login code (ABCD-EFGH)"
        )))
    }
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e.to_string())
}

/// `POST /v1/logins` (no token): a login for the person to approve.
pub async fn start(
    State(app): State<AppState>,
    Body(req): Body<NewLogin>,
) -> Result<Reply<201, LoginStarted>, ApiError> {
    let client = req.client.trim();
    if client.is_empty() || client.chars().count() > 64 {
        return Err(ApiError::bad_request(
            "client: 1 to 64 characters, not blank",
        ));
    }
    let login = format!(
        "login_{}",
        crate::auth::random_hex::<32>().map_err(internal)?
    );
    let user_code = new_code().map_err(internal)?;
    let now = Utc::now();
    let record = LoginRecord {
        id: crate::hash_token(&login),
        user_code: user_code.clone(),
        client: client.to_owned(),
        created_at: now,
        expires_at: now + chrono::Duration::seconds(LIFETIME_SECS as i64),
        approved_by: None,
        claimed_at: None,
    };
    if app
        .store
        .create_login(&record, MAX_PENDING)
        .await?
        .is_none()
    {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ApiErrorCode::TooManyLogins,
            format!("{MAX_PENDING} logins already wait for approval; try again in a few minutes"),
        ));
    }
    Ok(Reply(LoginStarted {
        login,
        user_code,
        expires_in: LIFETIME_SECS,
        interval: INTERVAL_SECS,
    }))
}

fn no_login(code: &str) -> ApiError {
    ApiError::not_found(format!(
        "no login {code} waits for approval (it expired, or was approved already)"
    ))
}

/// `GET /v1/logins/{code}`: which client asks, before approving it.
pub async fn show(
    State(app): State<AppState>,
    Caller(_): Caller,
    LoginCodePath(code): LoginCodePath,
) -> Result<Json<LoginAsk>, ApiError> {
    let l = app
        .store
        .pending_login(&code, Utc::now())
        .await?
        .ok_or_else(|| no_login(&code))?;
    Ok(Json(LoginAsk {
        user_code: l.user_code,
        client: l.client,
        expires_at: l.expires_at,
    }))
}

/// `POST /v1/logins/{code}/approve`: the client that asked signs in as the caller.
pub async fn approve(
    State(app): State<AppState>,
    Caller(user): Caller,
    LoginCodePath(code): LoginCodePath,
) -> Result<NoContent, ApiError> {
    if app.store.approve_login(&code, &user.id, Utc::now()).await? {
        Ok(NoContent)
    } else {
        Err(no_login(&code))
    }
}

/// `POST /v1/login-tokens` (no token): the new token, once the login is approved; `409
/// authorization_pending` before, `404 expired_token` after.
pub async fn claim(
    State(app): State<AppState>,
    Body(req): Body<ClaimLogin>,
) -> Result<Json<LoginToken>, ApiError> {
    match app
        .store
        .claim_login(&crate::hash_token(&req.login), Utc::now())
        .await?
    {
        // A valid poll meets the login's state: not yet (409), or no more (404).
        LoginClaim::Pending => Err(ApiError::new(
            StatusCode::CONFLICT,
            ApiErrorCode::AuthorizationPending,
            format!("not approved yet: poll again in {INTERVAL_SECS} s"),
        )),
        LoginClaim::Gone => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ApiErrorCode::ExpiredToken,
            "no login waits under this secret: it expired, or its token was already received; \
             start again",
        )),
        LoginClaim::Approved { user_id, client } => {
            let spec = rein_store::TokenSpec {
                label: Some(format!("login: {client}")),
                ..Default::default()
            };
            let (token, _) =
                crate::issue_token(&app.store, &user_id, crate::TokenFor::Api(&spec)).await?;
            let holder = app
                .store
                .user_for_token(&crate::hash_token(&token))
                .await?
                .ok_or_else(|| ApiError::internal("the new token's user is gone"))?;
            Ok(Json(LoginToken {
                token,
                user: holder.user.name,
            }))
        }
    }
}

/// `DELETE /v1/tokens/current`: revoke the token this request carries (`rein logout`); open
/// streams it holds end as revoked tokens' do.
pub async fn sign_out(
    State(app): State<AppState>,
    crate::auth::SignedIn(_): crate::auth::SignedIn,
    headers: axum::http::HeaderMap,
) -> Result<NoContent, ApiError> {
    let token = crate::auth::bearer_token(&headers)
        .map_err(|_| ApiError::not_found("this request carries no token to revoke"))?;
    if app
        .store
        .revoke_token_hash(&crate::hash_token(token))
        .await?
    {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found(
            "this request's token is not a revocable API token",
        ))
    }
}

/// The login routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/logins",
            "Ask to sign in a client on another machine (no token): a code for a person to approve",
            start,
        )
        .route(
            Method::Get,
            "/v1/logins/{code}",
            "Which client asks to sign in with this code",
            show,
        )
        .route(
            Method::Post,
            "/v1/logins/{code}/approve",
            "Sign in the client that asked with this code, as you",
            approve,
        )
        .route(
            Method::Post,
            "/v1/login-tokens",
            "The approved login's new API token (no token; given once)",
            claim,
        )
        .route(
            Method::Delete,
            "/v1/tokens/current",
            "Revoke the token this request carries (sign out)",
            sign_out,
        )
}
