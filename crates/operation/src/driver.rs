//! The operation driver: start an operation (accepted only once committed, with its spec),
//! then step the engine and commit each step (state, changed messages, events, tool executions,
//! interventions) in one transaction, until the operation parks or ends. Everything needed to
//! continue is on disk after every commit, so any process can resume it after a crash; and
//! everything that decides what the operation may do is its spec, read back on every path, so
//! a process continuing it offers exactly the model, tools and role it started with.

use crate::error::DriverError;
use crate::model_port::ModelPort;
use crate::models::{ModelSource, SingleProvider};
use crate::tools::ToolHost;
use chrono::Utc;
use rein_context::{Encoding, TiktokenEstimator};
use rein_core::agent::TokenEstimator;
use rein_core::engine::{
    EventSink, RuntimeConfig, StepResult, abort_pending, approve_tool_call, initial_context,
    reject_tool_call,
};
use rein_core::event::EventKind;
use rein_core::phase::RuntimeContext;
use rein_core::spec::OperationSpec;
use rein_core::state::{FinishReason, ModelRef, Status};
use rein_core::{
    AgentRuntime, AgentState, GeneralChatAgent, GeneralChatAgentConfig, Message, MessageId,
    OperationId, ToolCall,
};
use rein_model::{Catalog, ModelProvider};
use rein_store::{
    CommitOutcome, Intervention, InterventionStatus, NewOperation, StepCommit, Store,
    StoredOperation, Trigger,
};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How to start an operation: what it may do, and where it belongs.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// What it may do (see [`crate::AgentProfile::spec`]); a spec without a model gets the
    /// driver's default model.
    pub spec: OperationSpec,
    /// Conversation to continue; a new one otherwise.
    pub topic_id: Option<String>,
    /// Images and files sent with the prompt (see [`crate::attachment`]).
    pub attachments: Vec<rein_core::message::ContentPart>,
    /// What started it.
    pub trigger: Option<Trigger>,
    /// Claim a running slot and the lease for a process as the operation is created (a
    /// server's admission limits); `None` creates it unclaimed.
    pub admission: Option<rein_store::Admission>,
}

/// Test support for crash tests: with `REIN_TEST_PAUSE_AT=commit:N` (after the Nth commit
/// of this process) or `tool:CALL_ID` (a tool execution recorded running, not yet run), the
/// process announces `REIN_TEST_PAUSED <point>` on stderr and stops there, so a test can kill
/// it with SIGKILL at an exact boundary. Unset in normal use.
pub(crate) async fn pause_point(point: &str) {
    if std::env::var("REIN_TEST_PAUSE_AT").is_ok_and(|p| p == point) {
        eprintln!("REIN_TEST_PAUSED {point}");
        loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
}

/// The built-in schemas are static and covered by tests; failing to compile them is a bug in
/// this build, reported loudly rather than hidden.
#[cold]
fn unreachable_builtins(e: rein_tools::ToolError) -> ! {
    tracing::error!(error = %e, "built-in tool schema does not compile");
    std::process::abort()
}

/// Where a run stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// Finished.
    Done {
        /// Why.
        reason: FinishReason,
        /// Detail.
        detail: Option<String>,
    },
    /// Parked until a human decides these calls.
    WaitingForHuman {
        /// Calls awaiting a decision.
        pending: Vec<ToolCall>,
    },
    /// Interrupted (cancelled, or a budget with policy `interrupt`).
    Interrupted {
        /// Why.
        reason: String,
        /// Whether `resume` may continue it.
        can_resume: bool,
    },
    /// Failed.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// A human decision on one pending call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Approve,
    /// Do not run it; the model reads the reason and continues (or the operation stops).
    Reject {
        /// Why.
        reason: Option<String>,
        /// Stop the operation for good.
        halt: bool,
    },
}

/// Called after every step that was written, with the operation's id and the events the
/// commit made durable (a server hands them to the operation's event streams).
pub type CommitHook = Arc<dyn Fn(OperationId, &[rein_core::AgentEvent]) + Send + Sync>;

