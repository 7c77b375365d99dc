//! The operation driver: start an operation (accepted only once committed, with its spec),
//! then step the engine and commit each step (state, changed messages, events, tool executions,
//! interventions) in one transaction, until the operation parks or ends. Everything needed to
//! continue is on disk after every commit, so any process can resume it after a crash; and
//! everything that decides what the operation may do is its spec, read back on every path, so
//! a process continuing it offers exactly the model, tools and role it started with.

mod a2a;
mod agent_archive;
mod archive;
mod async_tool;
mod cancel_watch;
mod children;
mod choosable;
mod commit;
mod decide;
mod delegate;
mod external;
mod fork;
mod grant;
mod landing;
mod open;
mod queue;
mod raise;
mod replay;
mod run;
mod runtime;
mod start;
mod step_check;
mod system_model;
mod title;
mod turn;

pub use agent_archive::{
    AGENT_FORMAT, AgentArchive, AgentImportError, AgentMemory, KnowledgeManifest, SkillManifest,
};
pub use cancel_watch::CancelWatch;
pub use choosable::ChoosableTools;
pub use fork::{Fork, ForkChanges, ForkError, ForkOptions};
pub use landing::Durability;
pub(crate) use landing::Landing;
pub use queue::MOVED_ON;
pub use replay::{CalledTool, ChainReplay, ReplayAnswer, ReplayError, ReplayOptions, StepReplay};
pub use start::Begun;
pub use system_model::{MeteredAnswer, SystemModelError, ask_json, ask_metered, json_in};
pub use title::TITLE_INSTRUCTIONS;
pub use turn::{BranchError, Turn};

use crate::models::{ModelSource, SingleProvider};
use crate::tools::ToolHost;
use rein_core::engine::EventSink;
use rein_core::spec::OperationSpec;
use rein_core::state::{FinishReason, ModelRef, Status};
use rein_core::{AgentState, GeneralChatAgentConfig, MessageId, OperationId, ToolCall};
use rein_model::{Catalog, ModelProvider};
use rein_store::{Store, Trigger};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How to start an operation: what it may do, and where it belongs.
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// What it may do (see [`crate::AgentProfile::spec`]); a spec without a model gets the
    /// driver's default model.
    pub spec: OperationSpec,
    /// Conversation to continue; a new one otherwise.
    pub topic_id: Option<String>,
    /// Where the prompt goes in the conversation's message tree (after its active branch,
    /// an edit, a regeneration).
    pub turn: Turn,
    /// Images and files sent with the prompt (see [`crate::attachment`]).
    pub attachments: Vec<rein_core::message::ContentPart>,
    /// Earlier turns the caller holds (an OpenAI-style client sends its conversation whole),
    /// put before the prompt, after the topic's own history.
    pub history: Vec<rein_core::Message>,
    /// What started it.
    pub trigger: Option<Trigger>,
    /// Claim a running slot and the lease for a process as the operation is created (a
    /// server's admission limits); `None` creates it unclaimed.
    pub admission: Option<rein_store::Admission>,
    /// The Responses API request it answers, written in the transaction that creates it (its
    /// `operation_id` is set to the new operation's).
    pub response: Option<rein_store::ResponseRequest>,
    /// Its id, when the caller derives one (a goal's work: started twice, the second start is
    /// refused as `OperationExists` instead of making a second operation); a fresh one
    /// otherwise.
    pub id: Option<OperationId>,
}

/// Test support for crash tests: with `REIN_TEST_PAUSE_AT=commit:N` (after the Nth commit
/// of this process), `tool:CALL_ID` (a tool execution recorded running, not yet run),
/// `ingest:file:N` (an ingestion job's Nth file committed) or `ingest:embedded:N` (N chunks of
/// the base with vectors, a batch just committed), the process announces
/// `REIN_TEST_PAUSED <point>` on stderr and stops there, so a test can kill it with SIGKILL at
/// an exact boundary. Only in builds with the `test-hooks` feature (the
/// crash tests'); elsewhere it does nothing and reads no variable.
#[cfg(feature = "test-hooks")]
pub(crate) async fn pause_point(point: &str) {
    crate::sim::point(point).await;
    if std::env::var(crate::env::test::PAUSE_AT).is_ok_and(|p| p == point) {
        eprintln!("REIN_TEST_PAUSED {point}");
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
    }
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) async fn pause_point(_point: &str) {}

