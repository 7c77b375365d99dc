//! The OpenAI Responses API over rein operations: `POST /v1/responses` starts one (`model` is
//! `agent/NAME` or `provider/model`; `input` a string or message items with text, image and
//! file parts, read as chat completions' are: `content_parts`), `instructions` add to the
//! system role, `previous_response_id` continues that response's conversation (its topic).
//! A response *is* its operation: its id is `resp_` and the operation's id without hyphens,
//! recorded like any other (`store: false` is accepted; rein keeps every operation).
//! `background: true` answers at once (`queued` or `in_progress`); `GET /v1/responses/{id}`
//! reads it, `POST /v1/responses/{id}/cancel` cancels it. Otherwise the answer comes when the
//! operation stops. The output is the operation's own messages: the model's reasoning summary
//! (when it gives one) as a `reasoning` item, each answer text as a `message` item and each
//! tool call rein ran as an `mcp_call` item (server label `rein`: the
//! server ran it; nothing is left for the client to run). An operation parked on an approval
//! or a question ends the response `incomplete`, naming the calls and how to decide them.

use crate::AppState;
use crate::api::{Api, Method, OperationDoc, Output};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::Body;
use crate::routes::content_parts::parts_of;
use crate::runner::Job;
use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use rein_core::message::Role;
use rein_core::state::Status;
use rein_core::{Message, OperationId};
use rein_operation::StartOptions;
use rein_store::{OperationRecord, ResponseRequest, Responses as _, Store, Trigger};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Response ids: `resp_` and the operation's id as 32 hex digits.
pub const RESPONSE_ID_PATTERN: &str = "^resp_[0-9a-f]{32}$";

/// `POST /v1/responses` body.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateResponse {
    /// `agent/NAME` (one of your agents) or `provider/model`.
    #[schemars(length(max = 200), pattern(r"^[^/]+/.+$"))]
    pub model: String,
    /// The user's request: text, or message items (`{"role", "content"}`; content a string or
    /// `input_text`, `input_image`, `input_file` parts). The last item is the user's.
    #[schemars(schema_with = "input_schema")]
    pub input: Value,
    /// Added to the system role.
    #[serde(default)]
    #[schemars(length(max = 100_000))]
    pub instructions: Option<String>,
    /// Continue this response's conversation.
    #[serde(default)]
    #[schemars(regex(pattern = RESPONSE_ID_PATTERN))]
    pub previous_response_id: Option<String>,
    /// Accepted; every response is kept as an operation.
    #[serde(default)]
    pub store: Option<bool>,
    /// Answer at once; read the response with `GET /v1/responses/{id}`.
    #[serde(default)]
    pub background: Option<bool>,
    /// Answer with typed events as the operation runs (`text/event-stream`).
    #[serde(default)]
    pub stream: Option<bool>,
    /// Up to 16 keys of your own, echoed back.
    #[serde(default)]
    #[schemars(extend("maxProperties" = 16))]
    pub metadata: Option<BTreeMap<String, String>>,
}

/// `input`'s schema: what the route reads (a part's fields beyond its type are checked when
/// it is read: 422 naming the part).
fn input_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let part = json!({
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"type": "string", "enum": ["input_text", "output_text", "input_image", "input_file"]}}
    });
    let item = json!({
        "type": "object",
        "required": ["role", "content"],
        "properties": {
            "type": {"type": "string", "enum": ["message"]},
            "role": {"type": "string", "enum": ["user", "assistant", "system", "developer"]},
            "content": {"oneOf": [
                {"type": "string"},
                {"type": "array", "maxItems": 64, "items": part}
            ]}
        }
    });
    schemars::json_schema!({"oneOf": [
        {"type": "string", "minLength": 1, "maxLength": 1_000_000},
        {"type": "array", "minItems": 1, "maxItems": 256, "items": item}
    ]})
}

