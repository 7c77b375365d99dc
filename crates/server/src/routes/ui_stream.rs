//! The AI SDK's UI message stream (`useChat` with its `DefaultChatTransport`): `POST
//! /v1/ui/chat` takes the transport's body (`id`: the chat, a rein conversation (topic) id;
//! `messages`: UI messages, the last the user's with `text` and `file` parts; `agent`, `model`
//! and `attachments` (file ids) beside them) and answers with the stream (header
//! `x-vercel-ai-ui-message-stream: v1`, each `data:` one chunk, `[DONE]` last): `start` (the
//! message id is the operation's), `start-step`/`finish-step`, `text-*`, `reasoning-*`, each
//! tool call rein runs as `tool-input-start`, `tool-input-available` and
//! `tool-output-available` (or `tool-output-error`), marked `dynamic` and `providerExecuted`
//! (the server ran it), the plan as `data-rein-plan`, sub-agents as `data-rein-sub-agent`, and
//! at the end `data-rein-usage` (tokens and cost) and `finish`. A parked operation ends the
//! stream with a `tool-approval-request` per waiting call it showed and `data-rein-approval`
//! naming them all; the next request's assistant message with those parts
//! `approval-responded` decides them (what `addToolApprovalResponse` sends) and the stream
//! goes on. A failure is an `error` chunk, a cancellation `abort`.
//!
//! A client that disconnects only stops reading: `GET /v1/ui/chat/{chat_id}/stream` replays
//! the run under way from its start (the transport's `reconnectToStream`, whose default treats
//! a resumed stream as a replay of the message: the chunks replace what it had), `?after=N`
//! sends only what follows event N of the operation's log, and `204` says nothing runs. `POST
//! /v1/ui/chat/{chat_id}/stop` cancels the run.

use crate::AppState;
use crate::api::{Api, Method, OperationDoc, Output};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::beats::{Beat, Beats};
use crate::routes::content_parts::{earlier, parts_of, unprocessable};
use crate::routes::follow::follow;
use crate::routes::front_turn::{
    Answering, Asked, Said, Turn, holder, own_topic, resolved, take, waiting, with_uploads,
};
use crate::routes::operations::{Accepted, DecisionIn, DecisionKind};
use crate::routes::{Body, Params, TopicPath};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use rein_core::message::ToolStatus;
use rein_core::state::Status;
use rein_store::Store as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::convert::Infallible;
use tokio::sync::mpsc;

/// The transport's request body; fields rein does not read are accepted.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ChatRequest {
    /// The chat: a rein conversation (topic) id of yours, or a new one.
    #[schemars(regex(pattern = rein_operation::TOPIC_ID_PATTERN))]
    pub id: String,
    /// The chat's UI messages; the last is the user's new message, or the agent's message
    /// whose tool approvals were answered.
    #[schemars(length(min = 1))]
    #[serde(deserialize_with = "crate::routes::objects")]
    pub messages: Vec<UiMessage>,
    /// `submit-message` (`regenerate-message` is refused: send the message again).
    #[serde(default)]
    pub trigger: Option<String>,
    /// `agent`, `model` and `attachments`, beside the messages.
    #[serde(flatten)]
    pub answering: Answering,
}

/// A UI message.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct UiMessage {
    /// The client's id.
    #[serde(default)]
    pub id: Option<String>,
    /// `user`, `assistant` or `system`.
    pub role: UiRole,
    /// Its parts: `text`, `file` (`mediaType`, `url`: a `data:` URL or an image's https URL,
    /// `filename`), and the agent's parts (tool parts carry approval answers).
    pub parts: Vec<Value>,
}

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UiRole {
    /// The person.
    User,
    /// The agent.
    Assistant,
    /// Instructions.
    System,
}

/// `GET /v1/ui/chat/{chat_id}/stream` query.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeQuery {
    /// Send only what follows this event of the operation's log (default: replay the run).
    #[serde(default)]
    #[schemars(range(max = 9_223_372_036_854_775_807u64))]
    pub after: Option<u64>,
}

