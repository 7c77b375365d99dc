//! `/v1/artifacts`: the files your operations' tool calls produced (an interpreter's plot, a
//! generated image, a report), listed by conversation or operation, each attached to the call
//! that made it. An artifact is only ever shown to its owner: another user's id is a 404. Its
//! bytes are served inline for the web app to show (images, CSV, text, HTML) under a policy
//! that sandboxes them ([`crate::api::Preview`]): an HTML artifact runs in an opaque origin
//! and can load nothing, so it reads no cookie and calls no API.

use crate::AppState;
use crate::api::{Api, Method, Preview};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::{ArtifactPath, Params};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use rein_store::{ArtifactRecord, Artifacts as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/artifacts` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactQuery {
    /// Only this conversation's.
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub topic: Option<String>,
    /// Only this operation's (its id).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub operation: Option<String>,
    /// At most this many (default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
}

/// `GET /v1/artifacts` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactList {
    /// Your artifacts, newest first.
    pub data: Vec<ArtifactRecord>,
    /// Whether there are more than `limit`.
    pub has_more: bool,
}

fn missing(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ApiErrorCode::NotFound,
        format!("you have no artifact {id}"),
    )
}

/// `GET /v1/artifacts`: your artifacts.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<ArtifactQuery>,
) -> Result<Json<ArtifactList>, ApiError> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request("limit is 1 to 1000"));
    }
    for (name, given) in [("topic", &q.topic), ("operation", &q.operation)] {
        if given
            .as_ref()
            .is_some_and(|v| v.is_empty() || v.len() > 200)
        {
            return Err(ApiError::bad_request(format!(
                "{name} is 1 to 200 characters"
            )));
        }
    }
    let mut data = app
        .store
        .artifacts(
            &user.id,
            q.topic.as_deref(),
            q.operation.as_deref(),
            limit + 1,
        )
        .await?;
    let has_more = data.len() > limit as usize;
    data.truncate(limit as usize);
    Ok(Json(ArtifactList { data, has_more }))
}

/// `GET /v1/artifacts/{artifact_id}`: one of your artifacts.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    ArtifactPath(id): ArtifactPath,
) -> Result<Json<ArtifactRecord>, ApiError> {
    let found = app.store.artifact(&user.id, &id).await?;
    Ok(Json(found.ok_or_else(|| missing(&id))?))
}

/// `GET /v1/artifacts/{artifact_id}/content`: one of your artifacts' bytes, sandboxed.
pub async fn content(
    State(app): State<AppState>,
    Caller(user): Caller,
    ArtifactPath(id): ArtifactPath,
) -> Result<Preview, ApiError> {
    let found = app
        .store
        .artifact_content(&user.id, &id)
        .await?
        .ok_or_else(|| missing(&id))?;
    Ok(Preview {
        media_type: found.record.media_type,
        name: found.record.name,
        bytes: found.bytes,
    })
}

/// The artifacts routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/artifacts",
            "Files your operations' tool calls produced, newest first",
            list,
        )
        .route(
            Method::Get,
            "/v1/artifacts/{artifact_id}",
            "One of your artifacts",
            show,
        )
        .route(
            Method::Get,
            "/v1/artifacts/{artifact_id}/content",
            "One of your artifacts' bytes, shown inline in a sandbox",
            content,
        )
}
