//! Running an operation on a remote agent over A2A (`a2a:NAME`): the agent, registered by the
//! operation's owner, is the brain and the executor. rein sends it the operation's task in
//! the context `rein-OPERATION` and follows the remote task it becomes: its answer is the
//! operation's, its `input-required` is the operation's question (answered like any other, the
//! answer sent back), a cancel is sent on as `CancelTask`, and the budget applies to the usage
//! it reports (`metadata.rein` as rein's own A2A server reports it), the time limit to the wall
//! clock.
//!
//! Nothing is sent twice: the commit that marks the run as running comes before the message,
//! the remote task's id is kept with the first update that names it, and a process that
//! finds the operation running without one asks the agent for the tasks of its context
//! (`ListTasks`) before sending. An answer is kept with the decision and sent only while the
//! remote task still waits for it.

use super::external::{Stop, deadline_of, external_step, sleep_until};
use super::open::Loaded;
use super::{Decision, Driver, RunEnd, derived_message_id, end_of};
use crate::a2a::client::{Client, Updates};
use crate::a2a::wire::{
    self, GetTaskRequest, ListTasksRequest, ListTasksResponse, Part, Role, SendConfiguration,
    SendMessageRequest, StreamResponse, Task, TaskIdRequest, TaskState,
};
use crate::a2a::{RemoteAgent, RemoteError};
use crate::error::DriverError;
use crate::external::record::{Priced, emit, record};
use crate::external::transcript::ObservedStep;
use rein_core::engine::{StepResult, answer_tool_call, reject_tool_call};
use rein_core::event::EventKind;
use rein_core::failure::Fault;
use rein_core::message::{ExternalSession, Role as MessageRole, ToolStatus};
use rein_core::question::{ASK_API, ASK_USER, Answer, Question, QuestionOption};
use rein_core::state::{BudgetKind, FinishReason, RemoteTask, Status};
use rein_core::usage::TokenUsage;
use rein_core::{Message, ToolCall, Usd};
use rein_store::InterventionStatus;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How often a remote task that is not streamed (or whose stream ended early) is looked at.
const POLL_EVERY: Duration = Duration::from_millis(500);
/// How often a streamed task's spending is looked at, under a budget.
const USAGE_EVERY: Duration = Duration::from_millis(500);

/// Whether a token or cost limit binds the operation (its own, or its parent tree's).
fn has_limits(spec: &rein_core::spec::OperationSpec) -> bool {
    let own = &spec.budget;
    let above = spec.delegation.as_ref().map(|d| &d.parent_budget);
    own.max_tokens.is_some()
        || own.max_cost.is_some()
        || above.is_some_and(|b| b.max_tokens.is_some() || b.max_cost.is_some())
}

/// The A2A context of operation `id`'s remote task: one per operation, so a process
/// continuing it finds the task there.
fn context_of(id: rein_core::OperationId) -> String {
    format!("rein-{id}")
}

/// Where a remote task stands after an update, as far as the run is concerned.
enum Turn {
    /// Still working.
    Working,
    /// It asks (the status message).
    Asks(Option<wire::Message>),
    /// It answered.
    Completed(Option<wire::Message>),
    /// It ended without an answer (failed, rejected, cancelled, wants authentication).
    Ended(TaskState, Option<wire::Message>),
}

fn turn_of(state: TaskState, message: Option<wire::Message>) -> Turn {
    match state {
        TaskState::Submitted | TaskState::Working => Turn::Working,
        TaskState::InputRequired => Turn::Asks(message),
        TaskState::Completed => Turn::Completed(message),
        TaskState::Failed | TaskState::Canceled | TaskState::Rejected | TaskState::AuthRequired => {
            Turn::Ended(state, message)
        }
    }
}

/// The text parts of `parts`, joined.
fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the remote task has produced so far: its artifacts' text, by artifact, in order.
#[derive(Default)]
struct Produced {
    artifacts: Vec<(String, String)>,
    /// Usage as the agent last reported it (tokens, cost).
    reported: Option<(u64, Option<Usd>)>,
}