/// Runs operations against one store: each as its spec says (model, tools, role, approval,
/// budgets, context), with what this process brings (model providers, tools beyond the
/// built-ins, an embedder, event sinks).
pub struct Driver {
    store: Arc<dyn Store>,
    models: Arc<dyn ModelSource>,
    /// The model of a spec that names none.
    default_model: ModelRef,
    catalog: Arc<Catalog>,
    tools: Arc<ToolHost>,
    /// Brain tuning beyond the spec (loop breaker, name-error rounds, compression thresholds).
    agent: GeneralChatAgentConfig,
    /// Whether the compression window comes from the catalog entry of each operation's model
    /// (true unless [`Driver::with_agent`] set one).
    window_from_catalog: bool,
    sink: Option<Arc<dyn EventSink>>,
    cancel: CancellationToken,
    pipeline: Arc<rein_context::Pipeline>,
    embedder: Option<Arc<dyn rein_tools::documents::Embedder>>,
    on_commit: Option<CommitHook>,
}

/// A message id derived from the operation and commit index: a step re-run after a crash
/// writes the same assistant message instead of a second one.
pub fn derived_message_id(op: OperationId, step_index: u64) -> MessageId {
    let op = op.as_uuid().as_u128();
    let mixed =
        op ^ (u128::from(step_index).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835));
    let mut bytes = mixed.to_be_bytes();
    // Version 8 (custom), RFC 4122 variant.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    MessageId(uuid::Uuid::from_bytes(bytes))
}

fn end_of(state: &AgentState) -> RunEnd {
    match state.status {
        Status::Done => {
            let f = state.finish.clone();
            RunEnd::Done {
                reason: f.as_ref().map_or(FinishReason::Completed, |f| f.reason),
                detail: f.and_then(|f| f.detail),
            }
        }
        Status::WaitingForHuman | Status::WaitingForAsyncTool => RunEnd::WaitingForHuman {
            pending: state.pending_tool_calls.clone(),
        },
        Status::Interrupted => {
            let i = state.interruption.as_ref();
            RunEnd::Interrupted {
                reason: i.map(|i| i.reason.clone()).unwrap_or_default(),
                can_resume: i.is_some_and(|i| i.can_resume),
            }
        }
        Status::Error => RunEnd::Error {
            message: state.error.as_ref().map_or_else(
                || "unknown error".into(),
                |e| format!("{}: {}", e.code, e.message),
            ),
        },
        Status::Idle | Status::Running => RunEnd::Error {
            message: "the operation stopped without a next step".into(),
        },
    }
}

/// Messages of `now` that are new or changed since `before` (shared messages compare by
/// pointer, so this is cheap).
fn changed(before: &AgentState, now: &AgentState) -> Vec<Arc<Message>> {
    now.messages
        .iter()
        .filter(|m| !before.messages.iter().any(|b| Arc::ptr_eq(b, m)))
        .cloned()
        .collect()
}

impl Driver {
    /// A driver whose operations default to `model`, answered by `provider` (the only provider
    /// it has; see [`Driver::with_models`] for more).
    pub fn new(
        store: Arc<dyn Store>,
        provider: Arc<dyn ModelProvider>,
        model: ModelRef,
        catalog: Arc<Catalog>,
    ) -> Self {
        let models = Arc::new(SingleProvider {
            id: model.provider.to_string(),
            provider,
        });
        Self::from_source(store, models, model, catalog)
    }

    /// A driver whose operations' models come from `models`, defaulting to `default_model`
    /// (see [`crate::Host::driver`], which makes the CLI's and the server's).
    pub fn from_source(
        store: Arc<dyn Store>,
        models: Arc<dyn ModelSource>,
        default_model: ModelRef,
        catalog: Arc<Catalog>,
    ) -> Self {
        let tools = match ToolHost::new(Arc::clone(&store), &rein_tools::BuiltinConfig::default()) {
            Ok(host) => Arc::new(host),
            Err(e) => unreachable_builtins(e),
        };
        Self {
            store,
            models,
            default_model,
            catalog,
            tools,
            agent: GeneralChatAgentConfig::default(),
            window_from_catalog: true,
            sink: None,
            cancel: CancellationToken::new(),
            pipeline: Arc::new(rein_context::Pipeline::standard()),
            embedder: None,
            on_commit: None,
        }
    }