/// A response in OpenAI's shape.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ResponseOut {
    /// `resp_` and the operation's id.
    pub id: String,
    /// Always `response`.
    pub object: String,
    /// Unix seconds.
    pub created_at: i64,
    /// `queued`, `in_progress`, `completed`, `incomplete`, `failed` or `cancelled`.
    pub status: String,
    /// The model asked for.
    pub model: String,
    /// The answer texts and the tool calls rein ran, in order.
    pub output: Vec<Value>,
    /// The answer's text (every `output_text` joined).
    pub output_text: String,
    /// The instructions given.
    pub instructions: Option<String>,
    /// The response this one continues.
    pub previous_response_id: Option<String>,
    /// Why it failed.
    pub error: Option<Value>,
    /// Why it is incomplete (`reason`, and `message` saying what waits).
    pub incomplete_details: Option<Value>,
    /// Tokens of the whole operation.
    pub usage: Option<Value>,
    /// Whether it ran in the background.
    pub background: bool,
    /// Your keys.
    pub metadata: BTreeMap<String, String>,
    /// Always true: rein runs the calls it makes.
    pub parallel_tool_calls: bool,
    /// Always `auto`.
    pub tool_choice: String,
    /// Always empty: rein's tools are the agent's.
    pub tools: Vec<Value>,
    /// The operation behind it.
    pub operation_id: String,
}

/// `{response_id}`: `resp_` and 32 hex digits.
pub struct ResponsePath(pub OperationId);

impl<S: Send + Sync> FromRequestParts<S> for ResponsePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let raw = axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|r| ApiError::bad_request(format!("path: {}", r.body_text())))?
            .0;
        response_operation(&raw).map(ResponsePath)
    }
}

impl crate::api::Input for ResponsePath {
    fn document(doc: &mut crate::api::OperationDoc, _g: &mut schemars::SchemaGenerator) {
        let name = doc.path_param().to_owned();
        doc.parameters.push(json!({
            "name": name, "in": "path", "required": true,
            "schema": {"type": "string", "pattern": RESPONSE_ID_PATTERN}
        }));
        doc.error(400, "Malformed id");
        doc.error(404, "Not found, or not yours");
    }
}

/// The operation a response id names.
fn response_operation(id: &str) -> Result<OperationId, ApiError> {
    let bad = || {
        let shown: String = id.chars().take(50).collect();
        ApiError::bad_request(format!(
            "{shown:?} is not a response id (resp_ and 32 hex digits)"
        ))
    };
    let hex = id.strip_prefix("resp_").ok_or_else(bad)?;
    if hex.len() != 32
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(bad());
    }
    hex.parse::<OperationId>().map_err(|_| bad())
}

fn response_id(id: OperationId) -> String {
    format!("resp_{}", id.as_uuid().simple())
}

/// The response of operation `record` (its messages when it has stopped).
async fn response_of(
    app: &AppState,
    record: &OperationRecord,
    asked: ResponseRequest,
) -> Result<ResponseOut, ApiError> {
    let id = record.id;
    let op = app
        .store
        .load_operation(id)
        .await?
        .ok_or_else(|| ApiError::internal(format!("operation {id} vanished")))?;
    let (status, error, incomplete) = standing(app, record).await?;
    let mut output = Vec::new();
    let mut texts = Vec::new();
    // The operation's own messages: after its prompt (the last user message).
    let start = op
        .state
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .map_or(0, |i| i + 1);
    let mine: &[std::sync::Arc<Message>] = &op.state.messages[start..];
    for m in mine {
        if m.role != Role::Assistant {
            continue;
        }
        if let Some(r) = &m.reasoning
            && !r.text.trim().is_empty()
        {
            output.push(json!({
                "type": "reasoning",
                "id": format!("rs_{}", m.id.as_uuid().simple()),
                "summary": [{"type": "summary_text", "text": r.text}],
            }));
        }
        let text = m.text_content();
        if !text.trim().is_empty() {
            output.push(json!({
                "type": "message",
                "id": format!("msg_{}", m.id.as_uuid().simple()),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
            }));
            texts.push(text);
        }
        for call in &m.tool_calls {
            let result = mine
                .iter()
                .find(|r| r.role == Role::Tool && r.tool_call_id.as_deref() == Some(&*call.id));
            let failed = result.is_some_and(|r| {
                r.tool_status
                    .is_some_and(|s| s != rein_core::message::ToolStatus::Succeeded)
            });
            let out = result.map(|r| r.text_content());
            output.push(json!({
                "type": "mcp_call",
                "id": format!("mcp_{}", call.id),
                "server_label": "rein",
                "name": call.key(),
                "arguments": call.arguments,
                "output": if failed { Value::Null } else { json!(out) },
                "error": if failed { json!(out) } else { Value::Null },
                "status": if result.is_some() { "completed" } else { "in_progress" },
            }));
        }
    }
    let total = record
        .total_tokens
        .max(record.input_tokens + record.output_tokens);
    Ok(ResponseOut {
        id: response_id(id),
        object: "response".into(),
        created_at: asked.created_at.timestamp(),
        status,
        model: asked.model,
        output_text: texts.last().cloned().unwrap_or_default(),
        output,
        instructions: asked.instructions,
        previous_response_id: asked.previous_response_id,
        error,
        incomplete_details: incomplete,
        usage: Some(json!({
            "input_tokens": record.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": record.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total,
        })),
        background: asked.background,
        metadata: asked.metadata,
        parallel_tool_calls: true,
        tool_choice: "auto".into(),
        tools: Vec::new(),
        operation_id: id.to_string(),
    })
}