/// The `commit:N` crash point: after this process's Nth commit (of any operation, so a tree's
/// parent and sub-agents count together).
#[cfg(feature = "test-hooks")]
pub(crate) async fn pause_after_commit() {
    static COMMITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COMMITS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    crate::sim::point("committed").await;
    if std::env::var_os(crate::env::test::PAUSE_AT).is_some() {
        pause_point(&format!("commit:{n}")).await;
    }
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) async fn pause_after_commit() {}

/// The `ingest:file:N` and `ingest:embedded:N` crash points (`stage` is `file` or `embedded`).
#[cfg(feature = "test-hooks")]
pub(crate) async fn pause_in_ingestion(stage: &str, n: u64) {
    pause_point(&format!("ingest:{stage}:{n}")).await;
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) async fn pause_in_ingestion(_stage: &str, _n: u64) {}

/// The built-in schemas are static and covered by tests; failing to compile them is a bug in
/// this build, reported loudly rather than hidden.
#[cold]
fn unreachable_builtins(e: rein_tools::ToolError) -> ! {
    tracing::error!(error = %e, "built-in tool schema does not compile");
    std::process::abort()
}

/// Where a run stopped. Serialised (`{"type": "waiting_for_human", ...}`) it is also what the
/// server's `GET /v1/operations/{id}` says an operation waits for, so a client decides what to
/// do next from the same value a local run returns.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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
    /// Queued behind another operation of its conversation: it starts when that one ends
    /// ([`Driver::promote`]).
    Queued,
    /// Waiting for calls a device runs (see [`Driver::complete_async_tool`]).
    WaitingForAsyncTool {
        /// Their call ids.
        calls: Vec<String>,
    },
    /// Waiting for sub-agents that are neither parked on a human nor interrupted (another
    /// process runs them).
    WaitingForSubAgents {
        /// The sub-agents.
        children: Vec<OperationId>,
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
    /// Stopped between two steps because this process is stopping
    /// ([`Driver::with_hand_over`]): the operation is left as its last commit put it, still
    /// running, for another process (or this one restarted) to continue.
    Released,
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
    /// Answer a question (`ask_user`); the answer becomes the call's result.
    Answer(rein_core::question::Answer),
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
    /// Where this driver's runs learn of cancel requests (one poll for all the runs of every
    /// driver sharing it).
    cancels: Arc<CancelWatch>,
    /// Cancelled when this process stops: runs end after the step under way commits.
    hand_over: CancellationToken,
    /// Whether a step that leaves its operation running commits while the next one runs.
    durability: Durability,
    pipeline: Arc<rein_context::Pipeline>,
    embedder: Option<Arc<dyn rein_tools::documents::Embedder>>,
    on_commit: Option<CommitHook>,
    /// Where delegation finds agents by name; without it, operations cannot delegate.
    agents: Option<Arc<dyn crate::AgentDirectory>>,
    /// Skills operations may activate (listed in every call by name and description).
    skills: Arc<rein_tools::skills::SkillCatalog>,
    /// The model for rein's own small jobs (titles, task run readings); none: rules only.
    system_model: Option<ModelRef>,
    /// The external agent CLIs this process may start (`external:KIND` operations).
    external: crate::external::ExternalAgents,
    /// Where operations on `device:NAME` find the device's tools (none: no devices here).
    devices: Option<Arc<dyn crate::devices::DeviceDirectory>>,
    /// Starts external agents on devices (`external:KIND@NAME`; a server's gateway).
    remote_agents: Option<Arc<dyn crate::external::RemoteAgents>>,
    /// How users' own providers serve their operations (none: this process's serve everyone).
    own_keys: Option<crate::own_models::OwnProviderKeys>,
    /// Users' own MCP servers (none: operations have only this process's tools).
    own_mcp: Option<Arc<crate::own_mcp::OwnMcp>>,
    /// Token estimators by vocabulary and factor (bits), shared by every run.
    estimators: std::sync::Mutex<
        Vec<(
            (rein_context::Encoding, u64),
            rein_context::TiktokenEstimator,
        )>,
    >,
}

/// A message id derived from the operation and commit index: a step re-run after a crash
/// writes the same assistant message instead of a second one.
pub fn derived_message_id(op: OperationId, step_index: u64) -> MessageId {
    MessageId(derived_uuid(
        op,
        u128::from(step_index).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
    ))
}

