//! The operation driver: start an operation (accepted only once committed), then step the
//! engine and commit each step (state, changed messages, events, tool executions,
//! interventions) in one transaction, until the operation parks or ends. Everything needed to
//! continue is on disk after every commit, so any process can resume it after a crash.

use crate::error::DriverError;
use crate::model_port::ModelPort;
use crate::tools::ToolHost;
use chrono::Utc;
use rein_context::{Encoding, TiktokenEstimator};
use rein_core::agent::TokenEstimator;
use rein_core::engine::{
    EventSink, RuntimeConfig, StepResult, abort_pending, approve_tool_call, initial_context,
    reject_tool_call,
};
use rein_core::event::EventKind;
use rein_core::intervention::ApprovalMode;
use rein_core::phase::RuntimeContext;
use rein_core::state::{Budget, FinishReason, ModelRef, Status};
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

/// How to start an operation.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// System prompt.
    pub system: Option<String>,
    /// Step limit.
    pub max_steps: Option<u32>,
    /// Token and cost limits.
    pub budget: Budget,
    /// Approval mode.
    pub approval: ApprovalMode,
    /// Conversation to continue; a new one otherwise.
    pub topic_id: Option<String>,
    /// Working directory for path-scoped tools.
    pub working_directory: Option<String>,
    /// How long a requested approval stays valid; after it the operation ends (`timeout`).
    pub approval_timeout: Option<Duration>,
    /// Images and files sent with the prompt (see [`crate::attachment`]).
    pub attachments: Vec<rein_core::message::ContentPart>,
    /// The user the operation belongs to (a server's user id); also scopes its memories.
    pub owner: Option<String>,
    /// The agent it runs as; scopes memories and notes, and filters listings.
    pub agent: Option<String>,
    /// What started it.
    pub trigger: Option<Trigger>,
}

/// Metadata key holding the approval timeout, so every process that parks or decides the
/// operation applies the same deadline.
const APPROVAL_TIMEOUT_KEY: &str = "approval_timeout_secs";

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

