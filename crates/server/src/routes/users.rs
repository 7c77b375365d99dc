//! `/v1/users` (admins only) and `/v1/me`: who uses this server. An admin lists users, creates
//! one, changes a role, and disables a user, whose tokens (device tokens included) and
//! sessions then authenticate nothing and whose open event streams end at their next check;
//! enabling them again restores both. An admin sets anyone's password, makes and revokes their
//! tokens (with an expiry and scopes) and ends their browser sessions; a user sets their own
//! password (giving the current one) and lists, makes (from a signed-in browser only: a token
//! cannot make tokens) and revokes their own tokens (`/v1/me/tokens`). To a member the admin routes do not exist (`404`). An
//! admin cannot disable themselves or take the last enabled admin's role away, so a server
//! always keeps one.

use crate::AppState;
use crate::api::{Api, Method, NoContent, Reply};
use crate::auth::{Caller, Person};
use crate::error::ApiError;
use crate::routes::{AgentPath, Body, Params};
use axum::Json;
use axum::extract::State;
use rein_store::{Accounts, Caps, SessionRecord, Sessions, StoreError, TokenScope, User, UserRole};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A user as the API shows them.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct UserOut {
    /// Their name.
    pub name: String,
    /// `admin` or `member`.
    pub role: UserRole,
    /// Created.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When they were disabled (absent while enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Their own caps over the server's defaults (absent fields: the defaults).
    #[serde(default)]
    pub caps: Caps,
}

impl From<User> for UserOut {
    fn from(u: User) -> Self {
        Self {
            name: u.name,
            role: u.role,
            created_at: u.created_at,
            disabled_at: u.disabled_at,
            caps: u.caps,
        }
    }
}

/// `GET /v1/users` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct UserList {
    /// By name.
    pub users: Vec<UserOut>,
}

/// `POST /v1/users` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Their name (1-64 letters, digits, `-`, `_`), unique on the server.
    #[schemars(regex(pattern = rein_operation::profile::AGENT_NAME_PATTERN))]
    pub name: String,
    /// `member` (default) or `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<UserRole>,
}

/// `PATCH /v1/users/{name}` body: what changes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserChange {
    /// Their role from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<UserRole>,
    /// Disable (`true`) or enable (`false`) them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Their caps over the server's defaults from now on (replacing what was set; `{}`: the
    /// defaults again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<Caps>,
}

/// `POST /v1/users/{name}/tokens` body.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What the token is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub label: Option<String>,
    /// A device token: it connects the device of this name (`rein connect`) and authenticates
    /// nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    pub device: Option<String>,
    /// When an API token stops authenticating (never by default); in the future.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// What an API token may do (`read`, `run`, `admin`; all the user's role allows by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub scopes: Option<Vec<TokenScope>>,
}

/// Why a [`NewToken`] cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenRefusal {
    /// Not a device name.
    #[error("device `{0}`: use 1-64 letters, digits, `-`, `_` or `.`")]
    DeviceName(String),
    /// A label of no or too many characters.
    #[error("label: 1 to 200 characters")]
    Label,
    /// A device token given an expiry or scopes.
    #[error("a device token has no expiry or scopes: it connects its device and nothing else")]
    DeviceScoped,
    /// An expiry that has passed.
    #[error("expires_at: must be in the future")]
    Expired,
    /// An empty list of scopes.
    #[error("scopes: name at least one of read, run, admin (or leave it out)")]
    NoScopes,
}

impl From<TokenRefusal> for ApiError {
    fn from(e: TokenRefusal) -> Self {
        match e {
            // What the request's schema already rules out.
            TokenRefusal::DeviceName(_) | TokenRefusal::Label | TokenRefusal::NoScopes => {
                ApiError::bad_request(e.to_string())
            }
            // Well-formed, but not a token that can be made.
            TokenRefusal::DeviceScoped | TokenRefusal::Expired => {
                ApiError::unprocessable(e.to_string())
            }
        }
    }
}

