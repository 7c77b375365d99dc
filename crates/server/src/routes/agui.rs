//! AG-UI (`POST /v1/ag-ui`): the Agent–User Interaction protocol's run input in, its events
//! out as Server-Sent Events. The thread id is the rein conversation (topic) the run belongs
//! to. A run whose last message is the user's starts an operation (the messages before it seed
//! a new conversation; an existing one is rein's own record); a run with `resume` entries
//! decides what the conversation's parked operation waits on (each interrupt's id is the
//! waiting tool call's) and follows it on; a run with neither sends the conversation as a
//! `MESSAGES_SNAPSHOT` and follows whatever is still under way (a reconnect).
//!
//! The events: `RUN_STARTED`; the plan (`todo`) as `STATE_SNAPSHOT` `{"todo": [...]}`, then a
//! JSON Patch `STATE_DELTA` at each change; `STEP_STARTED`/`STEP_FINISHED` per step; answer
//! text as `TEXT_MESSAGE_START/CONTENT/END` and reasoning as `REASONING_*` (message ids are
//! rein's); each tool call rein runs as `TOOL_CALL_START/ARGS/END` and `TOOL_CALL_RESULT`;
//! sub-agents as `CUSTOM` events; and at the end `RUN_FINISHED` (outcome `success`, with the
//! operation's token usage; `interrupt`, naming each call that waits, when the operation
//! parks; `cancelled`) or `RUN_ERROR`. `forwardedProps` may name the `agent`, a `model`
//! (`provider/model`) and `attachments` (file ids). `context` entries and a non-empty `state`
//! are added to the system role. Tools the client defines are not offered: the agent's tools
//! are rein's. Closing the stream never cancels the operation.

use crate::AppState;
use crate::api::{Api, Method, OperationDoc, Output};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::Body;
use crate::routes::beats::{Beat, Beats};
use crate::routes::content_parts::{Parts, earlier, parts_of};
use crate::routes::follow::follow;
use crate::routes::front_turn::{
    Answering, Asked, Said, Turn, resolved, take, waiting, with_uploads,
};
use crate::routes::operations::{DecisionIn, DecisionKind};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use rein_core::message::ToolStatus;
use rein_core::question::Question;
use rein_core::state::{Status, TodoItem};
use rein_store::Store as _;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use tokio::sync::mpsc;

/// AG-UI's run input (`RunAgentInput`); fields rein does not read are accepted.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation: a rein topic id of yours, or a new one.
    #[schemars(regex(pattern = rein_operation::TOPIC_ID_PATTERN))]
    pub thread_id: String,
    /// The client's id of this run, echoed back.
    pub run_id: String,
    /// The conversation as the client holds it; the last, when it is the user's, is the new
    /// message.
    #[serde(deserialize_with = "crate::routes::objects")]
    pub messages: Vec<AgUiMessage>,
    /// Added to the system role when not empty.
    #[serde(default)]
    pub state: Option<Value>,
    /// Added to the system role.
    #[serde(default, deserialize_with = "crate::routes::objects")]
    pub context: Vec<ContextEntry>,
    /// Tools the client defines: not offered (the agent's tools are rein's).
    #[serde(default)]
    pub tools: Vec<Value>,
    /// `agent`, `model` and `attachments` (file ids).
    #[serde(default, deserialize_with = "crate::routes::optional_object")]
    pub forwarded_props: Option<Answering>,
    /// Answers to the interrupts the last run ended with.
    #[serde(default, deserialize_with = "crate::routes::optional_objects")]
    pub resume: Option<Vec<ResumeEntry>>,
    /// Accepted.
    #[serde(default)]
    pub parent_run_id: Option<String>,
    /// Accepted.
    #[serde(default)]
    pub protocol_version: Option<String>,
}