/// A UUID (version 8) derived from `op` and `salt`: the same inputs give the same id in every
/// process, so what a re-run step creates is what it created before.
pub(crate) fn derived_uuid(op: OperationId, salt: u128) -> uuid::Uuid {
    let mut bytes = (op.as_uuid().as_u128() ^ salt).to_be_bytes();
    // Version 8 (custom), RFC 4122 variant.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(bytes)
}

impl RunEnd {
    /// Where an operation in `state` stands, when it is not running (an idle or running one
    /// has not stopped: `None`). A tree's root parked on its sub-agents' approvals is
    /// `WaitingForSubAgents` here; `rein_operation::tree::pending_approvals` names those calls.
    pub fn of_state(state: &AgentState) -> Option<Self> {
        match state.status {
            Status::Idle | Status::Running => None,
            Status::Done
            | Status::WaitingForSubAgents
            | Status::Queued
            | Status::WaitingForHuman
            | Status::WaitingForAsyncTool
            | Status::Interrupted
            | Status::Error => Some(end_of(state)),
        }
    }
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
        Status::WaitingForSubAgents => RunEnd::WaitingForSubAgents {
            children: state.sub_agents.iter().map(|r| r.operation_id).collect(),
        },
        Status::Queued => RunEnd::Queued,
        Status::WaitingForHuman => RunEnd::WaitingForHuman {
            pending: state.pending_tool_calls.clone(),
        },
        Status::WaitingForAsyncTool => RunEnd::WaitingForAsyncTool {
            calls: state.async_calls.clone(),
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

impl Driver {
    /// A driver whose operations default to `model`, answered by `provider` (the only provider
    /// it has; see [`Driver::from_source`] for more).
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
        let tools = match ToolHost::new(
            Arc::clone(&store),
            Some(Arc::clone(&models)),
            &rein_tools::BuiltinConfig::default(),
        ) {
            Ok(host) => Arc::new(host),
            Err(e) => unreachable_builtins(e),
        };
        let cancels = Arc::new(CancelWatch::new(Arc::clone(&store)));
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
            cancels,
            hand_over: CancellationToken::new(),
            durability: Durability::default(),
            pipeline: Arc::new(rein_context::Pipeline::standard()),
            embedder: None,
            on_commit: None,
            agents: None,
            skills: Arc::default(),
            system_model: None,
            external: crate::external::ExternalAgents::none(),
            devices: None,
            remote_agents: None,
            own_keys: None,
            own_mcp: None,
            estimators: Default::default(),
        }
    }

    /// Builder: each operation's model comes from its owner's own providers over this
    /// process's, as `keys` says (a server's).
    pub fn with_own_provider_keys(mut self, keys: crate::own_models::OwnProviderKeys) -> Self {
        self.own_keys = Some(keys);
        self
    }

    /// Builder: each operation is offered its owner's MCP servers' tools too.
    pub fn with_own_mcp(mut self, own: Arc<crate::own_mcp::OwnMcp>) -> Self {
        self.own_mcp = Some(own);
        self
    }

    /// Builder: learn of cancel requests through `cancels`, shared with the process's other
    /// drivers, so one poll serves all their runs.
    pub fn with_cancel_watch(mut self, cancels: Arc<CancelWatch>) -> Self {
        self.cancels = cancels;
        self
    }

    /// Builder: when `stop` is cancelled, each run of this driver ends after the step under
    /// way commits ([`RunEnd::Released`]), so a stopping process hands its operations over
    /// without cutting a step short.
    pub fn with_hand_over(mut self, stop: CancellationToken) -> Self {
        self.hand_over = stop;
        self
    }