impl NewToken {
    /// The token's record-to-be, or why it cannot be made (at `now`).
    pub fn checked(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<rein_store::TokenSpec, TokenRefusal> {
        if let Some(d) = &self.device
            && !rein_core::spec::valid_device_name(d)
        {
            return Err(TokenRefusal::DeviceName(d.clone()));
        }
        if self
            .label
            .as_ref()
            .is_some_and(|l| !(1..=200).contains(&l.chars().count()))
        {
            return Err(TokenRefusal::Label);
        }
        if self.device.is_some() && (self.expires_at.is_some() || self.scopes.is_some()) {
            return Err(TokenRefusal::DeviceScoped);
        }
        if self.expires_at.is_some_and(|t| t <= now) {
            return Err(TokenRefusal::Expired);
        }
        if self.scopes.as_ref().is_some_and(Vec::is_empty) {
            return Err(TokenRefusal::NoScopes);
        }
        Ok(rein_store::TokenSpec {
            label: self.label.clone(),
            expires_at: self.expires_at,
            scopes: self.scopes.clone(),
        })
    }
}

/// `PUT /v1/users/{name}/password` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    /// The new password (8 to 256 characters).
    #[schemars(length(min = 8, max = 256))]
    pub password: String,
    /// The current one: needed when you change your own password and have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub current: Option<String>,
}

/// `GET /v1/users/{name}/sessions` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    /// Live sessions, newest first (never their secrets).
    pub sessions: Vec<SessionRecord>,
}

/// `DELETE /v1/users/{name}/sessions` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct SessionsEnded {
    /// How many sessions ended.
    pub ended: u64,
}

/// `POST /v1/users/{name}/tokens` answer: the token, shown this once.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TokenMade {
    /// The token.
    pub token: String,
    /// Its record's id (`rein token list`, revoking).
    pub id: String,
    /// Whose.
    pub user: String,
}

/// `GET /v1/users/{name}/tokens` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TokenList {
    /// Newest first (never the tokens themselves).
    pub tokens: Vec<rein_store::ApiToken>,
}

/// `DELETE /v1/users/{name}/tokens` query.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenQuery {
    /// The token's id.
    #[schemars(regex(pattern = r"^tok_[0-9a-f]{32}$"))]
    pub id: String,
}

/// The caller when they administer this server (a server without tokens has one user, its
/// operator); to anyone else the route does not exist.
fn admin(app: &AppState, caller: &User) -> Result<(), ApiError> {
    if crate::auth::administers(app, caller) {
        Ok(())
    } else {
        Err(ApiError::not_found("no such route"))
    }
}