/// One message of the input.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct AgUiMessage {
    /// The client's id.
    pub id: String,
    /// `user`, `assistant`, `system`, `developer`, `tool`, `activity` or `reasoning`.
    pub role: AgUiRole,
    /// Text, or (a user's) parts: `text`, `image`, `document` (`source`: `data` with base64
    /// `value` and `mimeType`, `url`, or `file` with a rein file id as `value`).
    #[serde(default)]
    #[schemars(schema_with = "content_schema")]
    pub content: Value,
}

fn content_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let source = json!({
        "type": "object",
        "required": ["type", "value"],
        "properties": {
            "type": {"type": "string", "enum": ["data", "url", "file"]},
            "value": {"type": "string"},
            "mimeType": {"type": "string"}
        }
    });
    schemars::json_schema!({"oneOf": [
        {"type": "null"},
        {"type": "string"},
        {"type": "array", "items": {
            "type": "object",
            "required": ["type"],
            "properties": {
                "type": {"type": "string", "enum": ["text", "image", "audio", "video", "document"]},
                "text": {"type": "string"},
                "source": source
            }
        }}
    ]})
}

/// A message's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgUiRole {
    /// The person.
    User,
    /// The agent.
    Assistant,
    /// Instructions.
    System,
    /// The developer's instructions.
    Developer,
    /// A tool's result (rein's record holds its own).
    Tool,
    /// Progress shown by the client.
    Activity,
    /// Reasoning shown by the client.
    Reasoning,
}

/// A named piece of information for the run.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ContextEntry {
    /// What it is.
    pub description: String,
    /// Its value.
    pub value: String,
}

/// An answer to one interrupt.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt: the waiting tool call's id.
    pub interrupt_id: String,
    /// `resolved` (approve, or answer with the payload) or `cancelled` (reject).
    pub status: ResumeStatus,
    /// An approval: nothing, or `{"approved": bool, "reason"}`. A question: the answer's text,
    /// or `{"text"}`, or `{"option": key}`.
    #[serde(default)]
    pub payload: Option<Value>,
}

/// How an interrupt was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResumeStatus {
    /// Approved or answered.
    Resolved,
    /// Rejected or declined.
    Cancelled,
}

/// The stream of AG-UI events.
pub struct AgUiEvents(Sse<axum::response::sse::KeepAliveStream<Events>>);

type Events = futures::stream::BoxStream<'static, Result<Event, Infallible>>;

impl IntoResponse for AgUiEvents {
    fn into_response(self) -> Response {
        self.0.into_response()
    }
}

impl Output for AgUiEvents {
    fn document(doc: &mut OperationDoc, _g: &mut schemars::SchemaGenerator) {
        doc.success = Some((
            200,
            crate::api::event_stream(
                "AG-UI events: each `data:` one event (`RUN_STARTED` … `RUN_FINISHED` or `RUN_ERROR`)",
            ),
        ));
    }
}

/// An AG-UI content part as the OpenAI-style part `parts_of` reads.
fn openai_part(i: usize, part: &Value) -> Result<Value, ApiError> {
    let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
    let bad =
        |why: &str| ApiError::invalid_conversation(format!("content part {i} ({kind}): {why}"));
    if kind == "text" {
        return Ok(json!({"type": "text", "text": part.get("text").cloned().unwrap_or_default()}));
    }
    if !matches!(kind, "image" | "document") {
        return Err(bad("rein reads text, image and document parts"));
    }
    let source = part.get("source").ok_or_else(|| bad("no `source`"))?;
    let value = source
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `source.value`"))?;
    let mime = source.get("mimeType").and_then(Value::as_str);
    Ok(match (source.get("type").and_then(Value::as_str), kind) {
        (Some("file"), _) => json!({"type": "file", "file": {"file_id": value}}),
        (Some("url"), "image") => json!({"type": "image_url", "image_url": {"url": value}}),
        (Some("data"), "image") => json!({"type": "image_url", "image_url": {
            "url": format!("data:{};base64,{value}", mime.unwrap_or("image/png"))
        }}),
        (Some("data"), _) => json!({"type": "file", "file": {
            "file_data": format!("data:{};base64,{value}", mime.unwrap_or("application/octet-stream")),
            "filename": "document"
        }}),
        (Some("url"), _) => {
            return Err(bad(
                "a document is sent as data or as a file id, not a URL rein would fetch",
            ));
        }
        _ => return Err(bad("`source.type` is data, url or file")),
    })
}

