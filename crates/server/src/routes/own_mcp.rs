//! `/v1/settings/mcp`: the MCP servers a user defines, whose tools only their operations are
//! offered, on the origins the server's admin allows (`rein serve --user-mcp-origin`). Headers
//! go in and never come out: answers name them only (`rein_operation::own_mcp` seals them
//! with the server's secret key).

use crate::AppState;
use crate::api::{Api, Method, NoContent};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::{Body, McpServerPath};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use rein_operation::own_mcp::{Define, DefineRefusal};
use rein_store::{McpPins, OwnMcpServer, OwnMcpServers};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `PUT /v1/settings/mcp/{name}` body: the server, replacing yours of that name.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefineIn {
    /// Its Streamable HTTP endpoint, on an origin this server allows.
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
    /// Headers to send it (`Authorization`, ...): stored sealed, never shown again.
    #[serde(default)]
    #[schemars(extend("maxProperties" = rein_operation::own_mcp::MAX_HEADERS))]
    pub headers: BTreeMap<String, String>,
}

/// An MCP server you defined, as the API shows it: never the headers' values.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OwnMcpOut {
    /// Its name: its tools are offered as `NAME__tool`.
    pub name: String,
    /// Its endpoint.
    pub url: String,
    /// The headers sent to it, by name.
    pub header_names: Vec<String>,
    /// Last set.
    pub updated_at: DateTime<Utc>,
}

impl From<OwnMcpServer> for OwnMcpOut {
    fn from(s: OwnMcpServer) -> Self {
        Self {
            name: s.name,
            url: s.url,
            header_names: s.header_names,
            updated_at: s.updated_at,
        }
    }
}

/// `GET /v1/settings/mcp`: what you may define here and what you did.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct McpSettingsOut {
    /// The origins your servers may be on (empty: this server lets users define none).
    pub allowed_origins: Vec<String>,
    /// Your servers, by name.
    pub servers: Vec<OwnMcpOut>,
}

/// `PUT /v1/settings/mcp/{name}` answer: the server as stored, and the tools it listed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DefinedOut {
    /// The server.
    pub server: OwnMcpOut,
    /// The names of the tools it listed when it was checked.
    pub tools: Vec<String>,
}

impl From<DefineRefusal> for ApiError {
    fn from(e: DefineRefusal) -> Self {
        match e {
            DefineRefusal::NotServed | DefineRefusal::NameTaken(_) => {
                ApiError::conflict(e.to_string())
            }
            DefineRefusal::BadName(_) => ApiError::bad_request(e.to_string()),
            DefineRefusal::BadUrl { .. }
            | DefineRefusal::BadHeader { .. }
            | DefineRefusal::TooManyHeaders => ApiError::unprocessable(e.to_string()),
            DefineRefusal::OriginNotAllowed { .. } | DefineRefusal::Unreachable(_) => {
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    ApiErrorCode::McpUnavailable,
                    e.to_string(),
                )
            }
            DefineRefusal::Secret(e) => ApiError::internal(e.to_string()),
            DefineRefusal::Store(e) => e.into(),
        }
    }
}

/// `GET /v1/settings/mcp`: the MCP servers you defined, and where you may.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<McpSettingsOut>, ApiError> {
    let servers = app.store.own_mcp_servers(&user.id).await?;
    let allowed_origins = match &app.runner.host.own_mcp {
        Some(own) if own.serves() => own.origins().iter().map(|o| o.to_string()).collect(),
        _ => Vec::new(),
    };
    Ok(Json(McpSettingsOut {
        allowed_origins,
        servers: servers.into_iter().map(OwnMcpOut::from).collect(),
    }))
}

/// `PUT /v1/settings/mcp/{name}`: define an MCP server; it must answer first.
pub async fn put(
    State(app): State<AppState>,
    Caller(user): Caller,
    McpServerPath(name): McpServerPath,
    Body(req): Body<DefineIn>,
) -> Result<Json<DefinedOut>, ApiError> {
    let host = &app.runner.host;
    let own = host.own_mcp.as_ref().ok_or(DefineRefusal::NotServed)?;
    let driver = app.runner.driver();
    let taken = |n: &str| driver.has_tool(n);
    let (server, tools) = own
        .define(
            &*app.store,
            &user.id,
            &name,
            Define {
                url: req.url,
                headers: req.headers,
            },
            &taken,
        )
        .await?;
    tracing::info!(user = %user.name, server = %server.name, tools = tools.len(), "MCP server defined");
    Ok(Json(DefinedOut {
        server: server.into(),
        tools,
    }))
}