impl Produced {
    fn artifact(&mut self, id: &str, text: String, append: bool) {
        match self.artifacts.iter_mut().find(|(a, _)| a == id) {
            Some((_, t)) if append => t.push_str(&text),
            Some((_, t)) => *t = text,
            None => self.artifacts.push((id.to_owned(), text)),
        }
    }

    fn of_task(&mut self, task: &Task) {
        for a in &task.artifacts {
            self.artifact(&a.artifact_id, text_of(&a.parts), false);
        }
        if let Some(rein) = task.metadata.as_ref().and_then(|m| m.get("rein")) {
            let tokens = rein.get("totalTokens").and_then(Value::as_u64);
            let cost = rein
                .get("cost")
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite() && *c >= 0.0)
                .map(Usd::from_dollars);
            if let Some(tokens) = tokens {
                self.reported = Some((tokens, cost));
            }
        }
    }

    fn answer(&self, message: Option<&wire::Message>) -> String {
        let from_artifacts: Vec<&str> = self
            .artifacts
            .iter()
            .map(|(_, t)| t.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        if from_artifacts.is_empty() {
            message.map(|m| text_of(&m.parts)).unwrap_or_default()
        } else {
            from_artifacts.join("\n\n")
        }
    }
}

/// The question a remote agent's `input-required` status asks, as rein asks it: a rein
/// agent's pending approvals as approve / reject, its question with its options, any other
/// agent's message as a free-text question.
fn question_of(agent: &str, message: Option<&wire::Message>) -> Question {
    let data: Vec<&Value> = message
        .into_iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.data.as_ref())
        .collect();
    let text = message.map(|m| text_of(&m.parts)).unwrap_or_default();
    let approvals: Vec<&&Value> = data
        .iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("approval"))
        .collect();
    if !approvals.is_empty() {
        let calls: Vec<String> = approvals
            .iter()
            .map(|d| {
                format!(
                    "{} {}",
                    d.get("tool").and_then(Value::as_str).unwrap_or("a tool"),
                    d.get("arguments").map(Value::to_string).unwrap_or_default()
                )
            })
            .collect();
        return Question {
            question: clip(&format!(
                "The remote agent `{agent}` asks to run: {}. {text}",
                calls.join("; ")
            )),
            options: vec![
                QuestionOption {
                    key: "approve".into(),
                    label: "Approve".into(),
                },
                QuestionOption {
                    key: "reject".into(),
                    label: "Reject".into(),
                },
            ],
            default: None,
            expires_in_secs: None,
        };
    }
    let asked = data
        .iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some("question"));
    let options: Vec<QuestionOption> = asked
        .and_then(|d| d.get("options"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|o| {
                    let key = o.get("key").and_then(Value::as_str)?;
                    let label = o.get("label").and_then(Value::as_str).unwrap_or(key);
                    Some(QuestionOption {
                        key: key.chars().take(100).collect(),
                        label: label.chars().take(500).collect(),
                    })
                })
                .take(20)
                .collect()
        })
        .unwrap_or_default();
    let question = asked
        .and_then(|d| d.get("question"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .filter(|q| !q.trim().is_empty())
        .unwrap_or(text);
    Question {
        question: clip(&format!("The remote agent `{agent}` asks: {question}")),
        options,
        default: None,
        expires_in_secs: None,
    }
}

fn clip(text: &str) -> String {
    text.chars().take(4000).collect()
}

/// The reply carrying `answer` to the remote task waiting on `asked` (its status message).
fn reply_parts(asked: Option<&wire::Message>, answer: &Answer) -> Vec<Part> {
    let data: Vec<&Value> = asked
        .into_iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| p.data.as_ref())
        .collect();
    let kind = |k: &str| {
        data.iter()
            .any(|d| d.get("kind").and_then(Value::as_str) == Some(k))
    };
    let said = match answer {
        Answer::Text(t) | Answer::Option(t) => t.clone(),
    };
    if kind("approval") {
        let decision = if said.trim().eq_ignore_ascii_case("approve") {
            "approve"
        } else {
            "reject"
        };
        return vec![Part::data(json!({"decision": decision}))];
    }
    if kind("question") {
        return vec![match answer {
            Answer::Option(key) => Part::data(json!({"option": key})),
            Answer::Text(t) => Part::data(json!({"answer": t})),
        }];
    }
    vec![Part::text(said)]
}