/// A message's text and parts.
async fn parts(app: &AppState, owner: &str, content: &Value) -> Result<Parts, ApiError> {
    let content = match content {
        Value::Array(list) => Value::Array(
            list.iter()
                .enumerate()
                .map(|(i, p)| openai_part(i, p))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    };
    parts_of(&*app.store, owner, &content)
        .await
        .map_err(crate::routes::content_parts::unprocessable)
}

/// Refuse (400) a message content the schema does not allow, in any message, read or not:
/// null, a string, or parts, each an object with a known `type`, a string `text` when it has
/// one, and a `source` (when it has one) with a known `type`, a string `value` and a string
/// `mimeType` when it has one.
fn check_content(i: usize, content: &Value) -> Result<(), ApiError> {
    let bad = |why: String| ApiError::bad_request(format!("messages[{i}].content: {why}"));
    let parts = match content {
        Value::Null | Value::String(_) => return Ok(()),
        Value::Array(parts) => parts,
        _ => return Err(bad("a string or a list of parts".into())),
    };
    for (j, p) in parts.iter().enumerate() {
        let kind = p.get("type").and_then(Value::as_str);
        if !matches!(
            kind,
            Some("text" | "image" | "audio" | "video" | "document")
        ) {
            return Err(bad(format!(
                "part {j}: `type` is text, image, audio, video or document"
            )));
        }
        if p.get("text").is_some_and(|t| !t.is_string()) {
            return Err(bad(format!("part {j}: `text` is a string")));
        }
        if let Some(source) = p.get("source") {
            let ok = matches!(
                source.get("type").and_then(Value::as_str),
                Some("data" | "url" | "file")
            ) && source.get("value").is_some_and(Value::is_string)
                && source.get("mimeType").is_none_or(Value::is_string);
            if !ok {
                return Err(bad(format!(
                    "part {j}: `source` has a `type` (data, url or file), a string `value` and a string `mimeType`"
                )));
            }
        }
    }
    Ok(())
}

/// What the input asks.
async fn asked_of(
    app: &AppState,
    user: &rein_store::User,
    input: &RunAgentInput,
) -> Result<Asked, ApiError> {
    for (i, m) in input.messages.iter().enumerate() {
        check_content(i, &m.content)?;
    }
    if let Some(p) = &input.forwarded_props {
        p.check()?;
    }
    if let Some(resume) = input.resume.as_ref().filter(|r| !r.is_empty()) {
        return Ok(Asked::Decide(
            resume.iter().map(decision_of).collect::<Result<_, _>>()?,
        ));
    }
    let Some((last, before)) = input
        .messages
        .split_last()
        .filter(|(last, _)| last.role == AgUiRole::User)
    else {
        return Ok(Asked::Look);
    };
    let said = parts(app, &user.id, &last.content).await?;
    if said.text.trim().is_empty() {
        return Err(ApiError::invalid_conversation(
            "the last message, the user's, has no text",
        ));
    }
    let mut turns = Vec::new();
    for m in before {
        let role = match m.role {
            AgUiRole::User => "user",
            AgUiRole::Assistant => "assistant",
            AgUiRole::System => "system",
            AgUiRole::Developer => "developer",
            // rein's record of a conversation holds its own tool results and reasoning.
            AgUiRole::Tool | AgUiRole::Activity | AgUiRole::Reasoning => continue,
        };
        turns.push((role, parts(app, &user.id, &m.content).await?));
    }
    let (history, mut instructions) = earlier(turns);
    for c in &input.context {
        instructions.push(format!("{}: {}", c.description, c.value));
    }
    if let Some(state) = input
        .state
        .as_ref()
        .filter(|s| !s.is_null() && **s != json!({}))
    {
        instructions.push(format!("The application's state (AG-UI): {state}"));
    }
    let props = input.forwarded_props.clone().unwrap_or_default();
    let attachments = with_uploads(app, &user.id, said.attached, &props.attachments).await?;
    let model = props.answerer()?;
    Ok(Asked::Say(Said {
        prompt: said.text,
        attachments,
        history,
        instructions,
        model,
    }))
}

/// The decision a resume entry makes.
fn decision_of(r: &ResumeEntry) -> Result<DecisionIn, ApiError> {
    let payload = r.payload.as_ref();
    let field = |k: &str| payload.and_then(|p| p.get(k));
    let text = |k: &str| field(k).and_then(Value::as_str).map(str::to_owned);
    let kind = match r.status {
        ResumeStatus::Cancelled => DecisionKind::Reject,
        ResumeStatus::Resolved => match payload {
            None | Some(Value::Null) => DecisionKind::Approve,
            Some(Value::String(_)) => DecisionKind::Answer,
            Some(p) if p.get("option").is_some() => DecisionKind::Select,
            Some(p) if p.get("text").is_some() => DecisionKind::Answer,
            Some(p) => match p.get("approved").and_then(Value::as_bool) {
                Some(true) => DecisionKind::Approve,
                Some(false) => DecisionKind::Reject,
                None => {
                    return Err(ApiError::invalid_conversation(format!(
                        "resume payload for {}: give `approved`, `text`, `option` or the answer as a string",
                        r.interrupt_id
                    )));
                }
            },
        },
    };
    Ok(DecisionIn {
        tool_call_id: r.interrupt_id.clone(),
        decision: kind,
        reason: text("reason"),
        halt: false,
        text: match payload {
            Some(Value::String(s)) => Some(s.clone()),
            _ => text("text"),
        },
        option: text("option"),
        grant: None,
    })
}

/// `POST /v1/ag-ui`.
pub async fn run(
    State(app): State<AppState>,
    Caller(user): Caller,
    headers: HeaderMap,
    Body(input): Body<RunAgentInput>,
) -> Result<AgUiEvents, ApiError> {
    let asked = asked_of(&app, &user, &input).await?;
    let look = matches!(asked, Asked::Look);
    let turn = take(&app, &user, &input.thread_id, asked).await?;
    let credential = crate::auth::credential(&app, &headers);
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let snapshot = if look {
        Some(app.store.topic_messages(&input.thread_id).await?)
    } else {
        None
    };
    let run = Run {
        app: app.clone(),
        thread: input.thread_id.clone(),
        run: input.run_id.clone(),
        tx,
    };
    tokio::spawn(run.go(turn, snapshot, credential));
    let events: Events = Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok(e), rx))
    }));
    let keep_alive = KeepAlive::new().interval(app.config.heartbeat).text("");
    Ok(AgUiEvents(Sse::new(events).keep_alive(keep_alive)))
}

