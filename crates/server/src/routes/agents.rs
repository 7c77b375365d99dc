//! `/v1/agents`: a user's agents (model, system role, tools, approval mode, limits).

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::Body;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::Utc;
use rein_store::{Accounts, AgentRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How an agent works; every field optional (the server's defaults apply).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Instructions given to the model first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// Tools it may call (`identifier` or `identifier/api`); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `manual` (default), `auto-run`, `allow-list` or `headless`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// Step limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Cost limit in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_limit: Option<f64>,
    /// Token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
}

impl AgentConfig {
    /// These settings with `over`'s given ones taking precedence (a request's or the command
    /// line's over the agent's).
    pub fn merged(&self, over: &AgentConfig) -> AgentConfig {
        AgentConfig {
            model: over.model.clone().or_else(|| self.model.clone()),
            system_role: over
                .system_role
                .clone()
                .or_else(|| self.system_role.clone()),
            tools: over.tools.clone().or_else(|| self.tools.clone()),
            approval: over.approval.clone().or_else(|| self.approval.clone()),
            max_steps: over.max_steps.or(self.max_steps),
            cost_limit: over.cost_limit.or(self.cost_limit),
            token_limit: over.token_limit.or(self.token_limit),
        }
    }

    /// What an operation run with these settings starts with (system role, step limit,
    /// budget that stops at its limits, approval mode; `manual` by default). Everything else
    /// (topic, owner, trigger, ...) is the caller's.
    pub fn start_options(&self) -> Result<rein_operation::StartOptions, ApiError> {
        check_config(self)?;
        Ok(rein_operation::StartOptions {
            system: self.system_role.clone(),
            max_steps: self.max_steps,
            budget: rein_core::state::Budget {
                max_cost: self.cost_limit.map(rein_core::Usd::from_dollars),
                max_tokens: self.token_limit,
                on_exceeded: rein_core::state::BudgetPolicy::Stop,
                ..Default::default()
            },
            approval: crate::routes::operations::approval_mode(
                self.approval.as_deref().unwrap_or("manual"),
            )?,
            ..Default::default()
        })
    }
}

/// An agent as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Agent {
    /// Name, unique per user.
    pub name: String,
    /// Configuration.
    pub config: AgentConfig,
    /// Created (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
}

/// `POST /v1/agents` body.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAgent {
    /// Name: letters, digits, `-` and `_`, at most 64.
    pub name: String,
    /// Configuration.
    #[serde(default)]
    pub config: AgentConfig,
}

/// Agent names: 1-64 letters, digits, `-` or `_`.
pub fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "agent name `{name}`: use 1-64 letters, digits, `-` or `_`"
        )))
    }
}

/// Checks an agent configuration's values (its shape is checked by deserialization).
pub fn check_config(c: &AgentConfig) -> Result<(), ApiError> {
    if let Some(a) = &c.approval {
        crate::routes::operations::approval_mode(a)?;
    }
    if let Some(m) = &c.model {
        rein_model::Registry::split(m)
            .map_err(|e| ApiError::bad_request(format!("model `{m}`: {e}")))?;
    }
    if c.cost_limit.is_some_and(|v| !v.is_finite() || v < 0.0) {
        return Err(ApiError::bad_request(
            "cost_limit must be a non-negative number",
        ));
    }
    Ok(())
}

fn shown(r: AgentRecord) -> Result<Agent, ApiError> {
    Ok(Agent {
        config: serde_json::from_value(r.config)
            .map_err(|e| ApiError::internal(format!("stored agent `{}`: {e}", r.name)))?,
        name: r.name,
        created_at: r.created_at.to_rfc3339(),
        updated_at: r.updated_at.to_rfc3339(),
    })
}

fn to_value(c: &AgentConfig) -> Result<serde_json::Value, ApiError> {
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
) -> Result<(StatusCode, Json<Agent>), ApiError> {
    check_name(&new.name)?;
    check_config(&new.config)?;
    if app.store.get_agent(&user.id, &new.name).await?.is_some() {
        return Err(ApiError::conflict(format!(
            "agent `{}` already exists",
            new.name
        )));
    }
    let now = Utc::now();
    let record = AgentRecord {
        owner: user.id,
        name: new.name,
        config: to_value(&new.config)?,
        created_at: now,
        updated_at: now,
    };
    app.store.put_agent(&record).await?;
    Ok((StatusCode::CREATED, Json(shown(record)?)))
}

/// `GET /v1/agents/{name}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(name): Path<String>,
) -> Result<Json<Agent>, ApiError> {
    let r = app
        .store
        .get_agent(&user.id, &name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no agent `{name}`")))?;
    Ok(Json(shown(r)?))
}

/// `PUT /v1/agents/{name}`: replace the configuration.
pub async fn update(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(name): Path<String>,
    Body(config): Body<AgentConfig>,
) -> Result<Json<Agent>, ApiError> {
    check_config(&config)?;
    let mut r = app
        .store
        .get_agent(&user.id, &name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no agent `{name}`")))?;
    r.config = to_value(&config)?;
    r.updated_at = Utc::now();
    app.store.put_agent(&r).await?;
    Ok(Json(shown(r)?))
}

/// `DELETE /v1/agents/{name}`: 204.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if app.store.delete_agent(&user.id, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("no agent `{name}`")))
    }
}