impl Driver {
    /// Run operation `run` on the remote agent `name` (see the module's documentation).
    pub(super) async fn drive_a2a(
        &self,
        run: &mut Loaded,
        name: &str,
    ) -> Result<RunEnd, DriverError> {
        match run.committed.status {
            s if s.is_terminal() => return Ok(end_of(&run.committed)),
            Status::Interrupted => return self.settle_cancel(run, "cancelled on request").await,
            // Parked on the remote agent's question: a decision continues it.
            Status::WaitingForHuman => return Ok(end_of(&run.committed)),
            _ => {}
        }
        let remote = match self.remote_agent(run, name).await {
            Ok(r) => r,
            Err(why) => return self.remote_failed(run, why).await,
        };
        let client = match Client::new(&remote).await {
            Ok(c) => c,
            Err(e) => return self.remote_failed(run, e.to_string()).await,
        };
        if run.cancel_requested {
            return self.settle_cancel(run, "cancelled on request").await;
        }
        match self.follow(run, name, &remote, &client).await {
            Ok(end) => Ok(end),
            Err(Failed::Driver(e)) => Err(e),
            Err(Failed::Remote(e)) => self.remote_failed(run, e.to_string()).await,
        }
    }

    /// The registered remote agent `name` of the operation's owner; why it cannot be used.
    async fn remote_agent(&self, run: &Loaded, name: &str) -> Result<RemoteAgent, String> {
        let Some(agents) = &self.agents else {
            return Err(format!(
                "remote agent `{name}`: this process has no agent directory to find it in"
            ));
        };
        let found = agents
            .agent(run.spec.owner.as_deref(), name)
            .await
            .map_err(|e| format!("remote agent `{name}` could not be read: {e}"))?;
        found.and_then(|a| a.profile.a2a).ok_or_else(|| {
            format!(
                "there is no remote agent `{name}` (register one with `rein agent create {name} --a2a-url URL`)"
            )
        })
    }