/// The status of a response over its operation, with its error or why it is incomplete.
async fn standing(
    app: &AppState,
    record: &OperationRecord,
) -> Result<(String, Option<Value>, Option<Value>), ApiError> {
    let id = record.id;
    Ok(match record.status {
        Status::Queued => ("queued".into(), None, None),
        Status::Idle | Status::Running | Status::WaitingForSubAgents => {
            ("in_progress".into(), None, None)
        }
        Status::Done => match record.finish_reason {
            Some(r) if r.is_success() => ("completed".into(), None, None),
            r => (
                "incomplete".into(),
                None,
                Some(json!({
                    "reason": r.map_or_else(|| "stopped".to_owned(), |r| r.to_string()),
                    "message": record.finish_detail.clone().unwrap_or_default(),
                })),
            ),
        },
        Status::WaitingForHuman | Status::WaitingForAsyncTool => {
            let calls: Vec<String> = rein_operation::tree::pending_approvals(&*app.store, id)
                .await?
                .iter()
                .map(|p| format!("{} ({})", p.call.key(), p.call.id))
                .collect();
            let reason = if record.status == Status::WaitingForHuman {
                "approval_required"
            } else {
                "waiting_for_tool"
            };
            (
                "incomplete".into(),
                None,
                Some(json!({
                    "reason": reason,
                    "message": format!(
                        "operation {id} waits for a decision on {}: approve, reject or answer with POST /v1/operations/{id}/interventions (or `rein approve {id}`), and the operation goes on",
                        if calls.is_empty() { "its calls".to_owned() } else { calls.join(", ") }
                    ),
                    "operation_id": id.to_string(),
                })),
            )
        }
        Status::Interrupted => ("cancelled".into(), None, None),
        Status::Error => (
            "failed".into(),
            Some(json!({
                "code": "server_error",
                "message": format!("operation {id} failed: {}", record.error.clone().unwrap_or_default()),
            })),
            None,
        ),
    })
}

/// The response `id` of `user` (404 when it is not theirs or not a response).
async fn owned(
    app: &AppState,
    user: &rein_store::User,
    id: OperationId,
) -> Result<(OperationRecord, ResponseRequest), ApiError> {
    let missing = || ApiError::not_found(format!("no response {}", response_id(id)));
    let asked = app
        .store
        .response(&user.id, id)
        .await?
        .ok_or_else(missing)?;
    let record = app.store.operation(id).await?.ok_or_else(missing)?;
    Ok((record, asked))
}

/// The user message and the history before it of a request's `input`.
async fn input_of(
    app: &AppState,
    owner: &str,
    input: &Value,
    continuing: bool,
) -> Result<
    (
        String,
        Vec<rein_core::message::ContentPart>,
        Vec<Message>,
        Vec<String>,
    ),
    ApiError,
