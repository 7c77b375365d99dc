//! `/v1/grants`: what the caller granted ("always for this tool", made by approving a pending
//! call with `grant`), listed and revoked. A revoked grant covers nothing from the next call on.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{GrantPath, Params};
use axum::Json;
use axum::extract::State;
use rein_core::intervention::GrantScope;
use rein_store::{GrantFilter, GrantRecord, Grants};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/grants` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantQuery {
    /// Only grants of this scope.
    #[serde(default)]
    pub scope: Option<GrantScope>,
    /// Only grants for this target (an operation tree's root id, a topic id or an agent name).
    #[serde(default)]
    #[schemars(length(min = 1, max = 128))]
    pub target: Option<String>,
    /// Revoked grants too.
    #[serde(default)]
    pub revoked: bool,
}

/// `GET /v1/grants` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GrantList {
    /// Newest first.
    pub grants: Vec<GrantRecord>,
}

/// `GET /v1/grants`: the caller's grants, newest first (active ones unless `revoked`).
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<GrantQuery>,
) -> Result<Json<GrantList>, ApiError> {
    // What the document promises is checked, not ignored (the fuzz gate holds it to that).
    if let Some(t) = &q.target
        && !(1..=128).contains(&t.chars().count())
    {
        return Err(ApiError::bad_request(format!(
            "target must be 1 to 128 characters, not {}",
            t.chars().count()
        )));
    }
    let grants = app
        .store
        .list_grants(
            Some(&user.id),
            &GrantFilter {
                scope: q.scope,
                target: q.target,
                include_revoked: q.revoked,
            },
        )
        .await?;
    Ok(Json(GrantList { grants }))
}

/// `GET /v1/grants/{id}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    GrantPath(id): GrantPath,
) -> Result<Json<GrantRecord>, ApiError> {
    app.store
        .grant(Some(&user.id), &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no grant {id}")))
}

/// `DELETE /v1/grants/{id}`: revoke it (the grant as revoked; revoking twice keeps the first
/// revocation).
pub async fn revoke(
    State(app): State<AppState>,
    Caller(user): Caller,
    GrantPath(id): GrantPath,
) -> Result<Json<GrantRecord>, ApiError> {
    let grant = app
        .runner
        .driver()
        .revoke_grant(Some(&user.id), &id, Some(&user.name))
        .await?;
    Ok(Json(grant))
}

/// The grant routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/grants",
            "Your grants (\"always for this tool\"), newest first",
            list,
        )
        .route(Method::Get, "/v1/grants/{id}", "One grant", show)
        .route(
            Method::Delete,
            "/v1/grants/{id}",
            "Revoke a grant: it covers nothing from the next call on",
            revoke,
        )
}
