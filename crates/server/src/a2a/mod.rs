//! rein as an A2A (Agent2Agent 1.0) server: other agents reach a user's agents over A2A's
//! JSON-RPC binding, each request authenticated as rein's API is (a bearer token; another
//! user's tasks are not found).
//!
//! - **Cards** (`card.rs`): `/.well-known/agent-card.json` for the default agent,
//!   `/a2a/NAME/.well-known/agent-card.json` for each agent its owner exposes (`expose: true`,
//!   as for MCP).
//! - **Endpoints**: `POST /a2a` (the default agent) and `POST /a2a/NAME`, speaking the methods
//!   of A2A 1.0 (`rpc.rs`); a request must say `A2A-Version: 1.0`.
//! - **Tasks** (`task.rs`): a task is an operation, its context the operation's topic; a message
//!   without a task starts one (on the context's conversation when it names one), a message to
//!   a task that waits (`input-required`) decides what it waits on. States: submitted (queued),
//!   working, input-required (an approval or a question, each with a data part saying which),
//!   completed (the answer as the `answer` artifact), failed, canceled, and rejected: refused
//!   before anything ran (a cap, a full slot, a setting the caller may not use), a task that
//!   is not kept.
//! - **Streams** (`watch.rs`): status and artifact updates from the operation's events, until
//!   it ends or waits; `SubscribeToTask` picks a task up again. **Push** (`push.rs`): the same
//!   updates posted to the client's URL.

mod card;
pub mod push;
mod rpc;
mod task;
mod watch;
mod wire;

use crate::AppState;
use crate::auth::AuthMode;
use crate::error::ApiError;
use crate::routes::operations::CreateOperation;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rein_core::OperationId;
use rein_operation::{AgentProfile, SpecOrigin};
use rein_store::{A2aPush as _, Accounts as _, OperationFilter, Store as _, User};
use rpc::{A2aError, Method};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use wire::{ListTasksResponse, StreamResponse, TaskState};

/// The A2A routes (outside `/v1`: documented in docs/protocols.md).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/.well-known/agent-card.json", get(server_card))
        .route("/a2a", post(default_rpc))
        .route("/a2a/{agent}", post(agent_rpc))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card))
}

