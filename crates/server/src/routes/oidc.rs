//! `/v1/oidc`: signing in to the web UI through the server's OpenID Connect provider (`oidc`
//! says how). `GET /v1/oidc` tells the page whether there is one; `GET /v1/oidc/start` sends
//! the browser there; `GET /v1/oidc/callback` is where it comes back, signed in (a session
//! cookie, as a password sign-in sets) or not (`/#signin-error=…` says why). A first sign-in
//! makes the user, with the configured role.

use crate::AppState;
use crate::api::{Api, Method, SeeOther};
use crate::error::ApiError;
use crate::oidc::{Identity, OidcError, PENDING_COOKIE, PENDING_SECS, Pending, user_name_from};
use crate::routes::Params;
use crate::signin;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use rein_store::{Accounts, StoreError, User};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether this server signs people in through an OpenID Connect provider.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OidcOut {
    /// Whether it does.
    pub enabled: bool,
    /// What the sign-in button names (the provider).
    pub label: Option<String>,
}

/// Where the provider sends the browser back: a code and the state, or an error. Every value
/// is printable ASCII (RFC 6749 section 4.1.2), so the longest allowed callback stays within
/// the API's 8 KiB request target.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct CallbackQuery {
    /// The authorization code.
    #[schemars(length(max = 2048), pattern(r"^[\x21-\x7e]*$"))]
    pub code: Option<String>,
    /// The state the sign-in started with.
    #[schemars(length(max = 128), pattern(r"^[\x21-\x7e]*$"))]
    pub state: Option<String>,
    /// The provider's error code, when it refused.
    #[schemars(length(max = 64), pattern(r"^[\x21-\x7e]*$"))]
    pub error: Option<String>,
    /// The provider's words for it.
    #[schemars(length(max = 128), pattern(r"^[\x20-\x7e]*$"))]
    pub error_description: Option<String>,
    /// The issuer that answered (RFC 9207), when the provider says.
    #[schemars(length(max = 256), pattern(r"^[\x21-\x7e]*$"))]
    pub iss: Option<String>,
}

fn not_configured() -> ApiError {
    ApiError::not_found("this server signs nobody in through an OpenID Connect provider")
}

