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
use rein_store::{Accounts, Store, TopicRecord};

/// `GET /v1/topics`: newest first.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Vec<TopicRecord>>, ApiError> {
    Ok(Json(app.store.list_topics(&user.id, 200).await?))
}

/// `GET /v1/topics/{id}/messages`: every message, oldest first, with parent ids.
pub async fn messages(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
) -> Result<Json<Vec<Message>>, ApiError> {
    match app.store.topic_owner(&id).await? {
        Some(Some(owner)) if owner == user.id => {}
        _ => return Err(ApiError::not_found(format!("no topic {id}"))),
    }
    Ok(Json(app.store.topic_messages(&id).await?))
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
}