/// The stream (`None`: nothing runs, `204`).
pub struct UiStream(Option<Response>);

impl IntoResponse for UiStream {
    fn into_response(self) -> Response {
        self.0
            .unwrap_or_else(|| StatusCode::NO_CONTENT.into_response())
    }
}

/// A resumed stream, or `204` when the chat runs nothing.
pub struct Resumed(UiStream);

impl IntoResponse for Resumed {
    fn into_response(self) -> Response {
        self.0.into_response()
    }
}

impl Output for Resumed {
    fn document(doc: &mut OperationDoc, g: &mut schemars::SchemaGenerator) {
        UiStream::document(doc, g);
        doc.also
            .push((204, json!({"description": "The chat runs nothing"})));
    }
}

impl Output for UiStream {
    fn document(doc: &mut OperationDoc, _g: &mut schemars::SchemaGenerator) {
        doc.success = Some((
            200,
            crate::api::event_stream(
                "The AI SDK's UI message stream (`x-vercel-ai-ui-message-stream: v1`): each `data:` one chunk, `[DONE]` last",
            ),
        ));
    }
}

/// A UI message's parts as the OpenAI-style content `parts_of` reads: its text and files.
fn content_of(parts: &[Value]) -> Result<Value, ApiError> {
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        let bad = |why: &str| ApiError::invalid_conversation(format!("part {i} ({kind}): {why}"));
        match kind {
            "text" => out.push(
                json!({"type": "text", "text": part.get("text").cloned().unwrap_or_default()}),
            ),
            "file" => {
                let url = part
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("no `url`"))?;
                let media = part
                    .get("mediaType")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if media.starts_with("image/") {
                    out.push(json!({"type": "image_url", "image_url": {"url": url}}));
                } else if url.starts_with("data:") {
                    let name = part
                        .get("filename")
                        .and_then(Value::as_str)
                        .unwrap_or("file");
                    out.push(json!({"type": "file", "file": {"file_data": url, "filename": name}}));
                } else {
                    return Err(bad(
                        "a file that is not an image is sent as a data: URL (or uploaded and named in `attachments`)",
                    ));
                }
            }
            // What the agent said, reasoning, steps and data parts: rein keeps its own record.
            _ => {}
        }
    }
    Ok(Value::Array(out))
}

/// The approval answers of an agent's message (tool parts `approval-responded`).
fn decisions_of(parts: &[Value]) -> Vec<DecisionIn> {
    parts
        .iter()
        .filter(|p| p.get("state").and_then(Value::as_str) == Some("approval-responded"))
        .filter_map(|p| {
            let approval = p.get("approval")?;
            let id = approval.get("id")?.as_str()?;
            let approved = approval.get("approved")?.as_bool()?;
            Some(DecisionIn {
                tool_call_id: id.to_owned(),
                decision: if approved {
                    DecisionKind::Approve
                } else {
                    DecisionKind::Reject
                },
                reason: approval
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                halt: false,
                text: None,
                option: None,
                grant: None,
            })
        })
        .collect()
}