/// Runs operations of one model against one store.
pub struct Driver {
    store: Arc<dyn Store>,
    provider: Arc<dyn ModelProvider>,
    model: ModelRef,
    catalog: Arc<Catalog>,
    tools: Arc<ToolHost>,
    agent: GeneralChatAgentConfig,
    sink: Option<Arc<dyn EventSink>>,
    cancel: CancellationToken,
    pipeline: Arc<rein_context::Pipeline>,
    context: crate::ContextSettings,
    /// The model that writes compression summaries (the operation's model when unset).
    compression_model: Option<(Arc<dyn ModelProvider>, ModelRef)>,
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
    /// A driver for `model` (`provider/model`) answered by `provider`.
    pub fn new(
        store: Arc<dyn Store>,
        provider: Arc<dyn ModelProvider>,
        model: ModelRef,
        catalog: Arc<Catalog>,
    ) -> Self {
        let tools = match ToolHost::new(Arc::clone(&store), &rein_tools::BuiltinConfig::default()) {
            Ok(host) => Arc::new(host),
            Err(e) => unreachable_builtins(e),
        };
        let mut agent = GeneralChatAgentConfig::default();
        // Compress against the model's real window when the catalog knows it.
        if let Some(info) = catalog.lookup(&model.provider, &model.model) {
            agent.compression.window_tokens = info.context_window;
            agent.compression.max_output_tokens = Some(info.max_output);
        }
        Self {
            store,
            provider,
            model,
            catalog,
            tools,
            agent,
            sink: None,
            cancel: CancellationToken::new(),
            pipeline: Arc::new(rein_context::Pipeline::standard()),
            context: crate::ContextSettings::default(),
            compression_model: None,
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

    /// Builder: the operation scope: only these tools (`identifier` or `identifier/api`) may
    /// be called; the rest of the agent's configuration is kept.
    pub fn with_allowed_tools(mut self, tools: Vec<String>) -> Self {
        self.agent.allowed_tools = Some(tools);
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

    /// Builder: what the context engine is told beyond the transcript.
    pub fn with_context(mut self, context: crate::ContextSettings) -> Self {
        self.context = context;
        self
    }

    /// The token estimator for this driver's model: the catalog's tokenizer hint, else o200k.
    fn estimator(&self) -> TiktokenEstimator {
        let hint = self
            .catalog
            .lookup(&self.model.provider, &self.model.model)
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

    /// Builder: the model that writes compression summaries (by default the operation's own).
    pub fn with_compression_model(
        mut self,
        provider: Arc<dyn ModelProvider>,
        model: ModelRef,
    ) -> Self {
        self.compression_model = Some((provider, model));
        self
    }

    /// Builder: a custom context pipeline (the standard one otherwise).
    pub fn with_pipeline(mut self, pipeline: rein_context::Pipeline) -> Self {
        self.pipeline = Arc::new(pipeline);
        self
    }

    /// Builder: agent settings.
    pub fn with_agent(mut self, agent: GeneralChatAgentConfig) -> Self {
        self.agent = agent;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Cancels this process's runs (model streams, backoff, the next instruction boundary).
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    fn runtime(&self) -> AgentRuntime {
        let port = ModelPort {
            provider: Arc::clone(&self.provider),
            provider_id: self.model.provider.to_string(),
            catalog: Arc::clone(&self.catalog),
            store: Arc::clone(&self.store),
            cancel: self.cancel.clone(),
            pipeline: Arc::clone(&self.pipeline),
            context: self.context.clone(),
            embedder: self.embedder.clone(),
            query_memo: Default::default(),
        };
        let (summary_provider, summary_model) = match &self.compression_model {
            Some((p, m)) => (Arc::clone(p), m.clone()),
            None => (Arc::clone(&self.provider), self.model.clone()),
        };
        let summarizer = crate::ModelSummarizer {
            provider: summary_provider,
            provider_id: summary_model.provider.to_string(),
            model: summary_model.model.to_string(),
            catalog: Arc::clone(&self.catalog),
            cancel: self.cancel.clone(),
        };
        let estimator: Arc<dyn TokenEstimator> = Arc::new(self.estimator());
        let config = RuntimeConfig {
            llm: Some(Arc::new(port)),
            tools: Some(self.tools.clone()),
            summarizer: Some(Arc::new(summarizer)),
            keep_recent_tokens: self
                .context
                .keep_recent_tokens
                .min(self.agent.compression.window_tokens / 4),
            estimator: Arc::clone(&estimator),
            sink: self.sink.clone(),
            ..Default::default()
        };
        let mut agent = self.agent.clone();
        // One setting decides both what the model is sent and what the agent counts.
        agent.progressive_tools = self.context.progressive_tools.clone();
        let agent = GeneralChatAgent::new(agent).with_estimator(estimator);
        AgentRuntime::new(Arc::new(agent), config)
    }

    /// Create an operation for `prompt`; returns its id once it is committed.
    pub async fn start(
        &self,
        prompt: &str,
        opts: &StartOptions,
    ) -> Result<OperationId, DriverError> {
        let id = OperationId::new();
        let mut state = AgentState::new(id);
        if let Some(system) = &opts.system {
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
        state.model = Some(self.model.clone());
        state.max_steps = opts.max_steps;
        state.budget = opts.budget.clone();
        state.intervention.approval_mode = opts.approval;
        state.metadata.working_directory = opts.working_directory.clone();
        state.metadata.topic_id = Some(topic_id.clone());
        if let Some(t) = opts.approval_timeout {
            state.metadata.extra.insert(
                APPROVAL_TIMEOUT_KEY.into(),
                serde_json::json!(t.as_secs_f64()),
            );
        }
        if let Some(owner) = &opts.owner {
            state
                .metadata
                .extra
                .insert("user_id".into(), serde_json::json!(owner));
        }
        if opts.agent.is_some() {
            state.metadata.agent_id = opts.agent.clone();
        }
        let next = initial_context(&state);
        let op = NewOperation {
            state,
            topic_id,
            agent: opts.agent.clone(),
            trigger: opts.trigger.unwrap_or(Trigger::Cli),
            parent_operation: None,
            next_context: Some(next),
            owner: opts.owner.clone(),
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
        let runtime = self.runtime();
        let reason = format!("approval expired at {}", deadline.to_rfc3339());
        let interrupted =
            runtime.interrupt_finishing(stored.state.clone(), reason, FinishReason::Timeout);
        let r = runtime.step(interrupted.state.clone(), None).await;
        let mut events = interrupted.events;
        events.extend(r.events);
        let combined = StepResult {
            state: r.state,
            events,
            next_context: None,
        };
        self.commit(&stored.state, stored.record.commit_seq + 1, &combined)
            .await?;
        Ok(Some(end_of(&combined.state)))
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
        self.commit(&stored.state, stored.record.commit_seq + 1, &r)
            .await?;
        Ok(Some(end_of(&r.state)))
    }

    /// Commit a step's result; `Duplicate` means another process committed it first.
    async fn commit(
        &self,
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
        let expires_at = r
            .state
            .metadata
            .extra
            .get(APPROVAL_TIMEOUT_KEY)
            .and_then(|v| v.as_f64())
            .and_then(|secs| {
                chrono::Duration::from_std(Duration::from_secs_f64(secs.max(0.0))).ok()
            })
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
        let (state, next) = (stored.state, stored.next_context);
        if stored.record.cancel_requested && !state.status.is_terminal() {
            return self.settle_cancel(id, "cancelled on request").await;
        }
        self.drive(id, state, next, stored.record.commit_seq).await
    }

    async fn drive(
        &self,
        id: OperationId,
        mut state: AgentState,
        mut next: Option<RuntimeContext>,
        mut seq: u64,
    ) -> Result<RunEnd, DriverError> {
        let runtime = self.runtime();
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
                match self.commit(&before, seq + 1, &r).await? {
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
        let mut state = stored.state;
        let mut next = stored.next_context;
        if state.status == Status::Interrupted {
            let r = self
                .runtime()
                .resume(state.clone(), "resumed")
                .map_err(|e| DriverError::Refused(e.to_string()))?;
            let before = state.clone();
            self.commit(&before, stored.record.commit_seq + 1, &r)
                .await?;
            return self
                .drive(id, r.state, r.next_context, stored.record.commit_seq + 1)
                .await;
        }
        if state.status == Status::Idle {
            state.status = Status::Running;
            next = next.or_else(|| Some(initial_context(&state)));
        }
        self.drive(id, state, next, stored.record.commit_seq).await
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
        let (mut state, mut seq) = (stored.state, stored.record.commit_seq);
        let runtime = self.runtime();
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
            self.commit(&before, seq + 1, &r).await?;
            seq += 1;
            state = r.state;
            if state.status != Status::WaitingForHuman {
                return self.drive(id, state, r.next_context, seq).await;
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
        let (state, ctx) = abort_pending(stored.state, reason);
        self.drive(id, state, Some(ctx), stored.record.commit_seq)
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
        let runtime = self.runtime();
        let interrupted = if stored.state.status == Status::Interrupted {
            StepResult {
                state: stored.state.clone(),
                events: Vec::new(),
                next_context: None,
            }
        } else {
            runtime.interrupt(stored.state.clone(), reason, false)
        };
        let r = runtime.step(interrupted.state.clone(), None).await;
        let mut events = interrupted.events;
        events.extend(r.events);
        let combined = StepResult {
            state: r.state,
            events,
            next_context: None,
        };
        self.commit(&stored.state, stored.record.commit_seq + 1, &combined)
            .await?;
        Ok(end_of(&combined.state))
    }
}