async fn named(app: &AppState, name: &str) -> Result<User, ApiError> {
    app.store
        .user_by_name(name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no user `{name}`")))
}

/// `GET /v1/me`: the caller.
pub async fn me(Caller(user): Caller) -> Json<UserOut> {
    Json(user.into())
}

/// `GET /v1/users` (admins).
pub async fn list(
    State(app): State<AppState>,
    Caller(caller): Caller,
) -> Result<Json<UserList>, ApiError> {
    admin(&app, &caller)?;
    let users = app.store.list_users().await?;
    Ok(Json(UserList {
        users: users.into_iter().map(UserOut::from).collect(),
    }))
}

/// `POST /v1/users` (admins): 201, 409 when the name is taken.
pub async fn create(
    State(app): State<AppState>,
    Caller(caller): Caller,
    Body(new): Body<NewUser>,
) -> Result<Reply<201, UserOut>, ApiError> {
    admin(&app, &caller)?;
    rein_operation::profile::check_name(&new.name)
        .map_err(|e| ApiError::bad_request(format!("name: {e}")))?;
    let user = match app.store.create_user(&new.name).await {
        Ok(u) => u,
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::conflict(format!(
                "user `{}` already exists",
                new.name
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let role = new.role.unwrap_or_default();
    if role != user.role {
        app.store.set_role(&user.id, role).await?;
    }
    Ok(Reply(named(&app, &new.name).await?.into()))
}

/// `GET /v1/users/{name}` (admins).
pub async fn show(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<UserOut>, ApiError> {
    admin(&app, &caller)?;
    Ok(Json(named(&app, &name).await?.into()))
}

/// `PATCH /v1/users/{name}` (admins): change a role, disable or enable.
pub async fn change(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
    Body(change): Body<UserChange>,
) -> Result<Json<UserOut>, ApiError> {
    admin(&app, &caller)?;
    let user = named(&app, &name).await?;
    if change.disabled == Some(true) && user.id == caller.id {
        return Err(ApiError::conflict(
            "you cannot disable yourself: another admin can",
        ));
    }
    let loses_admin = user.role == UserRole::Admin
        && user.disabled_at.is_none()
        && (change.role == Some(UserRole::Member) || change.disabled == Some(true));
    if loses_admin {
        let admins = app
            .store
            .list_users()
            .await?
            .into_iter()
            .filter(|u| u.role == UserRole::Admin && u.disabled_at.is_none())
            .count();
        if admins <= 1 {
            return Err(ApiError::conflict(format!(
                "`{name}` is the last enabled admin: make another admin first"
            )));
        }
    }
    if let Some(role) = change.role {
        app.store.set_role(&user.id, role).await?;
    }
    if let Some(disabled) = change.disabled {
        app.store.set_disabled(&user.id, disabled).await?;
    }
    if let Some(caps) = &change.caps {
        app.store.set_caps(&user.id, caps).await?;
    }
    Ok(Json(named(&app, &name).await?.into()))
}

/// `POST /v1/users/{name}/tokens` (admins): a new API or device token of the user, shown once.
pub async fn create_token(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
    Body(req): Body<NewToken>,
) -> Result<Reply<201, TokenMade>, ApiError> {
    admin(&app, &caller)?;
    let spec = req.checked(chrono::Utc::now())?;
    let user = named(&app, &name).await?;
    make_token(&app, user, &req, &spec).await.map(Reply)
}

/// A new token of `user` as `req` asks (`spec`: its checked record), shown this once.
async fn make_token(
    app: &AppState,
    user: User,
    req: &NewToken,
    spec: &rein_store::TokenSpec,
) -> Result<TokenMade, ApiError> {
    let what = match &req.device {
        Some(d) => crate::TokenFor::Device(d),
        None => crate::TokenFor::Api(spec),
    };
    let (token, record) = crate::issue_token(&app.store, &user.id, what).await?;
    Ok(TokenMade {
        token,
        id: record.id,
        user: user.name,
    })
}

/// `GET /v1/users/{name}/tokens` (admins).
pub async fn tokens(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<TokenList>, ApiError> {
    admin(&app, &caller)?;
    let user = named(&app, &name).await?;
    Ok(Json(TokenList {
        tokens: app.store.list_tokens(&user.id).await?,
    }))
}

/// `DELETE /v1/users/{name}/tokens?id=…` (admins): the token stops at once (open streams end).
pub async fn revoke_token(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
    Params(q): Params<TokenQuery>,
) -> Result<NoContent, ApiError> {
    admin(&app, &caller)?;
    let user = named(&app, &name).await?;
    if app.store.revoke_token(&user.id, &q.id).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found(format!(
            "user {name} has no active token {}",
            q.id
        )))
    }
}

/// `GET /v1/me/tokens`: your tokens (never the tokens themselves).
pub async fn my_tokens(
    State(app): State<AppState>,
    Caller(caller): Caller,
) -> Result<Json<TokenList>, ApiError> {
    Ok(Json(TokenList {
        tokens: app.store.list_tokens(&caller.id).await?,
    }))
}

/// `POST /v1/me/tokens`: a new token of yours, shown once; made from a signed-in browser,
/// never by a token.
pub async fn create_my_token(
    State(app): State<AppState>,
    Person(caller): Person,
    Body(req): Body<NewToken>,
) -> Result<Reply<201, TokenMade>, ApiError> {
    let spec = req.checked(chrono::Utc::now())?;
    make_token(&app, caller, &req, &spec).await.map(Reply)
}

/// `DELETE /v1/me/tokens?id=…`: one of your tokens stops at once (open streams end).
pub async fn revoke_my_token(
    State(app): State<AppState>,
    Caller(caller): Caller,
    Params(q): Params<TokenQuery>,
) -> Result<NoContent, ApiError> {
    if app.store.revoke_token(&caller.id, &q.id).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found(format!(
            "you have no active token {}",
            q.id
        )))
    }
}

/// `PUT /v1/users/{name}/password`: an admin sets anyone's; a user sets their own, giving the
/// current one when they have one. The user's browser sessions end (tokens stay).
pub async fn set_password(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
    Body(req): Body<NewPassword>,
) -> Result<NoContent, ApiError> {
    let own = caller.name == name;
    if !own {
        admin(&app, &caller)?;
    }
    crate::signin::check_new_password(&req.password)
        .map_err(|e| ApiError::bad_request(format!("password: {e}")))?;
    if req
        .current
        .as_ref()
        .is_some_and(|c| c.chars().count() > crate::signin::MAX_PASSWORD_CHARS)
    {
        return Err(ApiError::bad_request(format!(
            "current: longer than {} characters",
            crate::signin::MAX_PASSWORD_CHARS
        )));
    }
    let rein_store::PasswordHolder {
        user,
        password_hash: phc,
    } = app
        .store
        .user_with_password(&name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no user `{name}`")))?;
    let needs_current = own && phc.is_some() && !crate::auth::administers(&app, &caller);
    if needs_current {
        // Guessing the current password counts as failed sign-ins do.
        crate::routes::sessions::check_attempts(&app, &name).await?;
    }
    let current = req.current.clone().unwrap_or_default();
    let new = req.password.clone();
    let hashed = tokio::task::spawn_blocking(move || {
        if needs_current && !crate::signin::verify_password(&current, phc.as_deref()) {
            return None;
        }
        Some(crate::signin::hash_password(&new))
    })
    .await
    .map_err(|e| ApiError::internal(format!("hashing the password: {e}")))?;
    let Some(hashed) = hashed else {
        crate::signin::count_failure(&*app.store, &name, chrono::Utc::now()).await?;
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            crate::error_code::ApiErrorCode::WrongPassword,
            "`current` is not your current password",
        ));
    };
    let hashed = hashed.map_err(|e| ApiError::bad_request(format!("password: {e}")))?;
    app.store.set_password(&user.id, Some(&hashed)).await?;
    app.store.end_sessions(&user.id, chrono::Utc::now()).await?;
    tracing::info!(user = %name, by = %caller.name, "password set");
    Ok(NoContent)
}

/// `GET /v1/users/{name}/sessions` (admins): the user's live browser sessions.
pub async fn sessions(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<SessionList>, ApiError> {
    admin(&app, &caller)?;
    let user = named(&app, &name).await?;
    Ok(Json(SessionList {
        sessions: app
            .store
            .list_sessions(&user.id, chrono::Utc::now())
            .await?,
    }))
}

/// `DELETE /v1/users/{name}/sessions` (admins): end every browser session of the user at once.
pub async fn end_sessions(
    State(app): State<AppState>,
    Caller(caller): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<SessionsEnded>, ApiError> {
    admin(&app, &caller)?;
    let user = named(&app, &name).await?;
    let ended = app.store.end_sessions(&user.id, chrono::Utc::now()).await?;
    Ok(Json(SessionsEnded { ended }))
}

/// The user routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(Method::Get, "/v1/me", "Who you are on this server", me)
        .route(
            Method::Get,
            "/v1/me/tokens",
            "Your tokens, never the tokens themselves",
            my_tokens,
        )
        .route(
            Method::Post,
            "/v1/me/tokens",
            "A new token of yours, shown once (from a signed-in browser: a token cannot make tokens)",
            create_my_token,
        )
        .route(
            Method::Delete,
            "/v1/me/tokens",
            "Revoke one of your tokens",
            revoke_my_token,
        )
        .route(Method::Get, "/v1/users", "Every user (admins)", list)
        .route(Method::Post, "/v1/users", "Create a user (admins)", create)
        .route(Method::Get, "/v1/users/{name}", "A user (admins)", show)
        .route(
            Method::Patch,
            "/v1/users/{name}",
            "Change a user's role or caps, disable or enable them (admins)",
            change,
        )
        .route(
            Method::Get,
            "/v1/users/{name}/tokens",
            "A user's tokens, never the tokens themselves (admins)",
            tokens,
        )
        .route(
            Method::Post,
            "/v1/users/{name}/tokens",
            "A new token of a user, shown once (admins)",
            create_token,
        )
        .route(
            Method::Delete,
            "/v1/users/{name}/tokens",
            "Revoke a user's token (admins)",
            revoke_token,
        )
        .route(
            Method::Put,
            "/v1/users/{name}/password",
            "Set a user's password (admins; or your own, giving the current one)",
            set_password,
        )
        .route(
            Method::Get,
            "/v1/users/{name}/sessions",
            "A user's live browser sessions (admins)",
            sessions,
        )
        .route(
            Method::Delete,
            "/v1/users/{name}/sessions",
            "End a user's browser sessions (admins)",
            end_sessions,
        )
}
