//! `/v1/memories`: what the server learnt about the caller from their conversations
//! ([`crate::memories`] extracts it with the server's system model): list it (with history),
//! show one with what it replaced, correct one, forget one (for good), and turn learning off or
//! on.

use crate::AppState;
use crate::api::{Api, Method, NoContent};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, MemoryPath, Params};
use axum::Json;
use axum::extract::State;
use rein_store::{Memories, MemoryPool, MemoryRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/memories` query.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Also the memories later ones replaced.
    #[serde(default)]
    pub history: bool,
    /// Only those private to this agent (one whose `memory` is `agent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(rein_operation::profile::AGENT_NAME_PATTERN))]
    pub agent: Option<String>,
    /// Only those the user's agents share (with `agent`: those and the agent's own).
    #[serde(default)]
    pub shared: bool,
}

/// `GET /v1/memories` answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MemoryList {
    /// Whether the server learns from your conversations.
    pub extraction: bool,
    /// Newest first.
    pub memories: Vec<MemoryRecord>,
}

/// `GET /v1/memories/{id}` answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MemoryDetail {
    /// The memory.
    pub memory: MemoryRecord,
    /// What it replaced, newest first.
    pub history: Vec<MemoryRecord>,
}

/// `PATCH /v1/memories/{id}` body.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditMemory {
    /// The corrected text (not only blanks).
    #[schemars(length(min = 1, max = 500), pattern(r"\S"))]
    pub text: String,
}

/// `PUT /v1/memories/settings` body and answer.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySettings {
    /// Learn from your conversations.
    pub extraction: bool,
}

/// `GET /v1/memories`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<MemoryList>, ApiError> {
    if let Some(agent) = q.agent.as_deref() {
        rein_operation::profile::check_name(agent)
            .map_err(|e| ApiError::bad_request(format!("agent: {e}")))?;
    }
    Ok(Json(MemoryList {
        extraction: app.store.memory_extraction(Some(&user.id)).await?,
        memories: app
            .store
            .list_memories(
                Some(&user.id),
                MemoryPool::select(q.agent.as_deref(), q.shared),
                q.history,
            )
            .await?,
    }))
}

/// `GET /v1/memories/{id}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    MemoryPath(id): MemoryPath,
) -> Result<Json<MemoryDetail>, ApiError> {
    let (memory, history) = app
        .store
        .memory(Some(&user.id), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no memory {id}")))?;
    Ok(Json(MemoryDetail { memory, history }))
}

/// `PATCH /v1/memories/{id}`.
pub async fn edit(
    State(app): State<AppState>,
    Caller(user): Caller,
    MemoryPath(id): MemoryPath,
    Body(body): Body<EditMemory>,
) -> Result<Json<MemoryDetail>, ApiError> {
    let text = rein_operation::memories::corrected_text(&body.text)
        .map_err(|e| ApiError::bad_request(format!("text: {e}")))?;
    let embedding = match app.runner.host.embedder.as_ref() {
        Some((provider, model)) => {
            let embedder = rein_operation::ProviderEmbedder::new(
                std::sync::Arc::clone(provider),
                model.clone(),
            );
            rein_tools::documents::embed_one(Some(&embedder), &text).await
        }
        None => None,
    };
    if !app
        .store
        .edit_memory(Some(&user.id), &id, &text, embedding.as_ref())
        .await?
    {
        return Err(ApiError::not_found(format!("no current memory {id}")));
    }
    show(State(app), Caller(user), MemoryPath(id)).await
}

/// `DELETE /v1/memories/{id}`.
pub async fn forget(
    State(app): State<AppState>,
    Caller(user): Caller,
    MemoryPath(id): MemoryPath,
) -> Result<NoContent, ApiError> {
    if !app.store.forget_memory(Some(&user.id), &id).await? {
        return Err(ApiError::not_found(format!("no memory {id}")));
    }
    Ok(NoContent)
}

/// `PUT /v1/memories/settings`.
pub async fn settings(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(body): Body<MemorySettings>,
) -> Result<Json<MemorySettings>, ApiError> {
    app.store
        .set_memory_extraction(Some(&user.id), body.extraction)
        .await?;
    Ok(Json(MemorySettings {
        extraction: app.store.memory_extraction(Some(&user.id)).await?,
    }))
}

/// The memory routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/memories",
            "What the server learnt about you from your conversations",
            list,
        )
        .route(
            Method::Put,
            "/v1/memories/settings",
            "Turn learning from your conversations on or off",
            settings,
        )
        .route(
            Method::Get,
            "/v1/memories/{id}",
            "A memory: where it came from and what it replaced",
            show,
        )
        .route(Method::Patch, "/v1/memories/{id}", "Correct a memory", edit)
        .route(
            Method::Delete,
            "/v1/memories/{id}",
            "Forget a memory and its history; the same fact is not learnt again",
            forget,
        )
}