/// One AG-UI run's stream.
struct Run {
    app: AppState,
    thread: String,
    run: String,
    tx: mpsc::UnboundedSender<Event>,
}

impl Run {
    /// Send `event` of `kind`; false once the client is gone.
    fn send(&self, kind: &str, mut event: Value) -> bool {
        event["type"] = json!(kind);
        self.tx
            .send(Event::default().data(event.to_string()))
            .is_ok()
    }

    async fn go(
        self,
        turn: Option<Turn>,
        snapshot: Option<Vec<rein_core::Message>>,
        credential: Option<crate::auth::Credential>,
    ) {
        if !self.send(
            "RUN_STARTED",
            json!({"threadId": self.thread, "runId": self.run}),
        ) {
            return;
        }
        if let Some(messages) = snapshot
            && !self.send(
                "MESSAGES_SNAPSHOT",
                json!({"messages": messages_of(&messages)}),
            )
        {
            return;
        }
        let Some(turn) = turn else {
            self.send(
                "RUN_FINISHED",
                json!({"threadId": self.thread, "runId": self.run, "outcome": {"type": "success"}}),
            );
            return;
        };
        if !self.send("STATE_SNAPSHOT", json!({"snapshot": {"todo": turn.plan}})) {
            return;
        }
        let mut beats = Beats::new(turn.id, turn.cursor, turn.plan, turn.shown);
        // A look at a parked or finished operation has nothing to follow.
        let stopped = match turn.status {
            Status::WaitingForHuman => Some(Some(Beat::Parked)),
            s if s.is_terminal() && turn.cursor.is_some() => Some(None),
            _ => None,
        };
        let end = match stopped {
            Some(end) => end,
            None => {
                let mut seen = follow(self.app.clone(), turn.id, turn.cursor, credential);
                loop {
                    let Some(s) = seen.recv().await else {
                        break None;
                    };
                    let mut end = None;
                    for b in resolved(&self.app, turn.id, beats.read(&s)).await {
                        if b.is_end() {
                            end = Some(b);
                        } else if !self.beat(&b) {
                            return;
                        }
                    }
                    if end.is_some() {
                        break end;
                    }
                }
            }
        };
        self.finish(turn.id, end).await;
    }

