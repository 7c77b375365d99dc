//! `POST /v1/chat/completions`: OpenAI's Chat Completions shape over rein operations, so the
//! clients and SDKs that speak it can talk to a rein agent. `model` names one of the caller's
//! agents (`agent/NAME`) or a `provider/model` (the default settings with that model). Each
//! request is one operation, with the agent's scope and budgets, recorded like any other; no
//! human can answer through this API, so it runs headless (a call that needs approval is
//! refused with a result the model reads). The answer comes back as a completion or as
//! standard chunks (`stream: true`), with usage; tool activity shows as `reasoning_content`,
//! never as tool calls the client would have to run. An operation that does not complete (a
//! budget, a failure) is an error naming why and the operation.

use crate::AppState;
use crate::api::{Api, Method, OperationDoc, Output};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::Body;
use crate::routes::content_parts::parts_of;
use crate::runner::{Ended, Job};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use rein_core::event::{EventKind, StreamChunk};
use rein_core::intervention::ApprovalMode;
use rein_core::state::Status;
use rein_core::{AgentEvent, OperationId};
use rein_operation::{AgentProfile, RunEnd, StartOptions};
use rein_store::{Store, Trigger};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::mpsc;

/// One message of the conversation a client sends.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ChatMessage {
    /// `system` or `developer` (instructions), `user`, or `assistant`.
    #[schemars(regex(pattern = r"^(system|developer|user|assistant)$"))]
    pub role: String,
    /// Text, or a list of parts: `text`, `image_url` (a `data:` or http(s) URL) and `file`
    /// (an uploaded `file_id`, or `file_data` with its `filename`).
    #[serde(default)]
    pub content: Value,
}

/// Streaming options.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct StreamOptions {
    /// Send a last chunk with the usage of the whole operation.
    #[serde(default)]
    pub include_usage: bool,
}

/// `POST /v1/chat/completions` body (other OpenAI parameters are accepted and ignored: the
/// agent's settings decide).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ChatCompletionRequest {
    /// `agent/NAME` (one of your agents) or `provider/model`.
    #[schemars(pattern(r"^[^/]+/.+$"))]
    pub model: String,
    /// The conversation; the last message is the user's.
    #[schemars(length(min = 1))]
    pub messages: Vec<ChatMessage>,
    /// Answer as chunks (Server-Sent Events).
    #[serde(default)]
    pub stream: bool,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// Token counts of the whole operation.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct CompletionUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

/// The answer.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AnswerMessage {
    /// `assistant`.
    pub role: String,
    /// The operation's final answer.
    pub content: String,
}

/// One choice (there is always exactly one).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Choice {
    /// 0.
    pub index: u32,
    /// The answer.
    pub message: AnswerMessage,
    /// `stop`, or `length` when the step limit forced the answer.
    pub finish_reason: String,
}

/// A completed operation in OpenAI's shape (`id` is `chatcmpl-` and the operation id).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-<operation id>`.
    pub id: String,
    /// `chat.completion`.
    pub object: String,
    /// Unix seconds.
    pub created: i64,
    /// The `model` asked for.
    pub model: String,
    /// The answer.
    pub choices: Vec<Choice>,
    /// Tokens of the whole operation (every model call, sub-agents included).
    pub usage: CompletionUsage,
}

type Chunks = futures::stream::BoxStream<'static, Result<Event, Infallible>>;
type KeptAlive = axum::response::sse::KeepAliveStream<Chunks>;

/// A completion, or its chunks.
pub enum Completion {
    /// `stream: false`.
    Whole(ChatCompletion),
    /// `stream: true`.
    Chunks(Sse<KeptAlive>),
}

impl IntoResponse for Completion {
    fn into_response(self) -> Response {
        match self {
            Completion::Whole(c) => axum::Json(c).into_response(),
            Completion::Chunks(s) => s.into_response(),
        }
    }
}

impl Output for Completion {
    fn document(doc: &mut OperationDoc, g: &mut schemars::generate::SchemaGenerator) {
        let whole = crate::api::schema_of::<ChatCompletion>(g);
        doc.success = Some((
            200,
            json!({
                "description": "The completion, or with `stream: true` its chunks \
                    (`chat.completion.chunk` objects, then `[DONE]`)",
                "content": {
                    "application/json": {"schema": whole},
                    "text/event-stream": {"schema": {"type": "string"}}
                }
            }),
        ));
    }
}

/// Hands live events to the request waiting on them.
pub(crate) struct ToRequest(pub(crate) mpsc::UnboundedSender<AgentEvent>);

impl rein_core::engine::EventSink for ToRequest {
    fn publish(&self, event: &AgentEvent) {
        let _ = self.0.send(event.clone());
    }
}

fn usage_of(r: &rein_store::OperationRecord) -> CompletionUsage {
    CompletionUsage {
        prompt_tokens: r.input_tokens,
        completion_tokens: r.output_tokens,
        total_tokens: r.total_tokens.max(r.input_tokens + r.output_tokens),
    }
}