> {
    let unanswerable = |why: &str| ApiError::invalid_conversation(why);
    let items: Vec<Value> = match input {
        Value::String(s) => vec![json!({"role": "user", "content": s})],
        Value::Array(items) => items.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "input is a string or a list of items",
            ));
        }
    };
    let Some((last, earlier)) = items.split_last() else {
        return Err(ApiError::bad_request("input is empty"));
    };
    if continuing
        && earlier.iter().any(|i| {
            i.get("role").and_then(Value::as_str) != Some("system")
                && i.get("role").and_then(Value::as_str) != Some("developer")
        })
    {
        return Err(unanswerable(
            "with previous_response_id, input is the new user message (and instructions): the conversation so far is the previous response's",
        ));
    }
    let role = |i: &Value| -> Result<String, ApiError> {
        if let Some(kind) = i.get("type").and_then(Value::as_str)
            && kind != "message"
        {
            return Err(ApiError::bad_request(format!(
                "input item of type `{kind}`: rein reads message items"
            )));
        }
        match i.get("role").and_then(Value::as_str) {
            Some(r @ ("user" | "assistant" | "system" | "developer")) => Ok(r.to_owned()),
            _ => Err(ApiError::bad_request(
                "an input item's role is user, assistant, system or developer",
            )),
        }
    };
    if role(last)? != "user" {
        return Err(unanswerable("the last input item must be the user's"));
    }
    let mut turns = Vec::with_capacity(earlier.len());
    for item in earlier {
        let role = role(item)?;
        let content = item.get("content").unwrap_or(&Value::Null);
        turns.push((role, parts_of(&*app.store, owner, content).await?));
    }
    let (history, instructions) = crate::routes::content_parts::earlier(turns);
    let last = parts_of(
        &*app.store,
        owner,
        last.get("content").unwrap_or(&Value::Null),
    )
    .await?;
    if last.text.trim().is_empty() {
        return Err(unanswerable("the last input item has no text"));
    }
    Ok((last.text, last.attached, history, instructions))
}

type KeptAlive = axum::response::sse::KeepAliveStream<crate::routes::response_events::Events>;

/// A response, or (`stream: true`) its typed events.
pub enum ResponseReply {
    /// The response.
    Whole(Box<ResponseOut>),
    /// Its events.
    Events(Sse<KeptAlive>),
}

impl IntoResponse for ResponseReply {
    fn into_response(self) -> Response {
        match self {
            ResponseReply::Whole(r) => Json(*r).into_response(),
            ResponseReply::Events(s) => s.into_response(),
        }
    }
}

impl Output for ResponseReply {
    fn document(doc: &mut OperationDoc, g: &mut schemars::SchemaGenerator) {
        let whole = crate::api::schema_of::<ResponseOut>(g);
        doc.success = Some((
            200,
            json!({
                "description": "The response, or with `stream: true` its typed events \
                    (`response.created` … `response.completed`, each with `sequence_number`)",
                "content": {
                    "application/json": {"schema": whole},
                    "text/event-stream": crate::api::event_stream("")["content"]["text/event-stream"].clone()
                }
            }),
        ));
    }
}