    /// Say one beat.
    fn beat(&self, b: &Beat) -> bool {
        match b {
            Beat::StepStarted(n) => self.send("STEP_STARTED", json!({"stepName": format!("step {n}")})),
            Beat::StepFinished(n) => {
                self.send("STEP_FINISHED", json!({"stepName": format!("step {n}")}))
            }
            Beat::TextStart(id) => self.send(
                "TEXT_MESSAGE_START",
                json!({"messageId": id, "role": "assistant"}),
            ),
            Beat::TextDelta(id, delta) => self.send(
                "TEXT_MESSAGE_CONTENT",
                json!({"messageId": id, "delta": delta}),
            ),
            Beat::TextEnd(id) => self.send("TEXT_MESSAGE_END", json!({"messageId": id})),
            Beat::ReasoningStart(id) => {
                self.send("REASONING_START", json!({"messageId": id}))
                    && self.send(
                        "REASONING_MESSAGE_START",
                        json!({"messageId": id, "role": "reasoning"}),
                    )
            }
            Beat::ReasoningDelta(id, delta) => self.send(
                "REASONING_MESSAGE_CONTENT",
                json!({"messageId": id, "delta": delta}),
            ),
            Beat::ReasoningEnd(id) => {
                self.send("REASONING_MESSAGE_END", json!({"messageId": id}))
                    && self.send("REASONING_END", json!({"messageId": id}))
            }
            Beat::ToolCall {
                id,
                name,
                arguments,
                parent,
            } => {
                let mut start = json!({"toolCallId": id, "toolCallName": name});
                if let Some(p) = parent {
                    start["parentMessageId"] = json!(p);
                }
                self.send("TOOL_CALL_START", start)
                    && self.send(
                        "TOOL_CALL_ARGS",
                        json!({"toolCallId": id, "delta": arguments}),
                    )
                    && self.send("TOOL_CALL_END", json!({"toolCallId": id}))
            }
            Beat::ToolResult {
                id,
                message,
                status,
                content,
            } => {
                let mut result = json!({"messageId": message, "toolCallId": id, "content": content, "role": "tool"});
                if *status != ToolStatus::Succeeded {
                    result["metadata"] = json!({"rein": {"status": status.as_str()}});
                }
                self.send("TOOL_CALL_RESULT", result)
            }
            Beat::Plan(before, after) => {
                self.send("STATE_DELTA", json!({"delta": plan_patch(before, after)}))
            }
            Beat::SubAgent(event) => self.send(
                "CUSTOM",
                json!({"name": format!("rein.{}", event["type"].as_str().unwrap_or("sub_agent")), "value": event}),
            ),
            // Replaced by `front_turn::resolved`; the end is said by `finish`, once.
            Beat::Decided(_)
            | Beat::Parked
            | Beat::Finished(..)
            | Beat::Failed(..)
            | Beat::Interrupted(_) => true,
        }
    }

