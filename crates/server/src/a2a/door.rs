//! One A2A request's work: the caller and the agent its endpoint runs ([`Door`]), and what
//! each method does with rein's operations (start or decide, wait, stream, list, cancel, the
//! push configurations, the extended card).

use super::rpc::{self, A2aError, Method};
use super::{card, push, spec_of, task, watch, wire};
use crate::AppState;
use crate::error::ApiError;
use crate::routes::operations::CreateOperation;
use rein_core::OperationId;
use rein_operation::AgentProfile;
use rein_store::{A2aPush as _, OperationFilter, Store as _, User};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use wire::{ListTasksResponse, StreamResponse, TaskState};

/// One request's caller and the agent its endpoint runs.
pub(super) struct Door {
    pub(super) app: AppState,
    pub(super) user: User,
    /// `None`: the caller's default agent.
    pub(super) agent: Option<String>,
    /// What a stream checks is still valid while it follows a task.
    pub(super) credential: Option<crate::auth::Credential>,
    /// The base URL the client reached the server by (for the extended card).
    pub(super) base: String,
}

impl Door {
    /// A method answered with one JSON value.
    pub(super) async fn call(&self, method: Method, params: Value) -> Result<Value, A2aError> {
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
                let configs = self.push_configs(&p.task_id).await?;
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
                let configs = self.push_configs(&p.task_id).await?;
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

    /// The push configurations of the caller's task `task_id`.
    async fn push_configs(&self, task_id: &str) -> Result<Vec<rein_store::PushConfig>, A2aError> {
        let record = task::owned(&self.app, &self.user, task_id).await?;
        Ok(self
            .app
            .store
            .push_configs(&self.user.id, record.id)
            .await?)
    }

    /// A streaming method's items: the task as it stands, then its updates.
    pub(super) async fn stream(
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
            // rein's own tasks never wait on authentication.
            TaskState::Submitted | TaskState::Working | TaskState::AuthRequired => {
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