    /// Builder: add a tool. A tool whose parameter schema does not compile is left out, with
    /// an error in the log naming it.
    pub fn with_tool(mut self, tool: Arc<dyn crate::Tool>) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.register(tool)
        {
            tracing::error!(error = %e, "tool not registered");
        }
        self
    }

    /// Builder: a hook called after every committed step.
    pub fn with_commit_hook(mut self, hook: CommitHook) -> Self {
        self.on_commit = Some(hook);
        self
    }

    /// Builder: live event sink (events are also committed).
    pub fn with_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// The token estimator for `model`: the catalog's tokenizer hint, else o200k.
    fn estimator(&self, model: &ModelRef) -> TiktokenEstimator {
        let hint = self
            .catalog
            .lookup(&model.provider, &model.model)
            .and_then(|m| m.tokenizer.clone());
        match hint {
            Some(h) => {
                let encoding = if h.encoding == "cl100k" {
                    Encoding::Cl100k
                } else {
                    Encoding::O200k
                };
                TiktokenEstimator::new(encoding, h.factor)
            }
            None => TiktokenEstimator::default(),
        }
    }

    /// Builder: embed memories with `model` on `provider`, so they are recalled (by the
    /// memory tool and into each request) by meaning as well as by words.
    pub fn with_embedder(mut self, provider: Arc<dyn ModelProvider>, model: ModelRef) -> Self {
        let embedder: Arc<dyn rein_tools::documents::Embedder> =
            Arc::new(crate::ProviderEmbedder::new(provider, model));
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.set_embedder(Arc::clone(&embedder))
        {
            tracing::error!(error = %e, "memory tool not re-registered with the embedder");
        }
        self.embedder = Some(embedder);
        self
    }

    /// Builder: a custom context pipeline (the standard one otherwise).
    pub fn with_pipeline(mut self, pipeline: rein_context::Pipeline) -> Self {
        self.pipeline = Arc::new(pipeline);
        self
    }

    /// Builder: brain tuning (loop breaker, name-error rounds, compression window and
    /// thresholds). The allow-list and progressive disclosure always come from each
    /// operation's spec; a compression window set here replaces the catalog's.
    pub fn with_agent(mut self, agent: GeneralChatAgentConfig) -> Self {
        self.agent = agent;
        self.window_from_catalog = false;
        self
    }

    /// The store operations are kept in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Identifiers of the tools this driver has beyond the built-ins (MCP servers, custom
    /// tools): a spec records them, and a process continuing the operation must have them.
    pub fn host_tools(&self) -> Vec<String> {
        self.tools.added()
    }

    /// Cancels this process's runs (model streams, backoff, the next instruction boundary).
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// The brain of an operation: this driver's tuning with the spec's scope.
    fn brain(
        &self,
        spec: &OperationSpec,
        model: &ModelRef,
    ) -> (GeneralChatAgentConfig, Arc<dyn TokenEstimator>) {
        let mut agent = self.agent.clone();
        agent.allowed_tools = spec.allowed_tools.clone();
        // One setting decides both what the model is sent and what the agent counts.
        agent.progressive_tools = spec.progressive_tools.clone();
        if self.window_from_catalog
            && let Some(info) = self.catalog.lookup(&model.provider, &model.model)
        {
            agent.compression.window_tokens = info.context_window;
            agent.compression.max_output_tokens = Some(info.max_output);
        }
        (agent, Arc::new(self.estimator(model)))
    }

    /// The runtime for an operation with `spec`: its model, its tools (this process must have
    /// every tool the spec records), its scope and context settings.
    fn runtime(&self, id: OperationId, spec: &OperationSpec) -> Result<AgentRuntime, DriverError> {
        self.runtime_with(id, spec, self.sink.clone())
    }

    /// The runtime of a run that steps the operation: as [`Driver::runtime`], with a sink that
    /// also keeps the operation's activity on its record (returned guard: the writer).
    fn running_runtime(
        &self,
        stored: &StoredOperation,
    ) -> Result<(AgentRuntime, crate::activity::ActivityWriter), DriverError> {
        let id = stored.record.id;
        // Refuse before the record says anything about running.
        self.runtime(id, &stored.spec)?;
        let (sink, writer) = crate::activity::track(
            Arc::clone(&self.store),
            id,
            self.sink.clone(),
            stored.state.step_count + 1,
        );
        let sink: Arc<dyn EventSink> = sink;
        Ok((self.runtime_with(id, &stored.spec, Some(sink))?, writer))
    }

    fn runtime_with(
        &self,
        id: OperationId,
        spec: &OperationSpec,
        sink: Option<Arc<dyn EventSink>>,
    ) -> Result<AgentRuntime, DriverError> {
        let missing: Vec<String> = spec
            .mcp_servers
            .iter()
            .filter(|t| !self.tools.has(t))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(DriverError::MissingTools {
                operation: id,
                tools: missing,
            });
        }
        let model = spec
            .model
            .clone()
            .unwrap_or_else(|| self.default_model.clone());
        let provider = self.models.provider(&model)?;
        let (summary_provider, summary_model) = match &spec.compression_model {
            Some(m) => (self.models.provider(m)?, m.clone()),
            None => (Arc::clone(&provider), model.clone()),
        };
        let port = ModelPort {
            provider,
            provider_id: model.provider.to_string(),
            catalog: Arc::clone(&self.catalog),
            store: Arc::clone(&self.store),
            cancel: self.cancel.clone(),
            pipeline: Arc::clone(&self.pipeline),
            context: spec.context.clone(),
            progressive_tools: spec.progressive_tools.clone(),
            embedder: self.embedder.clone(),
            query_memo: Default::default(),
        };
        let summarizer = crate::ModelSummarizer {
            provider: summary_provider,
            provider_id: summary_model.provider.to_string(),
            model: summary_model.model.to_string(),
            catalog: Arc::clone(&self.catalog),
            cancel: self.cancel.clone(),
        };
        let (agent, estimator) = self.brain(spec, &model);
        let config = RuntimeConfig {
            llm: Some(Arc::new(port)),
            tools: Some(self.tools.clone()),
            summarizer: Some(Arc::new(summarizer)),
            keep_recent_tokens: spec
                .context
                .keep_recent_tokens
                .min(agent.compression.window_tokens / 4),
            estimator: Arc::clone(&estimator),
            sink,
            ..Default::default()
        };
        let agent = GeneralChatAgent::new(agent).with_estimator(estimator);
        Ok(AgentRuntime::new(Arc::new(agent), config))
    }

    /// A runtime that only settles an operation (cancellation, an expired approval): it calls
    /// no model and no tool, so it works in a process that could not run the operation.
    fn settling_runtime(&self, spec: &OperationSpec) -> AgentRuntime {
        let model = spec
            .model
            .clone()
            .unwrap_or_else(|| self.default_model.clone());
        let (agent, estimator) = self.brain(spec, &model);
        let config = RuntimeConfig {
            estimator: Arc::clone(&estimator),
            sink: self.sink.clone(),
            ..Default::default()
        };
        AgentRuntime::new(
            Arc::new(GeneralChatAgent::new(agent).with_estimator(estimator)),
            config,
        )
    }

    /// Create an operation for `prompt`; returns its id once it is committed with its spec.
    pub async fn start(
        &self,
        prompt: &str,
        opts: &StartOptions,
    ) -> Result<OperationId, DriverError> {
        if let Some(topic) = &opts.topic_id {
            crate::error::check_topic_id(topic)?;
        }
        let id = OperationId::new();
        let mut spec = opts.spec.clone();
        let model = spec
            .model
            .get_or_insert_with(|| self.default_model.clone())
            .clone();
        // The tools this process adds are recorded, so a process continuing the operation
        // without them refuses instead of running it with fewer.
        spec.mcp_servers = self.host_tools();
        // Refuse now, before anything is written, what no step could run.
        self.runtime(id, &spec)?;
        let mut state = AgentState::new(id);
        if let Some(system) = &spec.system_role {
            state.push_message(Message::system(system));
        }
        let topic_id = opts
            .topic_id
            .clone()
            .unwrap_or_else(|| format!("topic_{id}"));
        if opts.topic_id.is_some() {
            let history = self.store.topic_messages(&topic_id).await?;
            for m in rein_core::message::model_view(history) {
                state.push_message(m);
            }
        }
        let mut user = Message::user(prompt);
        user.content.extend(opts.attachments.iter().cloned());
        user.parent_id = state.messages.last().map(|m| m.id);
        state.push_message(user);
        for m in self.tools.manifests() {
            state = state.with_tool(m);
        }
        state.model = Some(model);
        state.max_steps = spec.max_steps;
        state.budget = spec.budget.clone();
        state.intervention.approval_mode = spec.approval;
        state.metadata.working_directory = spec.working_directory.clone();
        state.metadata.topic_id = Some(topic_id.clone());
        if let Some(owner) = &spec.owner {
            // The memory and notes tools scope documents by it.
            state
                .metadata
                .extra
                .insert("user_id".into(), serde_json::json!(owner));
        }
        state.metadata.agent_id = spec.agent.as_ref().map(|a| a.name.clone());
        let next = initial_context(&state);
        let op = NewOperation {
            state,
            topic_id,
            agent: spec.agent.as_ref().map(|a| a.name.clone()),
            trigger: opts.trigger.unwrap_or(Trigger::Cli),
            parent_operation: None,
            next_context: Some(next),
            owner: spec.owner.clone(),
            spec,
            admission: opts.admission.clone(),
        };
        self.store.create_operation(&op).await?;
        Ok(id)
    }

    async fn load(&self, id: OperationId) -> Result<StoredOperation, DriverError> {
        self.store
            .load_operation(id)
            .await?
            .ok_or(DriverError::NotFound(id))
    }

    /// An approval that nobody gave in time ends the operation visibly (`timeout`), its
    /// pending calls settled as aborted.
    async fn expire_if_due(&self, stored: &StoredOperation) -> Result<Option<RunEnd>, DriverError> {
        if stored.state.status != Status::WaitingForHuman {
            return Ok(None);
        }
        let now = Utc::now();
        let pending: Vec<Intervention> = self
            .store
            .interventions(stored.record.id)
            .await?
            .into_iter()
            .filter(|i| i.status == InterventionStatus::Pending)
            .collect();
        let Some(deadline) = pending
            .iter()
            .filter_map(|i| i.expires_at)
            .filter(|t| *t <= now)
            .min()
        else {
            return Ok(None);
        };
        for i in &pending {
            // A concurrent decision may have landed first; it keeps its outcome.
            let _ = self
                .store
                .decide_intervention(
                    stored.record.id,
                    &i.call.id,
                    InterventionStatus::Expired,
                    None,
                    Some("approval expired"),
                )
                .await;
        }
        let runtime = self.settling_runtime(&stored.spec);
        let reason = format!("approval expired at {}", deadline.to_rfc3339());
        let interrupted =
            runtime.interrupt_finishing(stored.state.clone(), reason, FinishReason::Timeout);
        self.settle(&runtime, stored, interrupted).await.map(Some)
    }

    /// Run the step that settles an interruption (its pending calls answered, the end
    /// recorded) and commit both as one step after what `stored` holds.
    async fn settle(
        &self,
        runtime: &AgentRuntime,
        stored: &StoredOperation,
        interrupted: StepResult,
    ) -> Result<RunEnd, DriverError> {
        let r = runtime.step(interrupted.state.clone(), None).await;
        let mut events = interrupted.events;
        events.extend(r.events);
        let combined = StepResult {
            state: r.state,
            events,
            next_context: None,
        };
        self.commit_next(stored, &combined).await
    }

    /// Commit `r` as the step after what `stored` holds, and say how the operation stands.
    async fn commit_next(
        &self,
        stored: &StoredOperation,
        r: &StepResult,
    ) -> Result<RunEnd, DriverError> {
        self.commit(&stored.spec, &stored.state, stored.record.commit_seq + 1, r)
            .await?;
        Ok(end_of(&r.state))
    }

    /// A message the conversation depends on was deleted while the operation was in flight:
    /// fail it visibly, before any model call, rather than answer a conversation that changed.
    async fn fail_missing(&self, stored: &StoredOperation) -> Result<Option<RunEnd>, DriverError> {
        let Some(first) = stored.missing_messages.first() else {
            return Ok(None);
        };
        if stored.state.status.is_terminal() {
            return Ok(Some(end_of(&stored.state)));
        }
        let mut state = stored.state.clone();
        let message =
            format!("message {first} of this conversation was deleted while the operation ran");
        state.status = Status::Error;
        state.error = Some(rein_core::state::StateError {
            code: "conversation_parent_missing".into(),
            message: message.clone(),
        });
        state.updated_at = Utc::now();
        let seq = state.next_event_seq;
        state.next_event_seq += 1;
        let event = rein_core::AgentEvent {
            operation_id: state.operation_id,
            step: state.step_count,
            seq,
            kind: EventKind::Error {
                code: "conversation_parent_missing".into(),
                message,
            },
        };
        let r = StepResult {
            state,
            events: vec![event],
            next_context: None,
        };
        self.commit_next(stored, &r).await.map(Some)
    }

    /// Commit a step's result; `Duplicate` means another process committed it first.
    async fn commit(
        &self,
        spec: &OperationSpec,
        before: &AgentState,
        step_index: u64,
        r: &StepResult,
    ) -> Result<CommitOutcome, DriverError> {
        let instructions = r
            .events
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EventKind::StepComplete { instructions, .. } => {
                    Some(instructions.iter().map(|k| k.as_str().to_owned()).collect())
                }
                _ => None,
            })
            .unwrap_or_else(|| vec!["human_decision".to_owned()]);
        let expires_at = spec
            .approval_timeout_secs
            .and_then(|secs| chrono::Duration::from_std(Duration::from_secs(secs)).ok())
            .map(|d| Utc::now() + d);
        let interventions = r
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::HumanApproveRequired {
                    pending_tool_calls, ..
                } => Some(pending_tool_calls.clone()),
                _ => None,
            })
            .flatten()
            .map(|call| Intervention {
                operation_id: r.state.operation_id,
                call,
                owner: None,
                status: InterventionStatus::Pending,
                reason: None,
                decided_by: None,
                decided_at: None,
                expires_at,
                created_at: Utc::now(),
            })
            .collect();
        let commit = StepCommit {
            operation_id: r.state.operation_id,
            step_index,
            state: r.state.clone(),
            next_context: r.next_context.clone(),
            instructions,
            messages: changed(before, &r.state),
            events: r.events.clone(),
            tool_executions: self.tools.take_finished(),
            interventions,
        };
        let outcome = self.store.commit_step(&commit).await?;
        if outcome == CommitOutcome::Committed
            && let Some(hook) = &self.on_commit
        {
            hook(commit.operation_id, &commit.events);
        }
        Ok(outcome)
    }

    /// Watch the store for a cancellation requested by another process.
    fn watch_cancel(&self, id: OperationId) -> tokio::task::JoinHandle<()> {
        let (store, cancel) = (Arc::clone(&self.store), self.cancel.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                if let Ok(Some(op)) = store.load_operation(id).await
                    && op.record.cancel_requested
                {
                    cancel.cancel();
                    return;
                }
            }
        })
    }

    /// Step an operation from its stored state until it parks, ends or has nothing to do.
    pub async fn run(&self, id: OperationId) -> Result<RunEnd, DriverError> {
        let stored = self.load(id).await?;
        if let Some(end) = self.expire_if_due(&stored).await? {
            return Ok(end);
        }
        if let Some(end) = self.fail_missing(&stored).await? {
            return Ok(end);
        }
        if stored.record.cancel_requested && !stored.state.status.is_terminal() {
            return self.settle_cancel(id, "cancelled on request").await;
        }
        let (runtime, _activity) = self.running_runtime(&stored)?;
        let (state, next) = (stored.state, stored.next_context);
        self.drive(
            id,
            &runtime,
            &stored.spec,
            state,
            next,
            stored.record.commit_seq,
        )
        .await
    }

    async fn drive(
        &self,
        id: OperationId,
        runtime: &AgentRuntime,
        spec: &OperationSpec,
        mut state: AgentState,
        mut next: Option<RuntimeContext>,
        mut seq: u64,
    ) -> Result<RunEnd, DriverError> {
        let interrupt = runtime.interrupt_handle();
        let watcher = self.watch_cancel(id);
        let cancel = self.cancel.clone();
        let forward = tokio::spawn(async move {
            cancel.cancelled().await;
            interrupt.interrupt("cancelled on request");
        });
        let result = async {
            loop {
                if state.status.is_blocked() || state.status.is_terminal() {
                    return Ok(end_of(&state));
                }
                let Some(ctx) = next.take() else {
                    return Ok(end_of(&state));
                };
                let before = state.clone();
                let mut input = state.clone();
                input.pending_assistant_message_id = Some(derived_message_id(id, seq + 1));
                let r = runtime.step(input, Some(ctx)).await;
                match self.commit(spec, &before, seq + 1, &r).await? {
                    CommitOutcome::Committed => {
                        seq += 1;
                        state = r.state;
                        next = r.next_context;
                        pause_point(&format!("commit:{seq}")).await;
                    }
                    CommitOutcome::Duplicate => {
                        // Another process got there first: continue from what it committed.
                        let stored = self.load(id).await?;
                        seq = stored.record.commit_seq;
                        state = stored.state;
                        next = stored.next_context;
                    }
                }
            }
        }
        .await;
        watcher.abort();
        forward.abort();
        result
    }

    /// Resume after a crash or an interruption: continue from the last committed step.
    pub async fn resume(&self, id: OperationId) -> Result<RunEnd, DriverError> {
        let stored = self.load(id).await?;
        if let Some(end) = self.expire_if_due(&stored).await? {
            return Ok(end);
        }
        if let Some(end) = self.fail_missing(&stored).await? {
            return Ok(end);
        }
        let (runtime, _activity) = self.running_runtime(&stored)?;
        let spec = &stored.spec;
        let mut state = stored.state;
        let mut next = stored.next_context;
        if state.status == Status::Interrupted {
            let r = runtime
                .resume(state.clone(), "resumed")
                .map_err(|e| DriverError::Refused(e.to_string()))?;
            let before = state.clone();
            self.commit(spec, &before, stored.record.commit_seq + 1, &r)
                .await?;
            return self
                .drive(
                    id,
                    &runtime,
                    spec,
                    r.state,
                    r.next_context,
                    stored.record.commit_seq + 1,
                )
                .await;
        }
        if state.status == Status::Idle {
            state.status = Status::Running;
            next = next.or_else(|| Some(initial_context(&state)));
        }
        self.drive(id, &runtime, spec, state, next, stored.record.commit_seq)
            .await
    }

    /// Decide pending calls (`None` = every pending call) and continue the operation.
    pub async fn decide(
        &self,
        id: OperationId,
        calls: Option<&[String]>,
        decision: Decision,
        by: Option<&str>,
    ) -> Result<RunEnd, DriverError> {
        let stored = self.load(id).await?;
        if let Some(end) = self.expire_if_due(&stored).await? {
            return Ok(end);
        }
        if stored.state.status != Status::WaitingForHuman {
            return Err(DriverError::Refused(format!(
                "operation {id} is {:?}, not waiting for a decision",
                stored.state.status
            )));
        }
        let pending: Vec<String> = stored
            .state
            .pending_tool_calls
            .iter()
            .map(|c| c.id.to_string())
            .collect();
        let targets: Vec<String> = match calls {
            Some(c) => c.to_vec(),
            None => pending.clone(),
        };
        if let Some(unknown) = targets.iter().find(|t| !pending.contains(t)) {
            let known: HashSet<&str> = stored
                .state
                .messages
                .iter()
                .flat_map(|m| m.tool_calls.iter())
                .map(|c| &*c.id)
                .collect();
            return Err(DriverError::Refused(if known.contains(unknown.as_str()) {
                format!("tool call {unknown} was already decided")
            } else {
                format!(
                    "operation {id} has no pending tool call {unknown}; pending: {}",
                    pending.join(", ")
                )
            }));
        }
        let (runtime, _activity) = self.running_runtime(&stored)?;
        let spec = &stored.spec;
        let (mut state, mut seq) = (stored.state, stored.record.commit_seq);
        for call in &targets {
            let status = match &decision {
                Decision::Approve => InterventionStatus::Approved,
                Decision::Reject { .. } => InterventionStatus::Rejected,
            };
            let reason = match &decision {
                Decision::Reject { reason, .. } => reason.as_deref(),
                Decision::Approve => None,
            };
            // Single-use: a concurrent second decision fails here.
            self.store
                .decide_intervention(id, call, status, by, reason)
                .await?;
            let before = state.clone();
            let (decided, ctx) = match &decision {
                Decision::Approve => {
                    let (s, c) = approve_tool_call(state, call)
                        .map_err(|e| DriverError::Refused(e.to_string()))?;
                    (s, Some(c))
                }
                Decision::Reject { reason, halt } => {
                    reject_tool_call(state, call, reason.as_deref(), *halt)
                        .map_err(|e| DriverError::Refused(e.to_string()))?
                }
            };
            let r = match ctx {
                Some(ctx) => {
                    let mut input = decided;
                    input.pending_assistant_message_id = Some(derived_message_id(id, seq + 1));
                    runtime.step(input, Some(ctx)).await
                }
                None => StepResult {
                    state: decided,
                    events: Vec::new(),
                    next_context: None,
                },
            };
            self.commit(spec, &before, seq + 1, &r).await?;
            seq += 1;
            state = r.state;
            if state.status != Status::WaitingForHuman {
                return self
                    .drive(id, &runtime, spec, state, r.next_context, seq)
                    .await;
            }
        }
        Ok(end_of(&state))
    }

    /// Abort every pending call and end the operation.
    pub async fn abort(&self, id: OperationId, reason: &str) -> Result<RunEnd, DriverError> {
        let stored = self.load(id).await?;
        if stored.state.status != Status::WaitingForHuman {
            return Err(DriverError::Refused(format!(
                "operation {id} is {:?}, not waiting for a decision",
                stored.state.status
            )));
        }
        for call in &stored.state.pending_tool_calls {
            // Already-decided calls keep their decision.
            let _ = self
                .store
                .decide_intervention(
                    id,
                    &call.id,
                    InterventionStatus::Aborted,
                    None,
                    Some(reason),
                )
                .await;
        }
        // Settling aborted calls runs no tool; the model is asked only if the brain continues.
        let (runtime, _activity) = self.running_runtime(&stored)?;
        let (state, ctx) = abort_pending(stored.state, reason);
        self.drive(
            id,
            &runtime,
            &stored.spec,
            state,
            Some(ctx),
            stored.record.commit_seq,
        )
        .await
    }

    /// Cancel: a running operation stops at its next boundary (keeping partial output); a
    /// parked one settles its pending calls and ends.
    pub async fn cancel(&self, id: OperationId) -> Result<RunEnd, DriverError> {
        let stored = self.load(id).await?;
        if stored.state.status.is_terminal() {
            return Ok(end_of(&stored.state));
        }
        self.store.request_cancel(id).await?;
        if stored.state.status == Status::Running {
            // Another process runs it; it sees the request within a moment.
            return Ok(RunEnd::Interrupted {
                reason: "cancellation requested".into(),
                can_resume: false,
            });
        }
        self.settle_cancel(id, "cancelled on request").await
    }

    async fn settle_cancel(&self, id: OperationId, reason: &str) -> Result<RunEnd, DriverError> {
        let stored = self.load(id).await?;
        let runtime = self.settling_runtime(&stored.spec);
        let interrupted = if stored.state.status == Status::Interrupted {
            StepResult {
                state: stored.state.clone(),
                events: Vec::new(),
                next_context: None,
            }
        } else {
            runtime.interrupt(stored.state.clone(), reason, false)
        };
        self.settle(&runtime, &stored, interrupted).await
    }
}
