//! `/v1/groups`: a user's groups (agents that talk in rounds under a supervisor); run one with
//! `POST /v1/operations {"group": NAME, ...}`. The settings and their validation are
//! `rein_operation::group`'s; a group can only name agents the user has.

use crate::AppState;
use crate::api::{Api, Method};
use crate::api::{NoContent, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{AgentPath, Body};
use axum::Json;
use axum::extract::State;
use chrono::Utc;
use rein_operation::GroupProfile;
use rein_operation::profile::check_name;
use rein_store::{Accounts, GroupRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A group as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Group {
    /// Name, unique per user.
    pub name: String,
    /// Members, policy, rounds, supervisor.
    pub config: GroupProfile,
    /// Counts its changes (1 when created).
    pub version: u64,
    /// Last change (RFC 3339).
    pub updated_at: String,
}

/// `POST /v1/groups` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGroup {
    /// Name: letters, digits, `-` and `_`, at most 64.
    #[schemars(pattern(rein_operation::profile::AGENT_NAME_PATTERN))]
    pub name: String,
    /// Members (existing agents of yours), policy, rounds, supervisor.
    pub config: GroupProfile,
}

fn shown(r: GroupRecord) -> Result<Group, ApiError> {
    Ok(Group {
        config: serde_json::from_value(r.config)
            .map_err(|e| ApiError::internal(format!("stored group `{}`: {e}", r.name)))?,
        version: r.version,
        name: r.name,
        updated_at: r.updated_at.to_rfc3339(),
    })
}

/// Valid settings whose members are all the caller's agents (422 `agent_missing` otherwise).
async fn checked(
    app: &AppState,
    owner: &str,
    g: &GroupProfile,
) -> Result<serde_json::Value, ApiError> {
    g.validate()?;
    for m in &g.members {
        if app.store.get_agent(owner, m).await?.is_none() {
            return Err(rein_operation::SpecError::AgentMissing(m.clone()).into());
        }
    }
    serde_json::to_value(g).map_err(|e| ApiError::internal(e.to_string()))
}

async fn stored(app: &AppState, owner: &str, name: &str) -> Result<GroupRecord, ApiError> {
    app.store
        .get_group(owner, name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no group `{name}`")))
}

/// `GET /v1/groups`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Vec<Group>>, ApiError> {
    let groups = app.store.list_groups(&user.id).await?;
    Ok(Json(
        groups.into_iter().map(shown).collect::<Result<_, _>>()?,
    ))
}

/// `POST /v1/groups`: 201, 409 when the name is taken, 422 when a member is not an agent.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(new): Body<NewGroup>,
) -> Result<Reply<201, Group>, ApiError> {
    check_name(&new.name)?;
    let config = checked(&app, &user.id, &new.config).await?;
    if app.store.get_group(&user.id, &new.name).await?.is_some() {
        return Err(ApiError::conflict(format!(
            "group `{}` already exists",
            new.name
        )));
    }
    let now = Utc::now();
    let mut record = GroupRecord {
        owner: user.id,
        name: new.name,
        config,
        version: 0,
        created_at: now,
        updated_at: now,
    };
    record.version = app.store.put_group(&record).await?;
    Ok(Reply(shown(record)?))
}

/// `GET /v1/groups/{name}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<Group>, ApiError> {
    Ok(Json(shown(stored(&app, &user.id, &name).await?)?))
}

/// `PUT /v1/groups/{name}`: replace the settings.
pub async fn update(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
    Body(config): Body<GroupProfile>,
) -> Result<Json<Group>, ApiError> {
    let value = checked(&app, &user.id, &config).await?;
    let mut r = stored(&app, &user.id, &name).await?;
    r.config = value;
    r.updated_at = Utc::now();
    r.version = app.store.put_group(&r).await?;
    Ok(Json(shown(r)?))
}

/// `DELETE /v1/groups/{name}`: 204 (its past runs stay).
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
) -> Result<NoContent, ApiError> {
    if app.store.delete_group(&user.id, &name).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found(format!("no group `{name}`")))
    }
}

/// The group routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(Method::Get, "/v1/groups", "Your groups", list)
        .route(
            Method::Post,
            "/v1/groups",
            "Create a group of your agents",
            create,
        )
        .route(Method::Get, "/v1/groups/{name}", "One group", show)
        .route(
            Method::Put,
            "/v1/groups/{name}",
            "Replace a group's settings",
            update,
        )
        .route(
            Method::Delete,
            "/v1/groups/{name}",
            "Delete a group",
            delete,
        )
}
