//! `/v1/agents`: a user's agents (model, system role, tools, approval mode, limits); the
//! profile and its validation are `rein_operation::profile`'s.

use crate::AppState;
use crate::api::{Api, Method};
use crate::api::{NoContent, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{AgentPath, Body};
use axum::Json;
use axum::extract::State;
use chrono::Utc;
use rein_operation::AgentProfile;
use rein_operation::profile::check_name;
use rein_store::{Accounts, AgentRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An agent as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Agent {
    /// Name, unique per user.
    pub name: String,
    /// Configuration.
    pub config: AgentProfile,
    /// Counts its changes (1 when created); operations record the version they started from.
    pub version: u64,
    /// Created (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
}

/// `POST /v1/agents` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// Name: letters, digits, `-` and `_`, at most 64.
    #[schemars(pattern(rein_operation::profile::AGENT_NAME_PATTERN))]
    pub name: String,
    /// Configuration.
    #[serde(default, deserialize_with = "crate::routes::object")]
    pub config: AgentProfile,
}

impl Agent {
    /// A stored agent as the API shows it; a stored configuration that no longer reads as a
    /// profile is the error.
    pub fn of_record(r: AgentRecord) -> Result<Self, serde_json::Error> {
        Ok(Self {
            config: serde_json::from_value(r.config)?,
            version: r.version,
            name: r.name,
            created_at: r.created_at.to_rfc3339(),
            updated_at: r.updated_at.to_rfc3339(),
        })
    }
}

fn shown(r: AgentRecord) -> Result<Agent, ApiError> {
    let name = r.name.clone();
    Agent::of_record(r).map_err(|e| ApiError::internal(format!("stored agent `{name}`: {e}")))
}

fn to_value(c: &AgentProfile) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(c).map_err(|e| ApiError::internal(e.to_string()))
}

/// `GET /v1/agents`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Vec<Agent>>, ApiError> {
    let agents = app.store.list_agents(&user.id).await?;
    Ok(Json(
        agents.into_iter().map(shown).collect::<Result<_, _>>()?,
    ))
}

/// `POST /v1/agents`: 201, or 409 when the name is taken.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(new): Body<NewAgent>,
) -> Result<Reply<201, Agent>, ApiError> {
    Ok(Reply(
        create_agent(&app, &user.id, new.name, new.config).await?,
    ))
}

/// Create `owner`'s agent `name` with `config` (checked; 409 when the name is taken); what
/// `POST /v1/agents` and an agent file's import do.
pub(crate) async fn create_agent(
    app: &AppState,
    owner: &str,
    name: String,
    config: AgentProfile,
) -> Result<Agent, ApiError> {
    check_name(&name)?;
    let config = config.checked()?;
    if app.store.get_agent(owner, &name).await?.is_some() {
        return Err(ApiError::conflict(format!("agent `{name}` already exists")));
    }
    // A remote agent's card is read only for a name that is free.
    let config =
        rein_operation::a2a::card::registered(&name, config, None, app.config.private_hooks)
            .await?
            .checked()?;
    let now = Utc::now();
    let mut record = AgentRecord {
        owner: owner.to_owned(),
        name,
        config: to_value(&config)?,
        created_at: now,
        updated_at: now,
        version: 0,
    };
    record.version = app.store.put_agent(&record).await?;
    shown(record)
}

/// `GET /v1/agents/{name}/export`: the agent as a portable file.
pub async fn export(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<rein_operation::AgentArchive>, ApiError> {
    let agent = shown(agent_of(&app.store, &user.id, &name).await?)?;
    Ok(Json(
        app.runner
            .driver()
            .export_agent(Some(&user.id), &agent.name, agent.version, agent.config)
            .await?,
    ))
}

/// `POST /v1/agents/import`: an exported agent as yours (under its name: 409 when you have
/// one), with its memories; refused, naming it, when this server cannot give it its model,
/// tools, skills or knowledge bases.
pub async fn import(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(archive): Body<rein_operation::AgentArchive>,
) -> Result<Reply<201, Agent>, ApiError> {
    let driver = app.runner.driver();
    driver.check_agent_import(&archive, Some(&user.id)).await?;
    let agent = create_agent(&app, &user.id, archive.name.clone(), archive.config.clone()).await?;
    driver
        .import_agent_memories(&archive, Some(&user.id), &agent.name)
        .await?;
    Ok(Reply(agent))
}

/// `GET /v1/agents/{name}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(shown(agent_of(&app.store, &user.id, &name).await?)?))
}

/// `PUT /v1/agents/{name}`: replace the configuration.
pub async fn update(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
    Body(config): Body<AgentProfile>,
) -> Result<Json<Agent>, ApiError> {
    let mut r = agent_of(&app.store, &user.id, &name).await?;
    let before = serde_json::from_value::<AgentProfile>(r.config.clone()).ok();
    let config = rein_operation::a2a::card::registered(
        &name,
        config.checked()?,
        before.as_ref(),
        app.config.private_hooks,
    )
    .await?
    .checked()?;
    r.config = to_value(&config)?;
    r.updated_at = Utc::now();
    r.version = app.store.put_agent(&r).await?;
    Ok(Json(shown(r)?))
}