/// `DELETE /v1/settings/mcp/{name}`: forget an MCP server you defined.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    McpServerPath(name): McpServerPath,
) -> Result<NoContent, ApiError> {
    if app.store.delete_own_mcp_server(&user.id, &name).await? {
        if let Some(own) = &app.runner.host.own_mcp {
            own.forget(&user.id, &name);
        }
        Ok(NoContent)
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ApiErrorCode::NotFound,
            format!("you have no MCP server `{name}`"),
        ))
    }
}

/// One pinned tool of your MCP server, with the change held as a line diff.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct PinOut {
    /// The pin.
    #[serde(flatten)]
    pub pin: rein_store::McpPin,
    /// The held change as a diff of the two definitions (`-` pinned, `+` listed now); none
    /// when nothing is held.
    pub diff: Option<String>,
}

/// `GET /v1/settings/mcp/{name}/pins` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct PinsOut {
    /// Its tools pinned so far, by name.
    pub pins: Vec<PinOut>,
}

/// `POST /v1/settings/mcp/{name}/pins/approve` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveIn {
    /// The tool's name on the server.
    #[schemars(length(min = 1, max = 128))]
    pub tool: String,
    /// The hash of the change you looked at (`pins[].change.hash`): refused (409) when the
    /// server has changed the tool again since.
    #[schemars(length(min = 64, max = 64), regex(pattern = "^[0-9a-f]{64}$"))]
    pub hash: String,
}

/// `GET /v1/settings/mcp/{name}/pins`: the tools of your MCP server `name` pinned so far, and
/// the changes held (a tool whose description or parameters changed since it was pinned is not
/// offered until you approve the change).
pub async fn pins(
    State(app): State<AppState>,
    Caller(user): Caller,
    McpServerPath(name): McpServerPath,
) -> Result<Json<PinsOut>, ApiError> {
    let pins = app
        .store
        .mcp_pins(rein_store::PinOwner::User(&user.id))
        .await?
        .into_iter()
        .filter(|p| p.server == name)
        .map(|pin| PinOut {
            diff: rein_operation::mcp_pins::diff(&pin),
            pin,
        })
        .collect();
    Ok(Json(PinsOut { pins }))
}

/// `POST /v1/settings/mcp/{name}/pins/approve`: approve the held change of one tool, the one
/// you saw: operations started from now on are offered it with its new definition.
pub async fn approve_pin(
    State(app): State<AppState>,
    Caller(user): Caller,
    McpServerPath(name): McpServerPath,
    Body(req): Body<ApproveIn>,
) -> Result<Json<rein_store::McpPin>, ApiError> {
    if req.tool.is_empty() || req.tool.chars().count() > 128 {
        return Err(ApiError::bad_request("tool must be 1 to 128 characters"));
    }
    if req.hash.len() != 64
        || !req
            .hash
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(ApiError::bad_request(
            "hash must be the 64 lower-case hex digits of the change you saw",
        ));
    }
    let pin = rein_operation::mcp_pins::approve(
        &*app.store,
        rein_store::PinOwner::User(&user.id),
        &name,
        &req.tool,
        Some(&req.hash),
    )
    .await?;
    tracing::info!(user = %user.name, server = %name, tool = %req.tool, "MCP tool change approved");
    Ok(Json(pin))
}

/// The MCP server settings routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/settings/mcp",
            "The MCP servers you defined (never their headers' values) and the origins allowed",
            list,
        )
        .route(
            Method::Put,
            "/v1/settings/mcp/{name}",
            "Define an MCP server your operations are offered; it must answer its handshake first",
            put,
        )
        .route(
            Method::Delete,
            "/v1/settings/mcp/{name}",
            "Forget an MCP server you defined",
            delete,
        )
        .route(
            Method::Get,
            "/v1/settings/mcp/{name}/pins",
            "Your MCP server's tools as pinned, and the changes held until you approve them",
            pins,
        )
        .route(
            Method::Post,
            "/v1/settings/mcp/{name}/pins/approve",
            "Approve the change of a tool you saw: offered with its new definition from now on",
            approve_pin,
        )
}