fn pending_cookie(value: Option<&str>, secure: bool) -> HeaderValue {
    let (value, age) = match value {
        Some(v) => (v, PENDING_SECS),
        None => ("", 0),
    };
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!(
        "{PENDING_COOKIE}={value}; Path=/v1/oidc; HttpOnly; SameSite=Lax; Max-Age={age}{secure}"
    );
    // Base64url and fixed text: always a valid header value.
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The callback URL: the configured one, else this server's as the browser named it.
fn redirect_uri(app: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(oidc) = &app.oidc else {
        return Err(not_configured());
    };
    if let Some(url) = &oidc.config().redirect_url {
        return Ok(url.clone());
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && !h.contains(['/', '\\', '@', ' ']))
        .ok_or_else(|| ApiError::bad_request("the request names no host to come back to"))?;
    let scheme = if signin::over_tls(headers) {
        "https"
    } else {
        "http"
    };
    Ok(format!("{scheme}://{host}/v1/oidc/callback"))
}

/// `/#signin-error=…`: the page shows why.
fn failed(why: &str, secure: bool) -> SeeOther {
    let said = crate::oidc::percent_encode(why);
    SeeOther {
        location: format!("/#signin-error={said}"),
        cookies: vec![pending_cookie(None, secure)],
    }
}

/// `GET /v1/oidc` (no token): whether people sign in through a provider here.
pub async fn show(State(app): State<AppState>) -> Json<OidcOut> {
    Json(OidcOut {
        enabled: app.oidc.is_some(),
        label: app.oidc.as_ref().map(|o| o.config().label.clone()),
    })
}

/// `GET /v1/oidc/start` (no token): go to the provider to sign in.
pub async fn start(State(app): State<AppState>, headers: HeaderMap) -> Result<SeeOther, ApiError> {
    let uri = redirect_uri(&app, &headers)?;
    let Some(oidc) = &app.oidc else {
        return Err(not_configured());
    };
    let secure = signin::over_tls(&headers);
    Ok(match oidc.start(&uri).await {
        Ok((location, pending)) => SeeOther {
            location,
            cookies: vec![pending_cookie(Some(&pending.encode()), secure)],
        },
        Err(e) => {
            tracing::warn!(error = %e, "an OpenID Connect sign-in could not start");
            failed(&e.to_string(), secure)
        }
    })
}

/// `GET /v1/oidc/callback` (no token): the provider sends the browser back here.
pub async fn callback(
    State(app): State<AppState>,
    headers: HeaderMap,
    Params(q): Params<CallbackQuery>,
) -> Result<SeeOther, ApiError> {
    let uri = redirect_uri(&app, &headers)?;
    let Some(oidc) = &app.oidc else {
        return Err(not_configured());
    };
    let secure = signin::over_tls(&headers);
    let pending = signin::cookie(&headers, PENDING_COOKIE).and_then(Pending::decode);
    // Mix-up defence (RFC 9207): an answer naming another issuer is not this provider's.
    let issuer = oidc.config().issuer.trim_end_matches('/');
    if q.iss
        .as_deref()
        .is_some_and(|i| i.trim_end_matches('/') != issuer)
    {
        return Ok(failed(&OidcError::State.to_string(), secure));
    }
    let identity = match (&q.error, &q.code, &q.state) {
        (Some(error), _, _) => Err(OidcError::Refused(
            q.error_description.clone().unwrap_or_else(|| error.clone()),
        )),
        (None, Some(code), Some(state)) => oidc.finish(pending.as_ref(), code, state, &uri).await,
        (None, _, _) => Err(OidcError::State),
    };
    let identity = match identity {
        Ok(i) => i,
        Err(e) => {
            tracing::info!(error = %e, "an OpenID Connect sign-in failed");
            return Ok(failed(&e.to_string(), secure));
        }
    };
    let user = match user_of(&app, &identity, oidc.config().default_role).await? {
        Some(u) => u,
        None => return Ok(failed("your account here is disabled", secure)),
    };
    let (secret, _) = crate::routes::sessions::open_session(&app, &user, &headers).await?;
    Ok(SeeOther {
        location: "/".into(),
        cookies: vec![
            signin::set_cookie(Some(&secret), secure),
            pending_cookie(None, secure),
        ],
    })
}

/// The user `identity` is (made on a first sign-in, under a free name); `None` when disabled.
async fn user_of(
    app: &AppState,
    identity: &Identity,
    role: rein_store::UserRole,
) -> Result<Option<User>, ApiError> {
    let base = user_name_from(&identity.preferred_name);
    for n in 1..=20 {
        if let Some(u) = app.store.user_by_oidc_subject(&identity.subject).await? {
            return Ok(u.disabled_at.is_none().then_some(u));
        }
        let name = if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        match app
            .store
            .create_oidc_user(&name, &identity.subject, role)
            .await
        {
            Ok(u) => {
                tracing::info!(user = %u.name, role = %role.as_str(), "a first sign-in made a user");
                return Ok(Some(u));
            }
            // The name is taken (never by this person: they would have been found), or
            // another first sign-in of theirs just made them: look again.
            Err(StoreError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::conflict(format!(
        "no free user name like `{base}`: an admin can make one"
    )))
}

/// The OpenID Connect routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/oidc",
            "Whether this server signs people in through an OpenID Connect provider (no token)",
            show,
        )
        .route(
            Method::Get,
            "/v1/oidc/start",
            "Go to the OpenID Connect provider to sign in (no token; a browser's step)",
            start,
        )
        .route(
            Method::Get,
            "/v1/oidc/callback",
            "Where the OpenID Connect provider sends the browser back (no token)",
            callback,
        )
}
