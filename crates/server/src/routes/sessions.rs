//! `/v1/sessions` and `/v1/session`: signing in to the web UI by name and password. Signing in
//! answers the session's CSRF token and sets its cookie (`signin` says how both are made);
//! `GET /v1/session` answers the token again to a page reloaded with the cookie; `DELETE
//! /v1/session` signs out. A name's failed attempts are limited ([`signin::MAX_FAILURES`] per
//! [`signin::FAILURE_WINDOW`], then `429 too_many_attempts`), and a wrong name or password
//! gets the same answer after the same work.

use crate::AppState;
use crate::api::{Api, Method, NoContent, Reply, SetCookie};
use crate::auth::{Caller, Credential};
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::Body;
use crate::routes::users::UserOut;
use crate::signin;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use chrono::{DateTime, Utc};
use rein_store::{Accounts, SessionRecord, Sessions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest name a sign-in is checked for, in bytes.
const MAX_NAME_BYTES: usize = 256;

/// `POST /v1/sessions` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    /// Your user name.
    #[schemars(length(min = 1, max = 64))]
    pub name: String,
    /// Your password.
    #[schemars(length(min = 1, max = 256))]
    pub password: String,
}

/// A signed-in browser session: who, its CSRF token, until when.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionOut {
    /// Who is signed in.
    pub user: UserOut,
    /// Send it as `X-CSRF-Token` with every request that changes something.
    pub csrf: String,
    /// When the session ends by itself.
    pub expires_at: DateTime<Utc>,
}

/// `429 too_many_attempts` (with `Retry-After`) while `name` has failed too often.
pub(crate) async fn check_attempts(app: &AppState, name: &str) -> Result<(), ApiError> {
    let Some(wait) = signin::locked_for(&*app.store, name, Utc::now()).await? else {
        return Ok(());
    };
    let secs = wait.as_secs().max(1);
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        ApiErrorCode::TooManyAttempts,
        format!("too many failed sign-ins as `{name}`: try again in {secs} s"),
    );
    e.retry_after = Some(secs);
    Err(e)
}

fn refused_without_tokens() -> ApiError {
    ApiError::not_found("this server runs without tokens: there is nothing to sign in to")
}

/// `POST /v1/sessions` (no token): sign in by name and password.
pub async fn sign_in(
    State(app): State<AppState>,
    headers: HeaderMap,
    Body(req): Body<SignIn>,
) -> Result<SetCookie<Reply<201, SessionOut>>, ApiError> {
    if matches!(app.auth, crate::AuthMode::Open(_)) {
        return Err(refused_without_tokens());
    }
    // Refused before it is counted, so the failure counts hold only short keys (user names
    // are at most 64 characters; the operator's CLI may have made longer ones, never this long).
    if req.name.len() > MAX_NAME_BYTES {
        return Err(ApiError::unauthorized("wrong name or password"));
    }
    check_attempts(&app, &req.name).await?;
    let found = app.store.user_with_password(&req.name).await?;
    let phc = found.as_ref().and_then(|f| f.password_hash.clone());
    let password = req.password.clone();
    let matched =
        tokio::task::spawn_blocking(move || signin::verify_password(&password, phc.as_deref()))
            .await
            .map_err(|e| ApiError::internal(format!("checking the password: {e}")))?;
    let user = match found {
        Some(f) if matched && f.user.disabled_at.is_none() => f.user,
        _ => {
            signin::count_failure(&*app.store, &req.name, Utc::now()).await?;
            tracing::info!(name = %req.name, "a sign-in failed");
            return Err(ApiError::unauthorized("wrong name or password"));
        }
    };
    signin::forget_failures(&*app.store, &req.name).await?;
    let (secret, session) = open_session(&app, &user, &headers).await?;
    Ok(SetCookie(
        signin::set_cookie(Some(&secret), signin::over_tls(&headers)),
        Reply(SessionOut {
            user: user.into(),
            csrf: signin::csrf_of(&secret),
            expires_at: session.expires_at,
        }),
    ))
}

/// A new browser session of `user` (signed in by password or through the OpenID Connect
/// provider): its secret, for the cookie, and its record.
pub(crate) async fn open_session(
    app: &AppState,
    user: &rein_store::User,
    headers: &HeaderMap,
) -> Result<(String, SessionRecord), ApiError> {
    let secret = signin::new_secret().map_err(|e| ApiError::internal(e.to_string()))?;
    let now = Utc::now();
    let session = SessionRecord {
        id: format!(
            "ses_{}",
            crate::auth::random_hex::<16>().map_err(|e| ApiError::internal(e.to_string()))?
        ),
        user_id: user.id.clone(),
        client: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(200).collect()),
        created_at: now,
        expires_at: now + chrono::Duration::days(signin::SESSION_DAYS),
        last_used_at: None,
        revoked_at: None,
    };
    app.store
        .create_session(&session, &crate::hash_token(&secret))
        .await?;
    tracing::info!(user = %user.name, session = %session.id, "signed in");
    Ok((secret, session))
}

/// The session a request's cookie names, with its secret; `404` for a request without one.
async fn this_session(
    app: &AppState,
    headers: &HeaderMap,
) -> Result<(String, SessionRecord), ApiError> {
    let no_session = || ApiError::not_found("this request carries no session (it uses a token)");
    let Some(Credential::Session(hash)) = crate::auth::credential(app, headers) else {
        return Err(no_session());
    };
    let secret = signin::cookie_secret(headers).ok_or_else(no_session)?;
    let (_, session) = app
        .store
        .user_for_session(&hash, Utc::now())
        .await?
        .ok_or_else(no_session)?;
    Ok((secret.to_owned(), session))
}

/// `GET /v1/session`: the signed-in browser's session and CSRF token.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    headers: HeaderMap,
) -> Result<Json<SessionOut>, ApiError> {
    let (secret, session) = this_session(&app, &headers).await?;
    Ok(Json(SessionOut {
        user: user.into(),
        csrf: signin::csrf_of(&secret),
        expires_at: session.expires_at,
    }))
}

/// `DELETE /v1/session`: sign out; the cookie is removed and the session ends at once (its
/// open event streams end at their next check).
pub async fn sign_out(
    State(app): State<AppState>,
    Caller(user): Caller,
    headers: HeaderMap,
) -> Result<SetCookie<NoContent>, ApiError> {
    let (secret, session) = this_session(&app, &headers).await?;
    app.store
        .end_session(&crate::hash_token(&secret), Utc::now())
        .await?;
    tracing::info!(user = %user.name, session = %session.id, "signed out");
    Ok(SetCookie(
        signin::set_cookie(None, signin::over_tls(&headers)),
        NoContent,
    ))
}

/// The session routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/sessions",
            "Sign in by name and password (no token): sets the session cookie, answers its CSRF token",
            sign_in,
        )
        .route(
            Method::Get,
            "/v1/session",
            "The signed-in browser's session and CSRF token",
            show,
        )
        .route(
            Method::Delete,
            "/v1/session",
            "Sign out the signed-in browser",
            sign_out,
        )
}