    /// Builder: when a step's commit must be on disk ([`Durability`]; pipelined by default).
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Builder: the built-in tools that take settings (`web`, `shell`) configured by `config`.
    pub fn with_builtins(mut self, config: &rein_tools::BuiltinConfig) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.configure_builtins(config)
        {
            unreachable_builtins(e);
        }
        self
    }

    /// Builder: `image.generate` and `image.edit` drawing with `model` ([`crate::images`]).
    pub fn with_image_model(mut self, model: ModelRef) -> Self {
        let tool = Arc::new(crate::images::ImageTool {
            models: Arc::clone(&self.models),
            store: Arc::clone(&self.store),
            catalog: Arc::clone(&self.catalog),
            model,
        });
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.register_builtin(tool)
        {
            unreachable_builtins(e);
        }
        self
    }

    /// Builder: `video.generate` rendering with `model`, polling every `poll`
    /// ([`crate::videos`]).
    pub fn with_video_model(mut self, model: ModelRef, poll: std::time::Duration) -> Self {
        let tool = Arc::new(crate::videos::VideoTool {
            models: Arc::clone(&self.models),
            catalog: Arc::clone(&self.catalog),
            model,
            poll,
        });
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.register_builtin(tool)
        {
            unreachable_builtins(e);
        }
        self
    }

    /// Builder: `speech.say` with `say` and `speech.transcribe` with `hear` (each when given;
    /// neither: no speech tool) ([`crate::speech`]).
    pub fn with_speech_models(mut self, say: Option<ModelRef>, hear: Option<ModelRef>) -> Self {
        if say.is_none() && hear.is_none() {
            return self;
        }
        let tool = Arc::new(crate::speech::SpeechTool {
            models: Arc::clone(&self.models),
            store: Arc::clone(&self.store),
            catalog: Arc::clone(&self.catalog),
            say,
            hear,
        });
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.register_builtin(tool)
        {
            unreachable_builtins(e);
        }
        self
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

    /// Builder: `clients` do the file and shell calls they take for the operations they drive
    /// ([`crate::client_tools`]).
    pub fn with_client_tools(mut self, clients: Arc<dyn crate::client_tools::ClientTools>) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.tools) {
            host.set_clients(clients);
        }
        self
    }

    /// Builder: the secrets `redactor` knows are replaced in every tool result
    /// ([`crate::redact`]).
    pub fn with_redactor(mut self, redactor: crate::redact::Redactor) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.tools) {
            host.set_redactor(redactor);
        }
        self
    }

    /// Builder: operations on `external:KIND` surfaces start these programs.
    pub fn with_external(mut self, external: crate::external::ExternalAgents) -> Self {
        self.external = external;
        self
    }

    /// Builder: operations may run on the devices `directory` knows.
    pub fn with_devices(mut self, directory: Arc<dyn crate::devices::DeviceDirectory>) -> Self {
        self.devices = Some(directory);
        self
    }

    /// Builder: external agents on devices are started through `remote`.
    pub fn with_remote_agents(mut self, remote: Arc<dyn crate::external::RemoteAgents>) -> Self {
        self.remote_agents = Some(remote);
        self
    }

    /// Builder: briefs raised by operations without an owner go to `owner`.
    pub fn with_brief_owner(mut self, owner: String) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.set_brief_owner(owner)
        {
            tracing::error!(error = %e, "brief tool not registered");
        }
        self
    }

    /// Builder: a hook called after every committed step.
    pub fn with_commit_hook(mut self, hook: CommitHook) -> Self {
        self.on_commit = Some(hook);
        self
    }

    /// Builder: operations may delegate to sub-agents, named ones found in `agents`.
    pub fn with_agents(mut self, agents: Arc<dyn crate::AgentDirectory>) -> Self {
        self.agents = Some(agents);
        self
    }

    /// Builder: operations may activate the skills of `catalog` (`skills.activate`, or named
    /// in their spec).
    pub fn with_skills(mut self, catalog: Arc<rein_tools::skills::SkillCatalog>) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.tools)
            && let Err(e) = host.set_skills(Arc::clone(&catalog))
        {
            tracing::error!(error = %e, "skills tool not registered");
        }
        self.skills = catalog;
        self
    }

    /// Builder: live event sink (events are also committed).
    pub fn with_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Builder: the system model, for rein's own small jobs: it titles each topic once its
    /// first exchange has ended well (see [`TITLE_INSTRUCTIONS`]; without it a topic keeps the
    /// start of its first message) and reads task runs ([`Driver::ask_system_model_json`]).
    pub fn with_system_model(mut self, model: ModelRef) -> Self {
        self.system_model = Some(model);
        self
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

    /// Whether this driver has a tool named `identifier` (built in or added): a user's MCP
    /// server cannot take its name.
    pub fn has_tool(&self, identifier: &str) -> bool {
        self.tools.has(identifier)
    }

    /// Cancels this process's runs (model streams, backoff, the next instruction boundary).
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}
