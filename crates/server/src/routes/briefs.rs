//! `/v1/briefs`: the caller's briefs (newest first, with how many are unread), one brief
//! (opening it marks it read), resolving one with an action it offers (which acts on its task:
//! retry, approve, feedback); `/v1/brief-hook`: where the caller's urgent briefs are posted.

use crate::AppState;
use crate::api::{Api, Method, NoContent};
use crate::auth::Caller;
use crate::brief_hooks::{HookError, check_hook};
use crate::error::ApiError;
use crate::routes::{Body, BriefPath, Params};
use axum::Json;
use axum::extract::State;
use rein_store::{Brief, BriefHook, Briefs};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/briefs` query.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BriefQuery {
    /// Only the briefs still waiting for a resolution.
    #[serde(default)]
    pub unresolved: bool,
    /// Only one task's (`task_` and 32 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^task_[0-9a-f]{32}$"))]
    pub task: Option<String>,
    /// At most this many (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// `GET /v1/briefs` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct BriefList {
    /// Newest first.
    pub briefs: Vec<Brief>,
    /// Unresolved briefs the caller has not opened (the inbox count).
    pub unread: usize,
}

/// `POST /v1/briefs/{id}/resolve` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveIn {
    /// One of the actions the brief offers (`retry`, `approve`, `feedback`, `acknowledge`, …).
    #[schemars(length(min = 1, max = 64))]
    pub action: String,
    /// What the person says (required for `feedback`: the next run reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20000))]
    pub comment: Option<String>,
}

/// `POST /v1/briefs/{id}/resolve` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Resolved {
    /// The brief as resolved.
    pub brief: Brief,
    /// The run `retry` started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
}

/// `PUT /v1/brief-hook` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookIn {
    /// Where urgent briefs are posted (`http://` or `https://`).
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// The HMAC-SHA256 key of the `X-Rein-Signature` header (16 to 256 characters).
    #[schemars(length(min = 16, max = 256))]
    pub secret: String,
}

/// `GET /v1/brief-hook` answer (the secret is not shown again).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct HookOut {
    /// Where urgent briefs are posted.
    pub url: String,
    /// Since when.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// `GET /v1/briefs`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<BriefQuery>,
) -> Result<Json<BriefList>, ApiError> {
    // What the document promises is checked, not clamped (the fuzz gate holds it to that).
    if let Some(t) = &q.task {
        crate::routes::check_task_id(t)?;
    }
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit {limit} is out of range (1 to 500)"
        )));
    }
    let briefs = app
        .tasks
        .briefs(&user.id, q.task.as_deref(), q.unresolved, limit)
        .await?;
    let unread = app
        .tasks
        .briefs(&user.id, None, true, 500)
        .await?
        .iter()
        .filter(|b| b.read_at.is_none())
        .count();
    Ok(Json(BriefList { briefs, unread }))
}

/// `GET /v1/briefs/{id}`: marks it read.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    BriefPath(id): BriefPath,
) -> Result<Json<Brief>, ApiError> {
    Ok(Json(app.tasks.open_brief(&user.id, &id).await?))
}

/// `POST /v1/briefs/{id}/resolve`: once (a second is a 409).
pub async fn resolve(
    State(app): State<AppState>,
    Caller(user): Caller,
    BriefPath(id): BriefPath,
    Body(b): Body<ResolveIn>,
) -> Result<Json<Resolved>, ApiError> {
    let (brief, operation_id) = app
        .tasks
        .resolve_brief(
            &user.id,
            &id,
            &b.action,
            b.comment.as_deref(),
            app.launcher.as_ref(),
        )
        .await?;
    Ok(Json(Resolved {
        brief,
        operation_id,
    }))
}

/// `GET /v1/brief-hook`.
pub async fn hook(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<HookOut>, ApiError> {
    let h = app
        .store
        .brief_hook(&user.id)
        .await?
        .ok_or_else(|| ApiError::not_found("no brief hook is set"))?;
    Ok(Json(HookOut {
        url: h.url,
        created_at: h.created_at,
    }))
}

/// `PUT /v1/brief-hook`: set or replace it.
pub async fn set_hook(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(b): Body<HookIn>,
) -> Result<Json<HookOut>, ApiError> {
    check_hook(&b.url, &b.secret, app.config.private_hooks)
        .await
        .map_err(|e| {
            let code = match e {
                HookError::Internal(_) => crate::error_code::ApiErrorCode::HookInternal,
                HookError::BadUrl(_) | HookError::BadSecret => {
                    crate::error_code::ApiErrorCode::InvalidHook
                }
            };
            ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                code,
                e.to_string(),
            )
        })?;
    let h = BriefHook {
        owner: user.id.clone(),
        url: b.url,
        secret: b.secret,
        created_at: chrono::Utc::now(),
    };
    app.store.set_brief_hook(&h).await?;
    Ok(Json(HookOut {
        url: h.url,
        created_at: h.created_at,
    }))
}

/// `DELETE /v1/brief-hook`: 204, or 404 when none was set.
pub async fn delete_hook(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<NoContent, ApiError> {
    if app.store.delete_brief_hook(&user.id).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found("no brief hook is set"))
    }
}

/// The brief routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/briefs",
            "Your briefs, newest first, and how many are unread",
            list,
        )
        .route(
            Method::Get,
            "/v1/briefs/{id}",
            "A brief (opening it marks it read)",
            show,
        )
        .route(
            Method::Post,
            "/v1/briefs/{id}/resolve",
            "Resolve a brief with an action it offers (once); retry, approve and feedback act on its task",
            resolve,
        )
        .route(
            Method::Get,
            "/v1/brief-hook",
            "Where your urgent briefs are posted",
            hook,
        )
        .route(
            Method::Put,
            "/v1/brief-hook",
            "Post your urgent briefs to a URL, signed with HMAC-SHA256",
            set_hook,
        )
        .route(
            Method::Delete,
            "/v1/brief-hook",
            "Stop posting your urgent briefs",
            delete_hook,
        )
}