/// Why the operation gives no answer: `None` when it completed.
fn stopped(
    record: &rein_store::OperationRecord,
    end: &Option<Result<RunEnd, std::sync::Arc<rein_operation::DriverError>>>,
) -> Option<(String, String)> {
    let id = record.id;
    if let Some(Err(e)) = end {
        return Some((
            "operation_failed".into(),
            format!("operation {id} failed: {e}"),
        ));
    }
    match (record.status, record.finish_reason) {
        (Status::Done, Some(r)) if r.is_success() => None,
        (Status::Done, r) => {
            let code = r.map_or_else(|| "stopped".to_owned(), |r| r.to_string());
            let detail = record.finish_detail.clone().unwrap_or_default();
            Some((
                code.clone(),
                format!("operation {id} stopped ({code}): {detail}"),
            ))
        }
        (Status::Error, _) => Some((
            "operation_failed".into(),
            format!(
                "operation {id} failed: {}",
                record.error.clone().unwrap_or_default()
            ),
        )),
        (status, _) => Some((
            "operation_parked".into(),
            format!(
                "operation {id} did not finish here: it is {status:?}; continue it through /v1/operations/{id}"
            ),
        )),
    }
}

fn finish_reason(record: &rein_store::OperationRecord) -> String {
    match record.finish_reason {
        Some(rein_core::state::FinishReason::MaxStepsCompleted) => "length".into(),
        _ => "stop".into(),
    }
}

/// The spec of an operation an OpenAI-style request starts: `model` is `agent/NAME` (one of
/// `user`'s agents) or `provider/model` over the default agent (none: the default agent); `approval` replaces the
/// agent's mode when given; admitted within the caller's caps; `instructions` added to the
/// system role.
pub(crate) async fn spec_for(
    app: &AppState,
    user: &rein_store::User,
    model: Option<&str>,
    approval: Option<ApprovalMode>,
    instructions: Vec<String>,
) -> Result<rein_core::spec::OperationSpec, ApiError> {
    let (agent, over) = match model.map(|m| (m, m.strip_prefix("agent/"))) {
        None => (None, AgentProfile::default()),
        Some((_, Some(name))) => (Some(name), AgentProfile::default()),
        Some((model, None)) => (
            None,
            AgentProfile {
                model: Some(model.to_owned()),
                ..Default::default()
            },
        ),
    };
    let origin = app.runner.host.origin(&*app.store, &user.id).await?;
    let mut spec = app
        .runner
        .host
        .agent_spec(&*app.store, &user.id, agent, &over, origin)
        .await?;
    if let Some(mode) = approval {
        spec.approval = mode;
    }
    crate::caps::admit(app, user, &mut spec).await?;
    if !instructions.is_empty() {
        let mut role: Vec<String> = spec.system_role.take().into_iter().collect();
        role.extend(instructions);
        spec.system_role = Some(role.join("\n\n"));
    }
    Ok(spec)
}

/// `POST /v1/chat/completions`.
pub async fn completions(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(req): Body<ChatCompletionRequest>,
) -> Result<Completion, ApiError> {
    let (last, earlier) = req
        .messages
        .split_last()
        .ok_or_else(|| ApiError::bad_request("messages is empty"))?;
    // Each message is valid alone; what the conversation must end with is a 422.
    let unanswerable = |why: &str| ApiError::invalid_conversation(why);
    if last.role != "user" {
        return Err(unanswerable("the last message must be the user's"));
    }
    let last = parts_of(&*app.store, &user.id, &last.content).await?;
    let prompt = last.text;
    if prompt.trim().is_empty() {
        return Err(unanswerable("the last message has no text"));
    }
    let mut turns = Vec::with_capacity(earlier.len());
    for m in earlier {
        turns.push((
            m.role.as_str(),
            parts_of(&*app.store, &user.id, &m.content).await?,
        ));
    }
    let (history, instructions) = crate::routes::content_parts::earlier(turns);
    // Nobody can approve through this API.
    let spec = spec_for(
        &app,
        &user,
        Some(&req.model),
        Some(ApprovalMode::Headless),
        instructions,
    )
    .await?;
    let (tx, rx) = mpsc::unbounded_channel();
    let driver = app.runner.driver_with(Some(Arc::new(ToRequest(tx))));
    let opts = StartOptions {
        spec,
        history,
        trigger: Some(Trigger::Api),
        admission: Some(app.runner.admission()),
        attachments: last.attached,
        ..Default::default()
    };
    let id = driver.start(&prompt, &opts).await?;
    let ended = app.runner.spawn(id, user.id, driver, Job::Run).await?;
    let created = chrono::Utc::now().timestamp();
    if req.stream {
        let include_usage = req.stream_options.is_some_and(|o| o.include_usage);
        let chunks = stream(
            app.clone(),
            id,
            req.model,
            created,
            include_usage,
            rx,
            ended,
        );
        // Comments keep a quiet stream (a long tool call) from looking dead to proxies; SSE
        // clients skip them.
        let keep_alive = KeepAlive::new().interval(app.config.heartbeat).text("");
        return Ok(Completion::Chunks(Sse::new(chunks).keep_alive(keep_alive)));
    }
    let end = ended.wait().await;
    if matches!(end, Some(Ok(RunEnd::Released))) {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            crate::error_code::ApiErrorCode::ShuttingDown,
            format!(
                "this server stopped while operation {id} ran: it continues on another replica (or this one restarted); read it at /v1/operations/{id}"
            ),
        )
        .with_details(json!({"operation_id": id}));
        e.retry_after = Some(1);
        return Err(e);
    }
    let record = app
        .store
        .operation(id)
        .await?
        .ok_or_else(|| ApiError::internal(format!("operation {id} vanished")))?;
    if let Some((code, message)) = stopped(&record, &end) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            crate::error_code::ApiErrorCode::OperationStopped,
            message,
        )
        .with_details(json!({"reason": code, "operation_id": id})));
    }
    let answer = answer_of(&app, id).await?;
    Ok(Completion::Whole(ChatCompletion {
        id: format!("chatcmpl-{id}"),
        object: "chat.completion".into(),
        created,
        model: req.model,
        choices: vec![Choice {
            index: 0,
            message: AnswerMessage {
                role: "assistant".into(),
                content: answer,
            },
            finish_reason: finish_reason(&record),
        }],
        usage: usage_of(&record),
    }))
}