    /// Send, or follow, the operation's remote task until it answers, asks, ends or a limit
    /// stops it.
    async fn follow(
        &self,
        run: &mut Loaded,
        name: &str,
        remote: &RemoteAgent,
        client: &Client,
    ) -> Result<RunEnd, Failed> {
        let context = context_of(run.id);
        let mut task = run.committed.metadata.remote_task.clone();
        // A process that stopped after marking the run but before keeping the task's id may
        // have sent it: the agent's tasks in the context say.
        if task.is_none() && run.committed.status == Status::Running {
            let found: ListTasksResponse = client
                .call(
                    "ListTasks",
                    &ListTasksRequest {
                        context_id: Some(context.clone()),
                        page_size: Some(10),
                        ..Default::default()
                    },
                )
                .await?;
            task = found.tasks.first().map(|t| RemoteTask {
                id: t.id.clone(),
                answer: None,
            });
        }
        if run.committed.status != Status::Running || task != run.committed.metadata.remote_task {
            let mut started = run.committed.clone();
            started.status = Status::Running;
            started.metadata.remote_task = task.clone();
            self.commit(run, external_step(started, Vec::new())).await?;
        }
        let mut produced = Produced::default();
        let mut stream: Option<Updates<'_>> = None;
        // Decided from where the task stands: send, reply, follow, or finish.
        match &task {
            None => {
                let message = wire::Message {
                    message_id: derived_message_id(run.id, 0).to_string(),
                    context_id: Some(context.clone()),
                    task_id: None,
                    role: Role::User,
                    parts: vec![Part::text(self.task_text(run))],
                    metadata: None,
                };
                stream = Some(self.send(client, remote, message).await?);
                // Crash tests stop here: sent, the task's id not kept yet.
                super::pause_point("a2a:sent").await;
            }
            Some(t) => {
                // Kept by the commit above, so `look` finds it.
                let Some(now) = look(client, run).await? else {
                    return Err(RemoteError::Transport {
                        endpoint: client.endpoint().to_owned(),
                        why: "the remote task was not kept".into(),
                    }
                    .into());
                };
                produced.of_task(&now);
                match (&t.answer, now.status.state) {
                    (Some(answer), TaskState::InputRequired) => {
                        let message = wire::Message {
                            message_id: derived_message_id(run.id, run.seq).to_string(),
                            context_id: Some(now.context_id.clone()),
                            task_id: Some(now.id.clone()),
                            role: Role::User,
                            parts: reply_parts(now.status.message.as_ref(), answer),
                            metadata: None,
                        };
                        stream = Some(self.send(client, remote, message).await?);
                        self.answer_sent(run).await?;
                    }
                    (Some(_), _) => self.answer_sent(run).await?,
                    (None, TaskState::InputRequired) => {
                        return Ok(self.ask(run, name, now.status.message.as_ref()).await?);
                    }
                    (None, s) if s.is_terminal() => {
                        let turn = turn_of(s, now.status.message.clone());
                        return self.finish(run, name, &produced, turn).await;
                    }
                    (None, _) => {
                        if remote.card.streaming {
                            stream = Some(
                                client
                                    .stream("SubscribeToTask", &TaskIdRequest { id: t.id.clone() })
                                    .await?,
                            );
                        }
                    }
                }
            }
        }
        let deadline = deadline_of(&run.spec);
        let watcher = self.watch_cancel(run.id);
        let outcome = self
            .read(run, name, client, &mut stream, &mut produced, deadline)
            .await;
        drop(watcher);
        drop(stream);
        let (turn, stop) = outcome?;
        if let Some(stop) = stop {
            if !matches!(stop, Stop::Cancelled) {
                self.cancel_remote(client, run).await;
            }
            return Ok(self
                .end_stopped(run, stop, "the remote agent's task was cancelled")
                .await?);
        }
        match turn {
            Turn::Asks(message) => Ok(self.ask(run, name, message.as_ref()).await?),
            turn => self.finish(run, name, &produced, turn).await,
        }
    }

    /// The operation's task as the remote agent is asked it: its last user message.
    fn task_text(&self, run: &Loaded) -> String {
        run.committed
            .messages
            .iter()
            .rev()
            .find(|m| m.role == MessageRole::User)
            .map(|m| m.text_content())
            .unwrap_or_default()
    }

