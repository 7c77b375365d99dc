//! `GET /v1/tools`: the tools your operations may be offered (this server's built-ins, MCP
//! servers and custom tools, and your own MCP servers'), for an agent editor's pickers; your
//! servers that did not answer are named with why.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use axum::Json;
use axum::extract::State;
use rein_core::tool::{ToolKind, ToolManifest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One function of a tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ToolApiOut {
    /// Its name: an agent names it `identifier/name`.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// A tool one may choose.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ToolOut {
    /// What an agent's `tools` and `allow` name.
    pub identifier: String,
    /// Where it comes from.
    pub kind: ToolKind,
    /// Its title (the identifier when it has none).
    pub title: String,
    /// What it is for.
    pub description: String,
    /// Its functions.
    pub apis: Vec<ToolApiOut>,
}

impl From<&ToolManifest> for ToolOut {
    fn from(m: &ToolManifest) -> Self {
        Self {
            identifier: m.identifier.clone(),
            kind: m.kind,
            title: if m.title.is_empty() {
                m.identifier.clone()
            } else {
                m.title.clone()
            },
            description: m.description.clone(),
            apis: m
                .apis
                .iter()
                .map(|a| ToolApiOut {
                    name: a.name.clone(),
                    description: a.description.clone(),
                })
                .collect(),
        }
    }
}

/// `GET /v1/tools` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ToolList {
    /// The tools, by identifier.
    pub tools: Vec<ToolOut>,
    /// Your MCP servers that did not answer, by name, with why (their tools are missing).
    pub unreachable: BTreeMap<String, String>,
}

/// `GET /v1/tools`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<ToolList>, ApiError> {
    let found = app.runner.driver().choosable_tools(Some(&user.id)).await?;
    Ok(Json(ToolList {
        tools: found.tools.iter().map(|m| ToolOut::from(&**m)).collect(),
        unreachable: found.unreachable,
    }))
}

/// The tool list route and its document.
pub fn api() -> Api {
    Api::new().route(
        Method::Get,
        "/v1/tools",
        "The tools your operations may be offered, for choosing",
        list,
    )
}