/// What the request asks.
async fn asked_of(
    app: &AppState,
    user: &rein_store::User,
    req: &ChatRequest,
) -> Result<Asked, ApiError> {
    req.answering.check()?;
    if req.trigger.as_deref() == Some("regenerate-message") {
        return Err(ApiError::invalid_conversation(
            "regenerate-message is not supported here: send the message again",
        ));
    }
    let Some((last, before)) = req.messages.split_last() else {
        return Err(ApiError::invalid_conversation("messages is empty"));
    };
    if last.role == UiRole::Assistant {
        let decisions = decisions_of(&last.parts);
        if decisions.is_empty() {
            return Err(ApiError::invalid_conversation(
                "the last message is the user's, or the agent's with answered tool approvals",
            ));
        }
        return Ok(Asked::Decide(decisions));
    }
    if last.role != UiRole::User {
        return Err(ApiError::invalid_conversation(
            "the last message must be the user's",
        ));
    }
    let said = parts_of(&*app.store, &user.id, &content_of(&last.parts)?)
        .await
        .map_err(unprocessable)?;
    if said.text.trim().is_empty() {
        return Err(ApiError::invalid_conversation(
            "the last message has no text",
        ));
    }
    let mut turns = Vec::new();
    for m in before {
        let role = match m.role {
            UiRole::User => "user",
            UiRole::Assistant => "assistant",
            UiRole::System => "system",
        };
        let parts = parts_of(&*app.store, &user.id, &content_of(&m.parts)?)
            .await
            .map_err(unprocessable)?;
        turns.push((role, parts));
    }
    let (history, instructions) = earlier(turns);
    let attachments =
        with_uploads(app, &user.id, said.attached, &req.answering.attachments).await?;
    let model = req.answering.answerer()?;
    Ok(Asked::Say(Said {
        prompt: said.text,
        attachments,
        history,
        instructions,
        model,
    }))
}

/// `POST /v1/ui/chat`.
pub async fn chat(
    State(app): State<AppState>,
    Caller(user): Caller,
    headers: HeaderMap,
    Body(req): Body<ChatRequest>,
) -> Result<UiStream, ApiError> {
    let asked = asked_of(&app, &user, &req).await?;
    let turn = take(&app, &user, &req.id, asked)
        .await?
        .ok_or_else(|| ApiError::internal("a request that says something has a run"))?;
    let credential = crate::auth::credential(&app, &headers);
    Ok(stream(&app, turn, credential))
}

/// `GET /v1/ui/chat/{chat_id}/stream`.
pub async fn resume(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(chat): TopicPath,
    headers: HeaderMap,
    Params(q): Params<ResumeQuery>,
) -> Result<Resumed, ApiError> {
    if q.after.is_some_and(|a| a > i64::MAX as u64) {
        return Err(ApiError::bad_request(
            "after is an event sequence number (at most 9223372036854775807)",
        ));
    }
    if !own_topic(&app, &user.id, &chat).await? {
        return Err(ApiError::not_found(format!("no chat {chat}")));
    }
    let Some(Turn { id, status, .. }) = take(&app, &user, &chat, Asked::Look).await? else {
        return Ok(Resumed(UiStream(None)));
    };
    if !matches!(status, Status::Queued | Status::Idle | Status::Running) {
        return Ok(Resumed(UiStream(None)));
    }
    let plan = if q.after.is_some() {
        crate::routes::front_turn::plan_of(&app, id).await?
    } else {
        Vec::new()
    };
    let turn = Turn {
        id,
        cursor: q.after,
        plan,
        status,
        shown: Vec::new(),
    };
    Ok(Resumed(stream(
        &app,
        turn,
        crate::auth::credential(&app, &headers),
    )))
}

/// `POST /v1/ui/chat/{chat_id}/stop`: cancel what the chat runs.
pub async fn stop(
    State(app): State<AppState>,
    Caller(user): Caller,
    TopicPath(chat): TopicPath,
) -> Result<Json<Accepted>, ApiError> {
    if !own_topic(&app, &user.id, &chat).await? {
        return Err(ApiError::not_found(format!("no chat {chat}")));
    }
    let Some((id, status)) = holder(&app, &chat).await? else {
        return Err(ApiError::conflict(format!("chat {chat} runs nothing")));
    };
    if status.is_terminal() {
        return Err(ApiError::conflict(format!("chat {chat} runs nothing")));
    }
    app.runner.driver().cancel(id).await?;
    let now = app.store.operation_status(id).await?.unwrap_or(status);
    Ok(Json(Accepted {
        operation_id: id.to_string(),
        status: crate::routes::operations::status_name(now),
    }))
}