    /// Send `message`: streamed when the agent streams, else sent to return at once (the
    /// task is then looked at until it answers or asks).
    async fn send<'c>(
        &self,
        client: &'c Client,
        remote: &RemoteAgent,
        message: wire::Message,
    ) -> Result<Updates<'c>, RemoteError> {
        if remote.card.streaming {
            let request = SendMessageRequest {
                message,
                configuration: None,
            };
            return client.stream("SendStreamingMessage", &request).await;
        }
        let request = SendMessageRequest {
            message,
            configuration: Some(SendConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
        };
        client.once("SendMessage", &request).await
    }

    /// Read the task's updates (then look at it until it answers, asks or ends): where it
    /// ended up, or what stopped the run first.
    async fn read(
        &self,
        run: &mut Loaded,
        name: &str,
        client: &Client,
        stream: &mut Option<Updates<'_>>,
        produced: &mut Produced,
        deadline: Option<Instant>,
    ) -> Result<(Turn, Option<Stop>), Failed> {
        let mut warned: Vec<BudgetKind> = Vec::new();
        // With a budget, what the task has spent is looked at while it streams too (an agent
        // may work long between updates).
        let limited = has_limits(&run.spec);
        let mut tick = tokio::time::interval(USAGE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let update = tokio::select! {
                u = next_update(stream) => Some(u),
                _ = tick.tick(), if limited && stream.is_some() => None,
                () = self.cancel.cancelled() => return Ok((Turn::Working, Some(Stop::Cancelled))),
                () = sleep_until(deadline) => {
                    let secs = run.spec.time_limit_secs.unwrap_or_default();
                    return Ok((Turn::Working, Some(Stop::Time(secs))));
                }
            };
            let (state, message) = match update {
                // The budget's look.
                None => {
                    self.refresh(run, client, produced).await;
                    if let Some(stop) = self.spent(run, name, produced, &mut warned).await? {
                        return Ok((Turn::Working, Some(stop)));
                    }
                    continue;
                }
                Some(Some(Ok(u))) => match self.take_update(run, u, produced).await? {
                    Some(s) => s,
                    None => continue,
                },
                Some(Some(Err(e))) => return Err(e.into()),
                // No stream (or it ended): the task as it stands.
                Some(None) => {
                    let Some(now) = look(client, run).await? else {
                        return Err(RemoteError::Transport {
                            endpoint: client.endpoint().to_owned(),
                            why: "the agent's answer named no task".into(),
                        }
                        .into());
                    };
                    produced.of_task(&now);
                    if !now.status.state.ends_stream() {
                        if let Some(stop) = self.spent(run, name, produced, &mut warned).await? {
                            return Ok((Turn::Working, Some(stop)));
                        }
                        tokio::time::sleep(POLL_EVERY).await;
                        continue;
                    }
                    (now.status.state, now.status.message)
                }
            };
            // A status change: what it has spent so far (a rein agent reports it on the task).
            self.refresh(run, client, produced).await;
            if state.ends_stream() {
                return Ok((turn_of(state, message), None));
            }
            if let Some(stop) = self.spent(run, name, produced, &mut warned).await? {
                return Ok((Turn::Working, Some(stop)));
            }
        }
    }

    /// Read what the task reports having spent (and produced) now, when its id is known; a
    /// failed look leaves the last figures.
    async fn refresh(&self, run: &Loaded, client: &Client, produced: &mut Produced) {
        match look(client, run).await {
            Ok(Some(now)) => produced.of_task(&now),
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(operation = %run.id, error = %e, "a remote task could not be looked at")
            }
        }
    }

    /// Take one update: keep the task's id the first time it is named; the state it reports
    /// (`None` for an artifact).
    async fn take_update(
        &self,
        run: &mut Loaded,
        update: StreamResponse,
        produced: &mut Produced,
    ) -> Result<Option<(TaskState, Option<wire::Message>)>, Failed> {
        let (task_id, out) = match update {
            StreamResponse::Task(t) => {
                produced.of_task(&t);
                (Some(t.id.clone()), Some((t.status.state, t.status.message)))
            }
            StreamResponse::StatusUpdate(e) => {
                (Some(e.task_id), Some((e.status.state, e.status.message)))
            }
            StreamResponse::ArtifactUpdate(e) => {
                produced.artifact(
                    &e.artifact.artifact_id,
                    text_of(&e.artifact.parts),
                    e.append,
                );
                (Some(e.task_id), None)
            }
            // An answer without a task: nothing to follow.
            StreamResponse::Message(m) => (None, Some((TaskState::Completed, Some(m)))),
        };
        if let Some(id) = task_id
            && run.committed.metadata.remote_task.is_none()
        {
            let mut kept = run.committed.clone();
            kept.metadata.remote_task = Some(RemoteTask { id, answer: None });
            self.commit(run, external_step(kept, Vec::new())).await?;
        }
        Ok(out)
    }

    /// Record what the agent reported spending beyond what is recorded; the limit that
    /// stops the run now, if one does (a `warn` policy only reports it, once per limit).
    async fn spent(
        &self,
        run: &mut Loaded,
        name: &str,
        produced: &Produced,
        warned: &mut Vec<BudgetKind>,
    ) -> Result<Option<Stop>, DriverError> {
        if let Some((tokens, cost)) = produced.reported {
            let mut state = run.committed.clone();
            if add_reported(&mut state, name, tokens, cost) {
                self.commit(run, external_step(state, Vec::new())).await?;
            }
        }
        self.over_limit(run, warned).await
    }

    /// The answer has been sent (or is no longer wanted): forget it.
    async fn answer_sent(&self, run: &mut Loaded) -> Result<(), DriverError> {
        let mut state = run.committed.clone();
        if let Some(t) = state.metadata.remote_task.as_mut() {
            t.answer = None;
        }
        self.commit(run, external_step(state, Vec::new())).await?;
        Ok(())
    }

    /// Park the operation on the remote agent's question: an assistant message that asks it
    /// with rein's question tool, waiting for a person like any question.
    async fn ask(
        &self,
        run: &mut Loaded,
        name: &str,
        message: Option<&wire::Message>,
    ) -> Result<RunEnd, DriverError> {
        let question = question_of(name, message);
        let commit = run.seq + 1;
        let mut state = run.committed.clone();
        state.step_count += 1;
        let id = derived_message_id(run.id, commit);
        let call = ToolCall::new(
            format!("a2a-ask-{commit}"),
            ASK_USER,
            ASK_API,
            serde_json::to_string(&question).unwrap_or_default(),
        );
        let mut assistant = Message::assistant(String::new());
        assistant.id = id;
        assistant.parent_id = state
            .messages
            .iter()
            .rev()
            .find(|m| m.role != MessageRole::System)
            .map(|m| m.id);
        assistant.tool_calls = vec![call.clone()];
        assistant.model = Some(format!("a2a/{name}"));
        assistant.external_session = remote_session(&state);
        state.push_message(assistant);
        let pending = Message::tool_result(&call, Some(id), ToolStatus::Pending, "");
        state.push_message(pending);
        state.usage.human.prompt_requests += 1;
        state.pending_tool_calls = vec![call.clone()];
        state.pending_parent_message_id = Some(id);
        state.status = Status::WaitingForHuman;
        let events = emit(
            &mut state,
            vec![
                EventKind::StepStart {
                    phase: "remote_agent".into(),
                },
                EventKind::HumanApproveRequired {
                    pending_tool_calls: vec![call.clone()],
                    parent_message_id: Some(id),
                    reasons: Default::default(),
                },
            ],
        );
        self.publish(&events);
        let mut step = external_step(state, events);
        step.approvals = vec![rein_core::engine::Approval { call, reason: None }];
        self.commit(run, step).await?;
        Ok(end_of(&run.committed))
    }

    /// End the run as the remote task ended.
    async fn finish(
        &self,
        run: &mut Loaded,
        name: &str,
        produced: &Produced,
        turn: Turn,
    ) -> Result<RunEnd, Failed> {
        // What it spent is recorded; the task has ended, so no limit stops it now.
        self.spent(run, name, produced, &mut Vec::new()).await?;
        match turn {
            Turn::Completed(message) => {
                let answer = produced.answer(message.as_ref());
                let mut state = run.committed.clone();
                let step = ObservedStep {
                    text: answer,
                    ..Default::default()
                };
                let session = remote_session(&state);
                let events = record(
                    &mut state,
                    run.seq + 1,
                    "a2a",
                    Some(name),
                    session,
                    step,
                    Priced::default(),
                );
                self.publish(&events);
                self.commit(run, external_step(state, events)).await?;
                Ok(self
                    .end_external(run, Ok((FinishReason::Completed, String::new())))
                    .await?)
            }
            Turn::Ended(state, message) => {
                let said = message
                    .as_ref()
                    .map(|m| text_of(&m.parts))
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| format!(": {t}"))
                    .unwrap_or_default();
                let what = match state {
                    TaskState::Rejected => "refused the task",
                    TaskState::Canceled => "cancelled the task",
                    TaskState::AuthRequired => {
                        "asks for authentication rein cannot give (set its token with --token-env)"
                    }
                    TaskState::Failed
                    | TaskState::Submitted
                    | TaskState::Working
                    | TaskState::InputRequired
                    | TaskState::Completed => "failed",
                };
                Err(Failed::Remote(RemoteError::TaskEnded {
                    agent: name.to_owned(),
                    why: format!("{what}{said}"),
                }))
            }
            Turn::Working | Turn::Asks(_) => Err(Failed::Remote(RemoteError::TaskEnded {
                agent: name.to_owned(),
                why: "stopped answering before its task ended".into(),
            })),
        }
    }

    /// Tell remote agent `name` to cancel the operation's task, when it has one (best effort:
    /// the run ends either way).
    pub(super) async fn cancel_remote_task(&self, run: &Loaded, name: &str) {
        if run.committed.metadata.remote_task.is_none() {
            return;
        }
        match self.remote_agent(run, name).await {
            Ok(remote) => match Client::new(&remote).await {
                Ok(client) => self.cancel_remote(&client, run).await,
                Err(e) => {
                    tracing::warn!(operation = %run.id, error = %e, "the remote agent's task could not be cancelled");
                }
            },
            Err(why) => {
                tracing::warn!(operation = %run.id, error = %why, "the remote agent's task could not be cancelled");
            }
        }
    }

    /// Tell the remote agent to cancel the task (best effort: the run ends either way).
    async fn cancel_remote(&self, client: &Client, run: &Loaded) {
        let Some(task) = &run.committed.metadata.remote_task else {
            return;
        };
        if let Err(e) = client
            .call::<Value>(
                "CancelTask",
                &TaskIdRequest {
                    id: task.id.clone(),
                },
            )
            .await
        {
            tracing::warn!(operation = %run.id, error = %e, "the remote agent's task could not be cancelled");
        }
    }

    async fn remote_failed(&self, run: &mut Loaded, why: String) -> Result<RunEnd, DriverError> {
        self.end_external(run, Err((Fault::RemoteAgentFailed, why)))
            .await
    }

    /// A person's decision `by` someone on the remote agent's question `call`: tried on a copy
    /// of the state first (a decision that does not fit writes nothing), then taken once (the
    /// intervention), committed with the answer kept, and sent (see the module's
    /// documentation). Approving is refused (a question is answered); rejecting declines it,
    /// or with `halt` cancels the remote task and stops.
    pub(super) async fn decide_a2a(
        &self,
        run: &mut Loaded,
        name: &str,
        call: &str,
        decision: &Decision,
        by: Option<&str>,
    ) -> Result<RunEnd, DriverError> {
        let state = run.committed.clone();
        let (mut decided, send, status, reason) = match decision {
            Decision::Approve => {
                return Err(
                    rein_core::engine::DecisionError::QuestionNeedsAnswer(call.to_owned()).into(),
                );
            }
            Decision::Answer(answer) => {
                let (decided, _) = answer_tool_call(state, call, answer)?;
                let said = match answer {
                    Answer::Text(t) | Answer::Option(t) => t.as_str(),
                };
                (
                    decided,
                    Some(answer.clone()),
                    InterventionStatus::Answered,
                    Some(said),
                )
            }
            Decision::Reject { reason, halt } => {
                let (decided, _) = reject_tool_call(state, call, reason.as_deref(), *halt)?;
                let declined = Answer::Text(format!(
                    "(declined{})",
                    reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ));
                (
                    decided,
                    (!*halt).then_some(declined),
                    InterventionStatus::Rejected,
                    reason.as_deref(),
                )
            }
        };
        // Single-use: a concurrent second decision fails here, before anything is committed.
        self.store
            .decide_intervention(run.id, call, status, by, reason)
            .await?;
        let halted = send.is_none();
        if let Some(t) = decided.metadata.remote_task.as_mut() {
            t.answer = send;
        }
        self.commit(run, StepResult::transition(decided, Vec::new(), None))
            .await?;
        if halted {
            return self
                .settle_cancel(run, "the person stopped the remote agent")
                .await;
        }
        self.drive_a2a(run, name).await
    }
}