/// `POST /v1/responses`.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(req): Body<CreateResponse>,
) -> Result<ResponseReply, ApiError> {
    let topic = match &req.previous_response_id {
        Some(prev) => {
            let (record, _) = owned(&app, &user, response_operation(prev)?).await?;
            Some(record.topic_id)
        }
        None => None,
    };
    // The schema says what `input` holds; what a part lacks beyond it is unprocessable.
    let (prompt, attachments, history, mut instructions) =
        input_of(&app, &user.id, &req.input, topic.is_some())
            .await
            .map_err(crate::routes::content_parts::unprocessable)?;
    if let Some(i) = &req.instructions {
        instructions.insert(0, i.clone());
    }
    // The agent's approval mode holds: a call that needs a decision parks the operation, and
    // the response says so (incomplete) with how to decide it.
    let spec =
        crate::routes::openai::spec_for(&app, &user, Some(&req.model), None, instructions).await?;
    let streamed = req.stream == Some(true);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = if streamed {
        app.runner
            .driver_with(Some(std::sync::Arc::new(crate::routes::openai::ToRequest(
                tx,
            ))))
    } else {
        app.runner.driver()
    };
    // What the request asked is kept with its operation, in the transaction that creates it.
    let asked = ResponseRequest {
        // `begin` names the new operation here.
        operation_id: rein_core::OperationId::new(),
        model: req.model.clone(),
        instructions: req.instructions.clone(),
        previous_response_id: req.previous_response_id.clone(),
        background: req.background == Some(true),
        metadata: req.metadata.clone().unwrap_or_default(),
        created_at: chrono::Utc::now(),
    };
    let opts = StartOptions {
        spec,
        history,
        topic_id: topic,
        trigger: Some(Trigger::Api),
        admission: Some(app.runner.admission()),
        attachments,
        response: Some(asked.clone()),
        ..Default::default()
    };
    let begun = driver.begin(&prompt, &opts).await?;
    let id = begun.id;
    let asked = ResponseRequest {
        operation_id: id,
        ..asked
    };
    let record = move |app: AppState| async move {
        app.store
            .operation(id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("operation {id} vanished")))
    };
    // The response as it begins, read before its run starts: read after, a busy machine could
    // show items the stream is about to add (a client then sees each twice).
    let start = if streamed {
        Some(
            serde_json::to_value(
                response_of(&app, &record(app.clone()).await?, asked.clone()).await?,
            )
            .map_err(|e| ApiError::internal(e.to_string()))?,
        )
    } else {
        None
    };
    let ended = if begun.queued_behind.is_none() {
        Some(
            app.runner
                .spawn(id, user.id.clone(), driver, Job::Run)
                .await?,
        )
    } else {
        None
    };
    if let Some(start) = start {
        let end =
            move |app: AppState| -> futures::future::BoxFuture<'static, Result<Value, ApiError>> {
                Box::pin(async move {
                    let r = record(app.clone()).await?;
                    serde_json::to_value(response_of(&app, &r, asked).await?)
                        .map_err(|e| ApiError::internal(e.to_string()))
                })
            };
        let events = crate::routes::response_events::stream(app.clone(), id, start, rx, ended, end);
        let keep_alive = KeepAlive::new().interval(app.config.heartbeat).text("");
        return Ok(ResponseReply::Events(
            Sse::new(events).keep_alive(keep_alive),
        ));
    }
    if !asked.background
        && let Some(ended) = ended
    {
        ended.wait().await;
    }
    let record = record(app.clone()).await?;
    Ok(ResponseReply::Whole(Box::new(
        response_of(&app, &record, asked).await?,
    )))
}

/// `GET /v1/responses/{response_id}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    ResponsePath(id): ResponsePath,
) -> Result<Json<ResponseOut>, ApiError> {
    let (record, asked) = owned(&app, &user, id).await?;
    Ok(Json(response_of(&app, &record, asked).await?))
}

/// `POST /v1/responses/{response_id}/cancel`: cancel a response still running (a background
/// one); a finished one is answered as it is.
pub async fn cancel(
    State(app): State<AppState>,
    Caller(user): Caller,
    ResponsePath(id): ResponsePath,
) -> Result<Json<ResponseOut>, ApiError> {
    let (record, asked) = owned(&app, &user, id).await?;
    let record = if record.status.is_terminal() {
        record
    } else {
        app.runner.driver().cancel(id).await?;
        app.store
            .operation(id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("operation {id} vanished")))?
    };
    Ok(Json(response_of(&app, &record, asked).await?))
}

/// The Responses API routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/responses",
            "OpenAI Responses over a rein operation (model: agent/NAME or provider/model)",
            create,
        )
        .route(
            Method::Get,
            "/v1/responses/{response_id}",
            "A response (its operation) as it stands",
            show,
        )
        .route(
            Method::Post,
            "/v1/responses/{response_id}/cancel",
            "Cancel a response that still runs",
            cancel,
        )
}
