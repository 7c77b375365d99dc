//! `/v1/topics`: a user's conversations (created, listed and searched, renamed, deleted with
//! their operations' records kept or removed), their message trees with the active branch, and
//! the threads of their sub-agents. Editing a message or regenerating an answer is
//! `POST /v1/operations` with `edit` or `regenerate`: each starts a sibling branch.

use crate::AppState;
use crate::api::{Api, Method, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, Params, TopicPath};
use axum::Json;
use axum::extract::State;
use rein_core::{Message, MessageId};
use rein_operation::topic::TopicTree;
use rein_store::{
    DeletedTopic, NewTopic, OperationRecord, OperationRecords, Store, Thread, TitleSource,
    TopicFilter, TopicRecord, Topics,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a message id looks like in a body: a UUID.
pub(crate) const MESSAGE_ID_PATTERN: &str = crate::routes::UUID_PATTERN;

/// A message id from a body field named `field`; anything else is a 400 naming it.
pub(crate) fn message_id(field: &str, s: &str) -> Result<MessageId, ApiError> {
    let parsed = if crate::routes::hyphenated_uuid(s) {
        s.parse::<MessageId>().ok()
    } else {
        None
    };
    parsed.ok_or_else(|| {
        let shown: String = s.chars().take(40).collect();
        ApiError::bad_request(format!("{field}: {shown:?} is not a message id (a UUID)"))
    })
}

/// `GET /v1/topics` query.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicQuery {
    /// Only topics whose title or messages contain this text (case-insensitive for ASCII).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub search: Option<String>,
    /// At most this many, newest first (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// The next page: only topics after this one of yours (the last of the page before);
    /// 404 when it is not one of yours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub before: Option<String>,
}

/// `POST /v1/topics` body.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopicIn {
    /// Its id (`topic_` and a new UUID when absent); 409 when taken.
    #[serde(default)]
    #[schemars(pattern(rein_operation::TOPIC_ID_PATTERN))]
    pub id: Option<String>,
    /// A title (otherwise the start of its first message, or what the title model proposes).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200), pattern(r"\S"))]
    pub title: Option<String>,
    /// The agent of yours it is for (422 `agent_missing` when you have none by that name).
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub agent: Option<String>,
}

/// `PATCH /v1/topics/{id}` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameIn {
    /// The new title; a title model never replaces it.
    #[schemars(length(min = 1, max = 200), pattern(r"\S"))]
    pub title: String,
}

/// `DELETE /v1/topics/{id}` query.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// `keep` (default): the operations that ran in it keep their records (status, cost,
    /// steps and events, which hold the text the model streamed); `delete`: those go too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations: Option<OperationRecords>,
}

/// `PUT /v1/topics/{id}/active` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActiveIn {
    /// Show the branch through this message (usually one of a message's `alternatives`);
    /// the newest message under it ends the active path.
    #[schemars(regex(pattern = MESSAGE_ID_PATTERN))]
    pub message: String,
}

/// `GET /v1/topics`: newest first, optionally only those matching `search`, a page at a time
/// (`limit`, then `before` the last one listed).
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<TopicQuery>,
) -> Result<Json<Vec<TopicRecord>>, ApiError> {
    if q.search.as_deref().is_some_and(str::is_empty) {
        return Err(ApiError::bad_request("search is empty"));
    }
    if let Some(l) = q.limit
        && !(1..=500).contains(&l)
    {
        return Err(ApiError::bad_request(format!("limit {l}: use 1 to 500")));
    }
    if q.search.as_ref().is_some_and(|s| s.chars().count() > 200) {
        return Err(ApiError::bad_request(
            "search is longer than 200 characters",
        ));
    }
    if let Some(before) = &q.before
        && app.store.topic_owner(before).await? != Some(Some(user.id.clone()))
    {
        // Another user's conversation is not found, like every id that is not yours.
        return Err(ApiError::not_found(format!(
            "before {before:?}: no conversation of yours"
        )));
    }
    let filter = TopicFilter {
        owner: Some(user.id),
        search: q.search,
        limit: q.limit.unwrap_or(200),
        before: q.before,
    };
    Ok(Json(app.store.list_topics(&filter).await?))
}