/// Record what the agent reports having spent in all (`tokens`, `cost`) beyond what `state`
/// holds under `a2a/NAME`; whether anything was added.
fn add_reported(
    state: &mut rein_core::AgentState,
    name: &str,
    tokens: u64,
    cost: Option<Usd>,
) -> bool {
    let key = format!("a2a/{name}");
    let t = &state.usage.llm.tokens;
    let counted = t.total.max(t.input + t.output);
    let mut changed = false;
    if tokens > counted {
        let extra = TokenUsage {
            total: tokens - counted,
            ..Default::default()
        };
        state.usage.record_llm(&key, &extra, 0);
        changed = true;
    }
    if let Some(cost) = cost
        && cost > state.cost.total
    {
        state
            .cost
            .record_llm(&key, cost.saturating_sub(state.cost.total));
        changed = true;
    }
    changed
}

/// The operation's remote task as it stands now (`None` before its id is known).
async fn look(client: &Client, run: &Loaded) -> Result<Option<Task>, RemoteError> {
    let Some(task) = &run.committed.metadata.remote_task else {
        return Ok(None);
    };
    let request = GetTaskRequest {
        id: task.id.clone(),
        history_length: Some(0),
    };
    client.call("GetTask", &request).await.map(Some)
}

/// The remote task as an assistant message names it.
fn remote_session(state: &rein_core::AgentState) -> Option<ExternalSession> {
    state
        .metadata
        .remote_task
        .as_ref()
        .map(|t| ExternalSession {
            kind: "a2a".into(),
            id: t.id.clone(),
        })
}