/// The operation's final answer.
async fn answer_of(app: &AppState, id: OperationId) -> Result<String, ApiError> {
    let op = app
        .store
        .load_operation(id)
        .await?
        .ok_or_else(|| ApiError::internal(format!("operation {id} vanished")))?;
    Ok(op.state.final_answer().unwrap_or_default())
}

/// The chunks of operation `id` as it runs: its answer's text as `content`, tool activity (its
/// sub-agents' too) as `reasoning_content`; then the finish (or an `error` object naming why
/// it stopped), the usage when asked for, and `[DONE]`.
fn stream(
    app: AppState,
    id: OperationId,
    model: String,
    created: i64,
    include_usage: bool,
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
    ended: Ended,
) -> Chunks {
    let (out, rx) = mpsc::unbounded_channel::<Event>();
    let chunk = {
        let model = model.clone();
        move |delta: Value, finish: Value| {
            json!({
                "id": format!("chatcmpl-{id}"), "object": "chat.completion.chunk", "created": created,
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
            })
        }
    };
    tokio::spawn(async move {
        let send = |v: Value| out.send(Event::default().data(v.to_string())).is_ok();
        if !send(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )) {
            return;
        }
        let delta = |e: &AgentEvent| -> Option<Value> {
            match &e.kind {
                EventKind::LlmStream {
                    chunk: StreamChunk::Text { text },
                    ..
                } if e.operation_id == id => Some(json!({ "content": text })),
                EventKind::ToolPending { tool_calls } => {
                    Some(json!({"reasoning_content": tool_calls
                    .iter()
                    .map(|c| format!("→ {}({})\n", c.key(), c.arguments))
                    .collect::<String>()}))
                }
                EventKind::ToolResult {
                    status, content, ..
                } => {
                    let short: String = content.chars().take(300).collect();
                    Some(json!({"reasoning_content": format!("← {status:?}: {short}\n")}))
                }
                _ => None,
            }
        };
        let mut ended = Box::pin(ended.wait());
        let end = loop {
            tokio::select! {
                e = events.recv() => match e {
                    Some(e) => if let Some(d) = delta(&e) && !send(chunk(d, Value::Null)) { return; },
                    None => break (&mut ended).await,
                },
                end = &mut ended => break end,
            }
        };
        // The run has ended: what its sink sent is all here.
        while let Ok(e) = events.try_recv() {
            if let Some(d) = delta(&e)
                && !send(chunk(d, Value::Null))
            {
                return;
            }
        }
        let record = match app.store.operation(id).await {
            Ok(Some(r)) => r,
            _ => {
                let _ = send(
                    json!({"error": {"message": format!("operation {id} could not be read"), "type": "operation_failed"}}),
                );
                return;
            }
        };
        if let Some((code, message)) = stopped(&record, &end) {
            let _ = send(
                json!({"error": {"message": message, "type": "operation_stopped", "code": code}}),
            );
        } else {
            let _ = send(chunk(json!({}), json!(finish_reason(&record))));
            if include_usage {
                let mut last = chunk(json!({}), Value::Null);
                last["choices"] = json!([]);
                last["usage"] = json!(usage_of(&record));
                let _ = send(last);
            }
        }
        let _ = out.send(Event::default().data("[DONE]"));
    });
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok(e), rx))
    }))
}

/// The OpenAI-compatible route and its document.
pub fn api() -> Api {
    Api::new().route(
        Method::Post,
        "/v1/chat/completions",
        "OpenAI Chat Completions over a rein operation (model: agent/NAME or provider/model)",
        completions,
    )
}