/// The stream of `turn`.
fn stream(app: &AppState, turn: Turn, credential: Option<crate::auth::Credential>) -> UiStream {
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let chunks = Chunks {
        app: app.clone(),
        tx,
        shown: turn.shown.iter().cloned().collect(),
    };
    tokio::spawn(chunks.go(turn, credential));
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    let keep_alive = KeepAlive::new().interval(app.config.heartbeat).text("");
    let mut response = Sse::new(events).keep_alive(keep_alive).into_response();
    response.headers_mut().insert(
        HeaderName::from_static("x-vercel-ai-ui-message-stream"),
        HeaderValue::from_static("v1"),
    );
    UiStream(Some(response))
}

/// One stream's chunks.
struct Chunks {
    app: AppState,
    tx: mpsc::UnboundedSender<Event>,
    /// Tool calls the client was shown (an approval request names only those).
    shown: HashSet<String>,
}

impl Chunks {
    /// Send `chunk` of `kind`; false once the client is gone.
    fn send(&self, kind: &str, mut chunk: Value) -> bool {
        chunk["type"] = json!(kind);
        self.tx
            .send(Event::default().data(chunk.to_string()))
            .is_ok()
    }

    async fn go(mut self, turn: Turn, credential: Option<crate::auth::Credential>) {
        let id = turn.id;
        if !self.send(
            "start",
            json!({"messageId": format!("op-{id}"), "messageMetadata": {"operationId": id.to_string()}}),
        ) {
            return;
        }
        if turn.cursor.is_some()
            && !turn.plan.is_empty()
            && !self.send(
                "data-rein-plan",
                json!({"id": "plan", "data": {"todo": turn.plan}}),
            )
        {
            return;
        }
        let mut beats = Beats::new(id, turn.cursor, turn.plan, turn.shown);
        let mut seen = follow(self.app.clone(), id, turn.cursor, credential);
        let mut end = None;
        'read: while let Some(s) = seen.recv().await {
            for b in resolved(&self.app, id, beats.read(&s)).await {
                if b.is_end() {
                    end = Some(b);
                    break 'read;
                }
                if !self.beat(&b) {
                    return;
                }
            }
        }
        drop(seen);
        self.finish(id, end).await;
        let _ = self.tx.send(Event::default().data("[DONE]"));
    }

    fn beat(&mut self, b: &Beat) -> bool {
        match b {
            Beat::StepStarted(_) => self.send("start-step", json!({})),
            Beat::StepFinished(_) => self.send("finish-step", json!({})),
            Beat::TextStart(id) => self.send("text-start", json!({"id": id})),
            Beat::TextDelta(id, delta) => {
                self.send("text-delta", json!({"id": id, "delta": delta}))
            }
            Beat::TextEnd(id) => self.send("text-end", json!({"id": id})),
            Beat::ReasoningStart(id) => self.send("reasoning-start", json!({"id": id})),
            Beat::ReasoningDelta(id, delta) => {
                self.send("reasoning-delta", json!({"id": id, "delta": delta}))
            }
            Beat::ReasoningEnd(id) => self.send("reasoning-end", json!({"id": id})),
            Beat::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                self.shown.insert(id.clone());
                let input: Value =
                    serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments));
                let tool = json!({"toolCallId": id, "toolName": name, "dynamic": true, "providerExecuted": true});
                let mut available = tool.clone();
                available["input"] = input;
                self.send("tool-input-start", tool) && self.send("tool-input-available", available)
            }
            Beat::ToolResult {
                id,
                status,
                content,
                ..
            } => match status {
                ToolStatus::Succeeded => self.send(
                    "tool-output-available",
                    json!({"toolCallId": id, "output": content, "dynamic": true, "providerExecuted": true}),
                ),
                ToolStatus::Rejected => {
                    self.send("tool-output-denied", json!({"toolCallId": id}))
                }
                ToolStatus::Pending
                | ToolStatus::Approved
                | ToolStatus::Failed
                | ToolStatus::Aborted
                | ToolStatus::Blocked => self.send(
                    "tool-output-error",
                    json!({"toolCallId": id, "errorText": content, "dynamic": true, "providerExecuted": true}),
                ),
            },
            Beat::Plan(_, after) => {
                self.send("data-rein-plan", json!({"id": "plan", "data": {"todo": after}}))
            }
            Beat::SubAgent(event) => self.send("data-rein-sub-agent", json!({"data": event})),
            // Replaced by `front_turn::resolved`; the end is said by `finish`, once.
            Beat::Decided(_)
            | Beat::Parked
            | Beat::Finished(..)
            | Beat::Failed(..)
            | Beat::Interrupted(_) => true,
        }
    }

    /// Say how the run ended: its usage, then `finish` (or `error`, `abort`).
    async fn finish(&self, id: rein_core::OperationId, end: Option<Beat>) {
        let record = self.app.store.operation(id).await.ok().flatten();
        if let Some(r) = &record {
            self.send(
                "data-rein-usage",
                json!({"id": "usage", "data": {
                    "inputTokens": r.input_tokens,
                    "outputTokens": r.output_tokens,
                    "totalTokens": r.total_tokens.max(r.input_tokens + r.output_tokens),
                    "costUsd": r.cost.dollars(),
                }}),
            );
        }
        let meta = json!({"operationId": id.to_string()});
        match end {
            Some(Beat::Parked) => {
                let waiting = waiting(&self.app, id).await.unwrap_or_default();
                for w in &waiting {
                    let call = w.call.id.to_string();
                    if self.shown.contains(&call) {
                        let mut ask = json!({"approvalId": call, "toolCallId": call});
                        if let Some(r) = &w.reason {
                            ask["reason"] = json!(r.line());
                        }
                        self.send("tool-approval-request", ask);
                    }
                }
                let calls: Vec<Value> = waiting
                    .iter()
                    .map(|w| json!({"toolCallId": w.call.id.to_string(), "tool": w.call.key(), "arguments": w.call.arguments.to_string(), "reason": w.reason.as_ref().map(|r| r.line())}))
                    .collect();
                self.send(
                    "data-rein-approval",
                    json!({"id": "approval", "data": {
                        "operationId": id.to_string(),
                        "calls": calls,
                        "decide": format!("answer the tool approvals (addToolApprovalResponse), or POST /v1/operations/{id}/interventions"),
                    }}),
                );
                self.send(
                    "finish",
                    json!({"finishReason": "tool-calls", "messageMetadata": meta}),
                );
            }
            Some(Beat::Failed(_, message)) => {
                self.send("error", json!({"errorText": message}));
                self.send(
                    "finish",
                    json!({"finishReason": "error", "messageMetadata": meta}),
                );
            }
            Some(Beat::Interrupted(reason)) => {
                self.send("abort", json!({"reason": reason}));
            }
            Some(Beat::Finished(reason, detail)) if !reason.is_success() => {
                self.send(
                    "data-rein-stopped",
                    json!({"data": {"reason": reason.to_string(), "detail": detail}}),
                );
                let why = if matches!(reason, rein_core::state::FinishReason::StepLimitExceeded) {
                    "length"
                } else {
                    "other"
                };
                self.send(
                    "finish",
                    json!({"finishReason": why, "messageMetadata": meta}),
                );
            }
            _ if record.as_ref().is_some_and(|r| r.status == Status::Error) => {
                let message = record.and_then(|r| r.error).unwrap_or_default();
                self.send("error", json!({"errorText": message}));
                self.send(
                    "finish",
                    json!({"finishReason": "error", "messageMetadata": meta}),
                );
            }
            _ => {
                self.send(
                    "finish",
                    json!({"finishReason": "stop", "messageMetadata": meta}),
                );
            }
        }
    }
}

/// The UI message stream routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/ui/chat",
            "The AI SDK's UI message stream: run an agent on a chat (a conversation)",
            chat,
        )
        .route(
            Method::Get,
            "/v1/ui/chat/{chat_id}/stream",
            "Resume a chat's stream (replayed from the run's start, or after an event); 204 when nothing runs",
            resume,
        )
        .route(
            Method::Post,
            "/v1/ui/chat/{chat_id}/stop",
            "Cancel what a chat runs (a disconnect does not)",
            stop,
        )
}