/// `DELETE /v1/agents/{name}`: 204.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
) -> Result<NoContent, ApiError> {
    if app.store.delete_agent(&user.id, &name).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::not_found(format!("no agent `{name}`")))
    }
}

/// One version of an agent, as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentVersionOut {
    /// Its number.
    pub version: u64,
    /// The configuration it had.
    pub config: AgentProfile,
    /// When it was written (RFC 3339).
    pub created_at: chrono::DateTime<Utc>,
}

/// `GET /v1/agents/{name}/versions` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentVersions {
    /// Newest first; an agent written before versions were kept has its later ones only.
    pub versions: Vec<AgentVersionOut>,
}

/// `POST /v1/agents/{name}/rollback` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackIn {
    /// The version whose configuration the agent takes again (as a new version).
    #[schemars(range(min = 1))]
    pub version: u64,
}

/// The agent `name` of `user`, or 404.
async fn agent_of(
    store: &rein_store::SqlStore,
    user: &str,
    name: &str,
) -> Result<AgentRecord, ApiError> {
    store
        .get_agent(user, name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no agent `{name}`")))
}

/// `user`'s agent `name`'s versions, newest first (404 without the agent); the route's and
/// `rein agent versions` on the database's machine.
pub async fn versions_of(
    store: &rein_store::SqlStore,
    user: &str,
    name: &str,
) -> Result<Vec<AgentVersionOut>, ApiError> {
    agent_of(store, user, name).await?;
    store
        .agent_versions(user, name)
        .await?
        .into_iter()
        .map(|v| {
            Ok(AgentVersionOut {
                version: v.version,
                config: serde_json::from_value(v.config).map_err(|e| {
                    ApiError::internal(format!("stored agent `{name}` v{}: {e}", v.version))
                })?,
                created_at: v.created_at,
            })
        })
        .collect()
}

/// `user`'s agent `name` given `version`'s configuration again, written as its next version
/// (nothing is lost: the versions after it stay listed); the route's and `rein agent rollback`
/// on the database's machine.
pub async fn roll_back(
    store: &rein_store::SqlStore,
    user: &str,
    name: &str,
    version: u64,
) -> Result<AgentRecord, ApiError> {
    let mut r = agent_of(store, user, name).await?;
    let old = store
        .agent_versions(user, name)
        .await?
        .into_iter()
        .find(|v| v.version == version)
        .ok_or_else(|| ApiError::not_found(format!("agent `{name}` has no version {version}")))?;
    // Checked again: what the rules allow may have changed since it was written.
    let config = serde_json::from_value::<AgentProfile>(old.config)
        .map_err(|e| ApiError::internal(format!("stored agent `{name}` v{version}: {e}")))?
        .checked()?;
    r.config = to_value(&config)?;
    r.updated_at = Utc::now();
    r.version = store.put_agent(&r).await?;
    Ok(r)
}

/// `GET /v1/agents/{name}/versions`.
pub async fn versions(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
) -> Result<Json<AgentVersions>, ApiError> {
    Ok(Json(AgentVersions {
        versions: versions_of(&app.store, &user.id, &name).await?,
    }))
}

/// `POST /v1/agents/{name}/rollback`: the agent takes an earlier version's configuration
/// again, written as its next version (nothing is lost: the versions after it stay listed).
pub async fn rollback(
    State(app): State<AppState>,
    Caller(user): Caller,
    AgentPath(name): AgentPath,
    Body(to): Body<RollbackIn>,
) -> Result<Json<Agent>, ApiError> {
    let r = roll_back(&app.store, &user.id, &name, to.version).await?;
    Ok(Json(shown(r)?))
}

/// The agent routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(Method::Get, "/v1/agents", "Your agents", list)
        .route(Method::Post, "/v1/agents", "Create an agent", create)
        .route(
            Method::Post,
            "/v1/agents/import",
            "Create an agent from an exported file, with its memories (refused, naming it, when this server cannot give it what it names)",
            import,
        )
        .route(
            Method::Get,
            "/v1/agents/{name}/export",
            "The agent as a portable file: its settings, the skills and knowledge bases it names, its memories",
            export,
        )
        .route(Method::Get, "/v1/agents/{name}", "One agent", show)
        .route(
            Method::Put,
            "/v1/agents/{name}",
            "Replace an agent's configuration (its version counts up)",
            update,
        )
        .route(
            Method::Delete,
            "/v1/agents/{name}",
            "Delete an agent",
            delete,
        )
        .route(
            Method::Get,
            "/v1/agents/{name}/versions",
            "An agent's versions, newest first",
            versions,
        )
        .route(
            Method::Post,
            "/v1/agents/{name}/rollback",
            "Take an earlier version's configuration again, as the next version",
            rollback,
        )
}