    /// Say how the run ended.
    async fn finish(&self, id: rein_core::OperationId, end: Option<Beat>) {
        let ids = json!({"threadId": self.thread, "runId": self.run});
        let with = |mut v: Value, extra: Value| {
            if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
                v.extend(extra.clone());
            }
            v
        };
        let record = self.app.store.operation(id).await.ok().flatten();
        let usage = record.as_ref().map(|r| {
            json!([{
                "model": r.model.clone().unwrap_or_default(),
                "inputTokens": r.input_tokens,
                "outputTokens": r.output_tokens,
                "totalTokens": r.total_tokens.max(r.input_tokens + r.output_tokens),
            }])
        });
        let status = record.as_ref().map(|r| r.status);
        match end {
            Some(Beat::Failed(code, message)) => {
                self.send("RUN_ERROR", json!({"message": message, "code": code}));
            }
            Some(Beat::Interrupted(_)) => {
                self.send(
                    "RUN_FINISHED",
                    with(ids, json!({"outcome": {"type": "cancelled"}})),
                );
            }
            Some(Beat::Parked) => {
                let waiting = waiting(&self.app, id).await.unwrap_or_default();
                if waiting.is_empty() {
                    self.send(
                        "RUN_FINISHED",
                        with(ids, json!({"outcome": {"type": "success"}})),
                    );
                    return;
                }
                let interrupts: Vec<Value> = waiting.iter().map(|w| interrupt_of(id, w)).collect();
                self.send(
                    "RUN_FINISHED",
                    with(
                        ids,
                        json!({"outcome": {"type": "interrupt", "interrupts": interrupts}}),
                    ),
                );
            }
            Some(Beat::Finished(reason, detail)) if !reason.is_success() => {
                let mut e = json!({"message": detail.unwrap_or_else(|| reason.to_string()), "code": reason.to_string()});
                if let Some(u) = usage {
                    e["usage"] = u;
                }
                self.send("RUN_ERROR", e);
            }
            _ if status == Some(Status::Error) => {
                let message = record.and_then(|r| r.error).unwrap_or_default();
                self.send(
                    "RUN_ERROR",
                    json!({"message": message, "code": "operation_failed"}),
                );
            }
            _ => {
                let mut done = with(ids, json!({"outcome": {"type": "success"}}));
                if let Some(u) = usage {
                    done["usage"] = u;
                }
                self.send("RUN_FINISHED", done);
            }
        }
    }
}

/// The interrupt of one waiting call.
fn interrupt_of(op: rein_core::OperationId, w: &rein_store::Intervention) -> Value {
    let call = &w.call;
    let mut i = json!({
        "id": call.id.to_string(),
        "toolCallId": call.id.to_string(),
        "metadata": {"rein": {"operationId": op.to_string(), "tool": call.key(), "arguments": call.arguments.to_string()}},
    });
    match Question::of_call(call).and_then(Result::ok) {
        Some(q) => {
            i["reason"] = json!("question");
            i["message"] = json!(q.question);
            i["responseSchema"] = if q.options.is_empty() {
                json!({"type": "string"})
            } else {
                json!({"type": "object", "required": ["option"], "properties": {"option": {
                    "type": "string", "enum": q.options.iter().map(|o| o.key.clone()).collect::<Vec<_>>()
                }}})
            };
        }
        None => {
            i["reason"] = json!("tool_approval");
            i["message"] = json!(match &w.reason {
                Some(r) => format!("{} wants to run: {}", call.key(), r.line()),
                None => format!("{} wants to run", call.key()),
            });
            i["responseSchema"] = json!({"type": "object", "properties": {
                "approved": {"type": "boolean"}, "reason": {"type": "string"}
            }});
        }
    }
    if let Some(at) = w.expires_at {
        i["expiresAt"] = json!(at.to_rfc3339());
    }
    i
}