/// `GET /.well-known/agent-card.json`: the default agent's card: the caller's when the request
/// carries a credential, else the server's (what a new user's default agent is).
async fn server_card(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let carries = headers.contains_key(axum::http::header::AUTHORIZATION)
        || crate::signin::cookie_secret(&headers).is_some()
        || matches!(app.auth, AuthMode::Open(_));
    let spec = if carries {
        let user = match crate::auth::caller_for(&headers, &app, false).await {
            Ok(u) => u,
            Err(e) => return e.into_response(),
        };
        match spec_of(&app, &user, None).await {
            Ok(s) => (Some(user), s),
            Err(e) => return e.into_response(),
        }
    } else {
        match app
            .runner
            .host
            .spec(&AgentProfile::default(), SpecOrigin::default())
        {
            Ok(s) => (None, s),
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    let (user, spec) = spec;
    let base = card::base_url(&headers);
    let owner = user.as_ref().map(|u| u.id.as_str());
    axum::Json(card::card(&app, owner, None, &spec, &base, "/a2a").await).into_response()
}

/// `GET /a2a/NAME/.well-known/agent-card.json`: the card of the caller's exposed agent `NAME`.
async fn agent_card(
    State(app): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    let user = match crate::auth::caller_for(&headers, &app, false).await {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = exposed(&app, &user, &agent).await {
        return e.into_response();
    }
    let spec = match spec_of(&app, &user, Some(&agent)).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let base = card::base_url(&headers);
    let endpoint = format!("/a2a/{agent}");
    axum::Json(card::card(&app, Some(&user.id), Some(&agent), &spec, &base, &endpoint).await)
        .into_response()
}

/// How `user`'s `agent` (their default one: `None`) runs.
async fn spec_of(
    app: &AppState,
    user: &User,
    agent: Option<&str>,
) -> Result<rein_core::spec::OperationSpec, ApiError> {
    let host = &app.runner.host;
    let origin = host.origin(&*app.store, &user.id).await?;
    Ok(host
        .agent_spec(
            &*app.store,
            &user.id,
            agent,
            &AgentProfile::default(),
            origin,
        )
        .await?)
}

/// `agent` is one of `user`'s, exposed; 404 otherwise.
async fn exposed(app: &AppState, user: &User, agent: &str) -> Result<(), ApiError> {
    let shown = app
        .store
        .get_agent(&user.id, agent)
        .await?
        .and_then(|a| serde_json::from_value::<AgentProfile>(a.config).ok())
        .is_some_and(|p| p.expose == Some(true));
    if shown {
        Ok(())
    } else {
        Err(ApiError::not_found(format!(
            "no exposed agent {agent} (an agent is reached over A2A once its owner sets expose: true)"
        )))
    }
}

async fn default_rpc(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    rpc(app, headers, None, body).await
}

async fn agent_rpc(
    State(app): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    rpc(app, headers, Some(agent), body).await
}

/// One JSON-RPC request: checked (origin, credential, exposed agent, version), then answered
/// as JSON or, for the streaming methods, as server-sent events (an error too: one event).
async fn rpc(
    app: AppState,
    headers: HeaderMap,
    agent: Option<String>,
    body: axum::body::Bytes,
) -> Response {
    if let Err(e) = crate::origin::own_pages_only(&headers) {
        return e.into_response();
    }
    let req = match rpc::parse(&body) {
        Ok(r) => r,
        Err((id, e)) => return axum::Json(e.answer(&id)).into_response(),
    };
    let user = match crate::auth::caller_for(&headers, &app, req.method.changes()).await {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    if let Some(a) = &agent
        && let Err(e) = exposed(&app, &user, a).await
    {
        return e.into_response();
    }
    let door = Door {
        credential: crate::auth::credential(&app, &headers),
        base: card::base_url(&headers),
        app,
        user,
        agent,
    };
    let id = req.id;
    if req.method.streams() {
        let items = match rpc::check_version(&headers) {
            Ok(()) => door.stream(req.method, req.params).await,
            Err(e) => Err(e),
        };
        let heartbeat = door.app.config.heartbeat;
        let first = match items {
            Ok(rx) => Ok(rx),
            Err(e) => Err(e.answer(&id)),
        };
        let out = futures::stream::unfold((first, id, false), |(state, id, done)| async move {
            if done {
                return None;
            }
            match state {
                Err(answer) => Some((Ok(event(&answer)), (Err(Value::Null), id, true))),
                Ok(mut rx) => {
                    let item = rx.recv().await?;
                    let answer = rpc::answer(&id, serde_json::to_value(&item).unwrap_or_default());
                    Some((
                        Ok::<_, std::convert::Infallible>(event(&answer)),
                        (Ok(rx), id, false),
                    ))
                }
            }
        });
        return Sse::new(out)
            .keep_alive(KeepAlive::new().interval(heartbeat).text(""))
            .into_response();
    }
    let result = match rpc::check_version(&headers) {
        Ok(()) => door.call(req.method, req.params).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(v) => axum::Json(rpc::answer(&id, v)).into_response(),
        Err(e) => axum::Json(e.answer(&id)).into_response(),
    }
}

fn event(answer: &Value) -> Event {
    Event::default().data(answer.to_string())
}

/// One request's caller and the agent its endpoint runs.
struct Door {
    app: AppState,
    user: User,
    /// `None`: the caller's default agent.
    agent: Option<String>,
    /// What a stream checks is still valid while it follows a task.
    credential: Option<crate::auth::Credential>,
    /// The base URL the client reached the server by (for the extended card).
    base: String,
}

impl Door {
    /// A method answered with one JSON value.
    async fn call(&self, method: Method, params: Value) -> Result<Value, A2aError> {
        let value = match method {
            Method::SendMessage => json!({"task": self.send(params).await?}),
            Method::GetTask => {
                let p: wire::GetTaskRequest = rpc::params(params)?;
                let record = task::owned(&self.app, &self.user, &p.id).await?;
                let seen = task::look(&self.app, &record).await?;
                to_value(&task::task(&record, &seen, p.history_length, true))
            }
            Method::ListTasks => to_value(&self.list(rpc::params(params)?).await?),
            Method::CancelTask => {
                let p: wire::TaskIdRequest = rpc::params(params)?;
                to_value(&self.cancel(&p.id).await?)
            }
            Method::CreateTaskPushNotificationConfig => {
                let p: wire::PushConfigWire = rpc::params(params)?;
                let Some(task_id) = p.task_id.clone() else {
                    return Err(A2aError::InvalidParams("taskId: name the task".into()));
                };
                let record = task::owned(&self.app, &self.user, &task_id).await?;
                let checked = push::check(&self.app, p).await?;
                to_value(&push::keep(&self.app, &self.user.id, record.id, checked).await?)
            }
            Method::GetTaskPushNotificationConfig => {
                let p: wire::PushConfigRef = rpc::params(params)?;
                let record = task::owned(&self.app, &self.user, &p.task_id).await?;
                let configs = self
                    .app
                    .store
                    .push_configs(&self.user.id, record.id)
                    .await?;
                let found = configs.iter().find(|c| c.id == p.id).ok_or_else(|| {
                    A2aError::InvalidParams(format!(
                        "task {} has no push configuration {}",
                        p.task_id, p.id
                    ))
                })?;
                to_value(&push::wire(found))
            }
            Method::ListTaskPushNotificationConfigs => {
                let p: wire::PushConfigsOf = rpc::params(params)?;
                let record = task::owned(&self.app, &self.user, &p.task_id).await?;
                let configs = self
                    .app
                    .store
                    .push_configs(&self.user.id, record.id)
                    .await?;
                json!({"configs": configs.iter().map(push::wire).collect::<Vec<_>>(), "nextPageToken": ""})
            }
            Method::DeleteTaskPushNotificationConfig => {
                let p: wire::PushConfigRef = rpc::params(params)?;
                let record = task::owned(&self.app, &self.user, &p.task_id).await?;
                if !self
                    .app
                    .store
                    .delete_push_config(&self.user.id, record.id, &p.id)
                    .await?
                {
                    return Err(A2aError::InvalidParams(format!(
                        "task {} has no push configuration {}",
                        p.task_id, p.id
                    )));
                }
                json!({})
            }
            Method::GetExtendedAgentCard => {
                let spec = spec_of(&self.app, &self.user, self.agent.as_deref()).await?;
                let endpoint = match &self.agent {
                    Some(a) => format!("/a2a/{a}"),
                    None => "/a2a".into(),
                };
                card::card(
                    &self.app,
                    Some(&self.user.id),
                    self.agent.as_deref(),
                    &spec,
                    &self.base,
                    &endpoint,
                )
                .await
            }
            Method::SendStreamingMessage | Method::SubscribeToTask => {
                return Err(A2aError::Internal(
                    "a streaming method answered as one value".into(),
                ));
            }
        };
        Ok(value)
    }

    /// A streaming method's items: the task as it stands, then its updates.
    async fn stream(
        &self,
        method: Method,
        params: Value,
    ) -> Result<mpsc::Receiver<StreamResponse>, A2aError> {
        let (record, first) = match method {
            Method::SendStreamingMessage => match self.begin(rpc::params(params)?).await? {
                Begun::Rejected(task) => {
                    let (tx, rx) = mpsc::channel(1);
                    let _ = tx.send(StreamResponse::Task(task)).await;
                    return Ok(rx);
                }
                Begun::Task(record) => {
                    let seen = task::look(&self.app, &record).await?;
                    (record, seen)
                }
            },
            Method::SubscribeToTask => {
                let p: wire::TaskIdRequest = rpc::params(params)?;
                let record = task::owned(&self.app, &self.user, &p.id).await?;
                let seen = task::look(&self.app, &record).await?;
                if seen.state.is_terminal() {
                    return Err(A2aError::Unsupported(format!(
                        "task {} has ended ({:?}): nothing more will happen; GetTask reads it",
                        p.id, seen.state
                    )));
                }
                (record, seen)
            }
            _ => {
                return Err(A2aError::Internal(
                    "a one-value method asked to stream".into(),
                ));
            }
        };
        let snapshot = task::task(&record, &first, None, true);
        let mut updates = watch::updates(
            self.app.clone(),
            record.id,
            first.state,
            self.credential.clone(),
        );
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(async move {
            if tx.send(StreamResponse::Task(snapshot)).await.is_err() || first.state.ends_stream() {
                return;
            }
            while let Some(item) = updates.recv().await {
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        });
        Ok(rx)
    }

    /// `SendMessage`: the task, once it ends or waits (at once with `returnImmediately`).
    async fn send(&self, params: Value) -> Result<wire::Task, A2aError> {
        let p: wire::SendMessageRequest = rpc::params(params)?;
        let quick = p
            .configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        let history = p.configuration.as_ref().and_then(|c| c.history_length);
        let record = match self.begin(p).await? {
            Begun::Rejected(task) => return Ok(task),
            Begun::Task(record) => record,
        };
        let seen = task::look(&self.app, &record).await?;
        if !quick && !seen.state.ends_stream() {
            let mut updates = watch::updates(
                self.app.clone(),
                record.id,
                seen.state,
                self.credential.clone(),
            );
            while updates.recv().await.is_some() {}
        }
        let record = task::owned(&self.app, &self.user, &record.id.to_string()).await?;
        let seen = task::look(&self.app, &record).await?;
        Ok(task::task(&record, &seen, history, true))
    }

    /// Take a message: a new task, or decisions on what a waiting task waits on.
    async fn begin(&self, p: wire::SendMessageRequest) -> Result<Begun, A2aError> {
        let said = task::Said::of(&p.message)?;
        // Checked before anything runs: a bad URL refuses the message, not half of it.
        let push = match p
            .configuration
            .and_then(|c| c.task_push_notification_config)
        {
            Some(wanted) => Some(push::check(&self.app, wanted).await?),
            None => None,
        };
        let record = match &p.message.task_id {
            Some(task_id) => {
                let record = task::owned(&self.app, &self.user, task_id).await?;
                if p.message
                    .context_id
                    .as_ref()
                    .is_some_and(|c| *c != record.topic_id)
                {
                    return Err(A2aError::InvalidParams(format!(
                        "message.contextId: task {task_id} belongs to context {}",
                        record.topic_id
                    )));
                }
                self.reply(&record, &said).await?;
                record
            }
            None => match self.start(&p.message, &said).await? {
                Ok(record) => record,
                Err(rejected) => return Ok(Begun::Rejected(rejected)),
            },
        };
        if let Some(push) = push {
            push::keep(&self.app, &self.user.id, record.id, push).await?;
        }
        Ok(Begun::Task(record))
    }

    /// A new task for `message`; `Err` with a rejected task when rein refused to start it.
    async fn start(
        &self,
        message: &wire::Message,
        said: &task::Said,
    ) -> Result<Result<rein_store::OperationRecord, wire::Task>, A2aError> {
        let mut input = said.text.clone();
        for d in &said.data {
            // Data the client sends with a request is part of what it asks.
            input.push_str(&format!("\n\n```json\n{}\n```", Value::Object(d.clone())));
        }
        if !crate::routes::says_something(&input) {
            return Err(A2aError::InvalidParams(
                "message.parts: say what to do in a text part".into(),
            ));
        }
        let created = crate::routes::operations::start(
            &self.app,
            self.user.clone(),
            CreateOperation {
                input: Some(input.trim().to_owned()),
                edit: None,
                regenerate: None,
                agent: self.agent.clone(),
                group: None,
                topic: message.context_id.clone(),
                attachments: Vec::new(),
                profile: AgentProfile::default(),
            },
        )
        .await;
        let created = match created {
            Ok(c) => c,
            Err(e)
                if e.status.is_client_error()
                    && !matches!(
                        e.status,
                        axum::http::StatusCode::BAD_REQUEST | axum::http::StatusCode::NOT_FOUND
                    ) =>
            {
                return Ok(Err(rejected(message, &e)));
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Ok(task::owned(
            &self.app,
            &self.user,
            &created.operation_id,
        )
        .await?))
    }

    /// Decide what waiting task `record` waits on with `said`.
    async fn reply(
        &self,
        record: &rein_store::OperationRecord,
        said: &task::Said,
    ) -> Result<(), A2aError> {
        let seen = task::look_with(&self.app, record, false).await?;
        match seen.state {
            TaskState::InputRequired => {}
            TaskState::Submitted | TaskState::Working => {
                return Err(A2aError::Unsupported(format!(
                    "task {} is working: it takes a message when it asks for one (input-required)",
                    record.id
                )));
            }
            TaskState::Completed
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected => {
                return Err(A2aError::Unsupported(format!(
                    "task {} has ended: send a new message (with contextId {} to continue the conversation)",
                    record.id, record.topic_id
                )));
            }
        }
        let pending = crate::routes::front_turn::waiting(&self.app, record.id).await?;
        let decisions = task::decisions(&pending, said)?;
        let decided: Vec<String> = decisions.iter().map(|d| d.tool_call_id.clone()).collect();
        crate::routes::operations::apply_decisions(&self.app, &self.user, record, decisions)
            .await?;
        // The run that continues records the decisions: until it has, the task would still
        // read as waiting on them, and a stream of it would end at once.
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while tokio::time::Instant::now() < until {
            let still = crate::routes::front_turn::waiting(&self.app, record.id).await?;
            if !still
                .iter()
                .any(|w| decided.contains(&w.call.id.to_string()))
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// `CancelTask`: a waiting task ends now, a working one at its next step.
    async fn cancel(&self, id: &str) -> Result<wire::Task, A2aError> {
        let record = task::owned(&self.app, &self.user, id).await?;
        let seen = task::look_with(&self.app, &record, false).await?;
        if seen.state.is_terminal() {
            return Err(A2aError::TaskNotCancelable(format!(
                "task {id} has ended ({:?})",
                seen.state
            )));
        }
        self.app
            .runner
            .driver()
            .cancel(record.id)
            .await
            .map_err(|e| A2aError::from(ApiError::from(e)))?;
        let record = task::owned(&self.app, &self.user, id).await?;
        let seen = task::look(&self.app, &record).await?;
        Ok(task::task(&record, &seen, Some(0), true))
    }

    /// `ListTasks`: the caller's tasks on this endpoint's agent, newest first.
    async fn list(&self, p: wire::ListTasksRequest) -> Result<ListTasksResponse, A2aError> {
        let page_size = p.page_size.unwrap_or(50);
        if !(1..=100).contains(&page_size) {
            return Err(A2aError::InvalidParams("pageSize: 1 to 100".into()));
        }
        let offset: usize = match p.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => 0,
            Some(t) => t.parse().map_err(|_| {
                A2aError::InvalidParams("pageToken: not one this server gave".into())
            })?,
        };
        if let Some(c) = &p.context_id {
            rein_operation::check_topic_id(c)
                .map_err(|e| A2aError::InvalidParams(format!("contextId: {e}")))?;
        }
        let records = self
            .app
            .store
            .list_operations(&OperationFilter {
                owner: Some(self.user.id.clone()),
                agent: self.agent.clone(),
                topic: p.context_id.clone(),
                top_level: true,
                limit: 1000,
                ..Default::default()
            })
            .await?;
        // States first (no answers read), answers only for the page's tasks that show them.
        let mut matching = Vec::new();
        for r in records {
            let seen = task::look_with(&self.app, &r, false).await?;
            if p.status.is_none_or(|s| s == seen.state) {
                matching.push((r, seen));
            }
        }
        let total = matching.len();
        let history = p.history_length.unwrap_or(0);
        let mut tasks = Vec::new();
        for (r, seen) in matching.into_iter().skip(offset).take(page_size as usize) {
            let seen = if seen.state == TaskState::Completed && (p.include_artifacts || history > 0)
            {
                task::look(&self.app, &r).await?
            } else {
                seen
            };
            tasks.push(task::task(&r, &seen, Some(history), p.include_artifacts));
        }
        let next = offset + tasks.len();
        Ok(ListTasksResponse {
            tasks,
            next_page_token: if next < total {
                next.to_string()
            } else {
                String::new()
            },
            page_size,
            total_size: u32::try_from(total).unwrap_or(u32::MAX),
        })
    }
}

/// What taking a message led to.
enum Begun {
    /// A task, new or decided.
    Task(rein_store::OperationRecord),
    /// Refused before anything ran.
    Rejected(wire::Task),
}

/// The task rein refused to start for `message`, with why (not kept: nothing ran).
fn rejected(message: &wire::Message, e: &ApiError) -> wire::Task {
    let id = OperationId::new().to_string();
    let context = message.context_id.clone().unwrap_or_default();
    wire::Task {
        id: id.clone(),
        context_id: context.clone(),
        status: wire::TaskStatus {
            state: TaskState::Rejected,
            message: Some(wire::Message {
                message_id: format!("{id}-rejected"),
                context_id: Some(context),
                task_id: Some(id),
                role: wire::Role::Agent,
                parts: vec![wire::Part::text(e.message.clone())],
                metadata: Some(json!({"code": e.code})),
            }),
            timestamp: Some(chrono::Utc::now().to_rfc3339()),
        },
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}