/// The next update of `stream`; `None` without one or once it has ended.
async fn next_update(
    stream: &mut Option<Updates<'_>>,
) -> Option<Result<StreamResponse, RemoteError>> {
    let s = stream.as_mut()?;
    let next = s.next().await;
    if next.is_none() {
        *stream = None;
    }
    next
}

/// Why following a remote task stopped short.
enum Failed {
    /// The store or the driver.
    Driver(DriverError),
    /// The remote agent (the run ends failed, saying so).
    Remote(RemoteError),
}

impl From<DriverError> for Failed {
    fn from(e: DriverError) -> Self {
        Failed::Driver(e)
    }
}

impl From<RemoteError> for Failed {
    fn from(e: RemoteError) -> Self {
        Failed::Remote(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(parts: Vec<Part>) -> wire::Message {
        wire::Message {
            message_id: "m".into(),
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts,
            metadata: None,
        }
    }

    #[test]
    fn a_remote_question_is_asked_and_answered_in_the_remote_agents_terms() {
        // A rein agent's approval: approve / reject, sent back as a decision.
        let approval = asked(vec![
            Part::text("waiting for approval"),
            Part::data(
                json!({"kind": "approval", "toolCallId": "c1", "tool": "shell/run", "arguments": {"command": "ls"}}),
            ),
        ]);
        let q = question_of("helper", Some(&approval));
        assert!(q.question.contains("shell/run"), "{}", q.question);
        assert_eq!(q.options.len(), 2);
        let parts = reply_parts(Some(&approval), &Answer::Option("approve".into()));
        assert_eq!(parts[0].data, Some(json!({"decision": "approve"})));
        let parts = reply_parts(Some(&approval), &Answer::Text("(declined)".into()));
        assert_eq!(parts[0].data, Some(json!({"decision": "reject"})));
        // A rein agent's question with options: the option's key.
        let question = asked(vec![Part::data(
            json!({"kind": "question", "question": "Which?", "options": [{"key": "a", "label": "A"}]}),
        )]);
        let q = question_of("helper", Some(&question));
        assert_eq!(q.question, "The remote agent `helper` asks: Which?");
        assert_eq!(q.options[0].key, "a");
        let parts = reply_parts(Some(&question), &Answer::Option("a".into()));
        assert_eq!(parts[0].data, Some(json!({"option": "a"})));
        // Any other agent: its text, answered in text.
        let plain = asked(vec![Part::text("What city?")]);
        let q = question_of("other", Some(&plain));
        assert!(q.options.is_empty());
        assert!(q.question.ends_with("What city?"));
        let parts = reply_parts(Some(&plain), &Answer::Text("Oslo".into()));
        assert_eq!(parts[0].text.as_deref(), Some("Oslo"));
    }

    #[test]
    fn reported_usage_adds_only_what_is_new() {
        let mut s = rein_core::AgentState::new(rein_core::OperationId::new());
        assert!(add_reported(&mut s, "h", 100, Some(Usd::from_dollars(0.5))));
        assert!(!add_reported(
            &mut s,
            "h",
            100,
            Some(Usd::from_dollars(0.5))
        ));
        assert!(add_reported(&mut s, "h", 150, None));
        assert_eq!(s.usage.llm.tokens.total, 150);
        assert_eq!(s.cost.total, Usd::from_dollars(0.5));
    }
}
