//! `/v1/topics`: a user's conversations and their message trees (every message keeps its
//! parent id, so edits and retries show as branches).

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::TopicPath;
use axum::Json;
use axum::extract::State;
use rein_core::Message;
use rein_store::{Accounts, OperationRecord, Store, Thread, TopicRecord};
use schemars::JsonSchema;
use serde::Serialize;

/// `GET /v1/topics`: newest first.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Vec<TopicRecord>>, ApiError> {
    Ok(Json(app.store.list_topics(&user.id, 200).await?))
}

/// Refuses a topic that is not the caller's (as if it did not exist).
async fn owned(app: &AppState, user: &str, id: &str) -> Result<(), ApiError> {
    match app.store.topic_owner(id).await? {
        Some(Some(owner)) if owner == user => Ok(()),
        _ => Err(ApiError::not_found(format!("no topic {id}"))),
    }
}

/// `GET /v1/topics/{id}/messages`: the conversation's own messages (not its sub-agents'
/// threads), oldest first, with parent ids.
pub async fn messages(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
) -> Result<Json<Vec<Message>>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(app.store.topic_messages(&id).await?))
}

/// One sub-agent's thread: where it hangs, who ran it, how it went, what it said.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ThreadView {
    /// The thread (its id is the sub-agent's operation id).
    pub thread: Thread,
    /// The sub-agent's operation (status, cost, finish).
    pub operation: Option<OperationRecord>,
    /// Its messages, oldest first.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub messages: Vec<Message>,
}

/// `GET /v1/topics/{id}/threads`: the threads of the conversation's sub-agents, oldest first,
/// each hanging from the tool message that delegated its task.
pub async fn threads(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
) -> Result<Json<Vec<ThreadView>>, ApiError> {
    owned(&app, &user.id, &id).await?;
    let mut out = Vec::new();
    for thread in app.store.threads(&id).await? {
        let operation = match thread.operation_id.parse() {
            Ok(op) => app.store.operation(op).await?,
            Err(_) => None,
        };
        let messages = app.store.thread_messages(&thread.id).await?;
        out.push(ThreadView {
            thread,
            operation,
            messages,
        });
    }
    Ok(Json(out))
}

/// The topic routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/topics",
            "Your conversations, newest first",
            list,
        )
        .route(
            Method::Get,
            "/v1/topics/{id}/messages",
            "A conversation's messages with parent ids (branches)",
            messages,
        )
        .route(
            Method::Get,
            "/v1/topics/{id}/threads",
            "The threads of a conversation's sub-agents, with their messages and operations",
            threads,
        )
}