/// A JSON Patch from plan `before` to `after` under `/todo`: each changed item replaced, items
/// past the shorter end added or removed (from the end, so every path stays valid).
fn plan_patch(before: &[TodoItem], after: &[TodoItem]) -> Vec<Value> {
    let mut ops = Vec::new();
    for (i, (b, a)) in before.iter().zip(after).enumerate() {
        if b != a {
            ops.push(json!({"op": "replace", "path": format!("/todo/{i}"), "value": a}));
        }
    }
    for (i, a) in after.iter().enumerate().skip(before.len()) {
        ops.push(json!({"op": "add", "path": format!("/todo/{i}"), "value": a}));
    }
    for i in (after.len()..before.len()).rev() {
        ops.push(json!({"op": "remove", "path": format!("/todo/{i}")}));
    }
    ops
}

/// A conversation as AG-UI messages: the user's and the agent's texts with the agent's tool
/// calls, and each tool result.
fn messages_of(messages: &[rein_core::Message]) -> Vec<Value> {
    use rein_core::message::Role;
    messages
        .iter()
        .filter_map(|m| {
            let id = m.id.to_string();
            match m.role {
                Role::User => Some(json!({"id": id, "role": "user", "content": m.text_content()})),
                Role::Assistant => {
                    let mut v = json!({"id": id, "role": "assistant", "content": m.text_content()});
                    if !m.tool_calls.is_empty() {
                        v["toolCalls"] = m
                            .tool_calls
                            .iter()
                            .map(|c| json!({"id": c.id.to_string(), "type": "function", "function": {"name": c.key(), "arguments": c.arguments.to_string()}}))
                            .collect();
                    }
                    Some(v)
                }
                Role::Tool => Some(json!({
                    "id": id, "role": "tool", "content": m.text_content(),
                    "toolCallId": m.tool_call_id.as_deref().unwrap_or_default(),
                })),
                Role::System => None,
            }
        })
        .collect()
}

/// The AG-UI route and its document.
pub fn api() -> Api {
    Api::new().route(
        Method::Post,
        "/v1/ag-ui",
        "AG-UI: run an agent on a conversation (the thread id), streaming AG-UI events",
        run,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::state::TodoStatus;

    fn item(text: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            text: text.into(),
            status,
        }
    }

    #[test]
    fn a_plan_patch_replaces_changed_items_and_adds_or_removes_the_tail() {
        let a = item("a", TodoStatus::Pending);
        let b = item("b", TodoStatus::Pending);
        let b_done = item("b", TodoStatus::Done);
        let c = item("c", TodoStatus::Pending);
        assert_eq!(
            plan_patch(
                &[a.clone(), b.clone()],
                &[a.clone(), b_done.clone(), c.clone()]
            ),
            vec![
                json!({"op": "replace", "path": "/todo/1", "value": b_done}),
                json!({"op": "add", "path": "/todo/2", "value": c}),
            ]
        );
        assert_eq!(
            plan_patch(&[a.clone(), b.clone(), c], std::slice::from_ref(&b)),
            vec![
                json!({"op": "replace", "path": "/todo/0", "value": b}),
                json!({"op": "remove", "path": "/todo/2"}),
                json!({"op": "remove", "path": "/todo/1"}),
            ]
        );
        let same = std::slice::from_ref(&a);
        assert!(plan_patch(same, same).is_empty());
    }
}