/// `POST /v1/topics`: an empty conversation to start operations in.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(req): Body<TopicIn>,
) -> Result<Reply<201, TopicRecord>, ApiError> {
    let id = match req.id {
        Some(id) => {
            rein_operation::check_topic_id(&id)?;
            id
        }
        None => rein_store::new_topic_id(),
    };
    if let Some(agent) = &req.agent
        && !(1..=64).contains(&agent.chars().count())
    {
        return Err(ApiError::bad_request("agent: use 1 to 64 characters"));
    }
    if let Some(agent) = &req.agent
        && rein_operation::stored_agent(&*app.store, &user.id, agent)
            .await?
            .is_none()
    {
        return Err(rein_operation::SpecError::AgentMissing(agent.clone()).into());
    }
    let title = req.title.as_deref().map(title_of).transpose()?;
    let topic = app
        .store
        .create_topic(&NewTopic {
            id,
            owner: Some(user.id),
            agent: req.agent,
            title,
        })
        .await?;
    Ok(Reply(topic))
}

/// A title as given, without the white space around it; a blank one (by the document's
/// `\S` pattern) is a 400.
fn title_of(given: &str) -> Result<String, ApiError> {
    if given.chars().count() > 200 {
        return Err(ApiError::bad_request("title is longer than 200 characters"));
    }
    if crate::routes::says_something(given) {
        Ok(crate::routes::ecma_trim(given).to_owned())
    } else {
        Err(ApiError::bad_request("title is blank"))
    }
}

/// Refuses a topic that is not the caller's (as if it did not exist).
async fn owned(app: &AppState, user: &str, id: &str) -> Result<(), ApiError> {
    match app.store.topic_owner(id).await? {
        Some(Some(owner)) if owner == user => Ok(()),
        _ => Err(ApiError::not_found(format!("no topic {id}"))),
    }
}

/// `PATCH /v1/topics/{id}`: rename.
pub async fn rename(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
    Body(req): Body<RenameIn>,
) -> Result<Json<TopicRecord>, ApiError> {
    owned(&app, &user.id, &id).await?;
    let title = title_of(&req.title)?;
    app.store
        .set_topic_title(&id, &title, TitleSource::User)
        .await?;
    let topic = app.store.topic(&id).await?;
    topic
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no topic {id}")))
}

/// `DELETE /v1/topics/{id}`: the conversation and its threads go; the operations' records are
/// kept or deleted as asked; 409 while an operation in it still runs or waits.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
    Params(q): Params<DeleteQuery>,
) -> Result<Json<DeletedTopic>, ApiError> {
    owned(&app, &user.id, &id).await?;
    let records = q.operations.unwrap_or_default();
    app.store
        .delete_topic(&id, records)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no topic {id}")))
}

/// `GET /v1/topics/{id}/tree`: every message with its parent, the active path and the
/// messages on it that have alternatives.
pub async fn tree(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
) -> Result<Json<TopicTree>, ApiError> {
    owned(&app, &user.id, &id).await?;
    rein_operation::topic::tree(&*app.store, &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no topic {id}")))
}

/// `PUT /v1/topics/{id}/active`: show the branch through a message; answers the tree.
pub async fn activate(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(id): TopicPath,
    Body(req): Body<ActiveIn>,
) -> Result<Json<TopicTree>, ApiError> {
    owned(&app, &user.id, &id).await?;
    let message = message_id("message", &req.message)?;
    if !app.store.set_active_message(&id, message).await? {
        // Well-formed, naming a message the conversation does not have.
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            crate::error_code::ApiErrorCode::MessageMissing,
            format!("topic {id} has no message {message}"),
        ));
    }
    tree(State(app), Caller(user), TopicPath(id)).await
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
            "Your conversations, newest first; `search` finds them by title and content",
            list,
        )
        .route(
            Method::Post,
            "/v1/topics",
            "Create an empty conversation",
            create,
        )
        .route(
            Method::Patch,
            "/v1/topics/{id}",
            "Rename a conversation",
            rename,
        )
        .route(
            Method::Delete,
            "/v1/topics/{id}",
            "Delete a conversation (its operations' records kept unless `operations=delete`)",
            delete,
        )
        .route(
            Method::Get,
            "/v1/topics/{id}/tree",
            "A conversation's message tree, active path and branch points",
            tree,
        )
        .route(
            Method::Put,
            "/v1/topics/{id}/active",
            "Show the branch through a message",
            activate,
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
