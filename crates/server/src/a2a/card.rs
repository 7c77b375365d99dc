//! Agent Cards: what an A2A client reads before it talks to an agent. The server's card at
//! `/.well-known/agent-card.json` describes the default agent (the caller's when the request
//! carries a credential, the server's otherwise); each agent a user exposes has its own at
//! `/a2a/NAME/.well-known/agent-card.json`. Skills are the agent's tools and skills.

use super::wire::VERSION;
use crate::AppState;
use crate::auth::AuthMode;
use axum::http::HeaderMap;
use rein_core::spec::OperationSpec;
use serde_json::{Value, json};

/// The base URL clients reached this server by (`https` behind a proxy that says so).
pub fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && !h.contains(['/', '\\', '@', ' ']))
        .unwrap_or("localhost");
    let scheme = if crate::signin::over_tls(headers) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

/// The card of `agent` (`None`: the default agent), which runs as `spec`, served at
/// `endpoint` on `base`.
pub async fn card(
    app: &AppState,
    owner: Option<&str>,
    agent: Option<&str>,
    spec: &OperationSpec,
    base: &str,
    endpoint: &str,
) -> Value {
    let name = agent.unwrap_or("rein");
    let about = spec
        .system_role
        .as_deref()
        .map(|s| s.chars().take(300).collect::<String>())
        .filter(|s| !s.trim().is_empty());
    let description = match (agent, about) {
        (_, Some(about)) => about,
        (Some(a), None) => format!("The rein agent `{a}`."),
        (None, None) => {
            "rein's default agent: bounded, durable operations with approvals, budgets and tools."
                .to_owned()
        }
    };
    let mut card = json!({
        "name": name,
        "description": description,
        "supportedInterfaces": [{
            "url": format!("{base}{endpoint}"),
            "protocolBinding": "JSONRPC",
            "protocolVersion": VERSION,
        }],
        "provider": {"organization": "rein", "url": base},
        "version": env!("CARGO_PKG_VERSION"),
        "documentationUrl": format!("{base}/v1/openapi.json"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": true,
            "extendedAgentCard": true,
        },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills(app, owner, spec).await,
    });
    if matches!(app.auth, AuthMode::Tokens) {
        card["securitySchemes"] = json!({
            "bearer": {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "A rein API token (`rein token create`, or Settings → Your API tokens).",
            }}
        });
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
    }
    card
}

/// The agent's skills: one per tool it is offered and per skill it admits, or one that says
/// it answers when it has neither.
async fn skills(app: &AppState, owner: Option<&str>, spec: &OperationSpec) -> Vec<Value> {
    let chosen = spec.allowed_tools.as_ref();
    let known = match app.runner.driver().choosable_tools(owner).await {
        Ok(found) => found.tools,
        Err(e) => {
            tracing::warn!(error = %e, "an agent card lists no tools: they could not be read");
            Vec::new()
        }
    };
    let mut out: Vec<Value> = known
        .iter()
        // No list: every tool the server offers.
        .filter(|m| chosen.is_none_or(|c| c.iter().any(|t| *t == m.identifier)))
        .map(|m| {
            let title = if m.title.is_empty() {
                m.identifier.clone()
            } else {
                m.title.clone()
            };
            json!({
                "id": format!("tool:{}", m.identifier),
                "name": title,
                "description": if m.description.is_empty() { format!("Uses the {} tool.", m.identifier) } else { m.description.clone() },
                "tags": ["tool", m.identifier],
            })
        })
        .collect();
    for skill in &spec.skills {
        out.push(json!({
            "id": format!("skill:{skill}"),
            "name": skill,
            "description": format!("Follows the skill `{skill}`."),
            "tags": ["skill"],
        }));
    }
    if out.is_empty() {
        out.push(json!({
            "id": "answer",
            "name": "Answer",
            "description": "Answers a request in the conversation, asking when it needs a decision.",
            "tags": ["chat"],
        }));
    }
    out
}
