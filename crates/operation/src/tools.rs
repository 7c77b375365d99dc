//! The tool host: executes tool calls for the engine (arguments validated against each API's
//! schema first) and makes every execution durable.
//!
//! Every execution is committed with the step that ran it. An at-most-once tool's execution is
//! also recorded `running` in its own transaction before its effect starts, and its result
//! right after, because only those two writes keep the guarantee across a crash: when the step
//! is re-run, a finished call returns its stored result (never runs twice) and a call found
//! `running` is settled as interrupted with a result the model can read. Pure and idempotent
//! tools are simply run again by a re-run step (an idempotent one with the same idempotency
//! key), so they write nothing outside the step's commit.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::document::{Document, DocumentKind};
use rein_core::engine::ports::{PortError, ToolOutput, ToolPort};
use rein_core::message::ContentPart;
use rein_core::tool::ToolManifestMap;
use rein_core::{AgentState, ToolCall};
use rein_store::{Effect, ExecStatus, Store, ToolExecution};
use rein_tools::documents::{Documents, DocumentsError, Embedder, Memory, Notes};
use rein_tools::{BuiltinConfig, Tool, ToolContext, ToolError, ToolRegistry};
use std::path::PathBuf;
use std::sync::Arc;
use tracing::Instrument;

/// The owner of an operation's memories and notes: its user and agent.
pub fn document_scope(state: &AgentState) -> String {
    let user = state.metadata.owner.as_deref().unwrap_or("local");
    let agent = state.metadata.agent_id.as_deref().unwrap_or("default");
    format!("user:{user}/agent:{agent}")
}

/// The user an operation belongs to (`None`: the local CLI's).
pub fn owner_of(state: &AgentState) -> Option<String> {
    state.metadata.owner.clone()
}

/// A store error as the document tools see it.
fn kept(e: rein_store::StoreError) -> DocumentsError {
    DocumentsError(Box::new(e))
}

/// The store as the memory and notes tools' document store.
pub struct StoreDocuments(pub Arc<dyn Store>);

impl Documents for StoreDocuments {
    fn put<'a>(&'a self, doc: &'a Document) -> BoxFuture<'a, Result<(), DocumentsError>> {
        async move { self.0.put_document(doc).await.map_err(kept) }.boxed()
    }
    fn get<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Document>, DocumentsError>> {
        async move { self.0.get_document(kind, scope, id).await.map_err(kept) }.boxed()
    }
    fn list<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Document>, DocumentsError>> {
        async move {
            self.0
                .list_documents(kind, scope, limit)
                .await
                .map_err(kept)
        }
        .boxed()
    }
    fn delete<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, DocumentsError>> {
        async move { self.0.delete_document(kind, scope, id).await.map_err(kept) }.boxed()
    }
}

/// The store as where `brief.create` keeps briefs: the owner is the operation's user (or, for
/// an operation without one, `fallback_owner`: the CLI's local user); the brief links the
/// operation at the top of the tree and the task whose run that is; urgent ones are queued for
/// the owner's hook.
pub struct StoreBriefs {
    store: Arc<dyn Store>,
    fallback_owner: Option<String>,
}

impl rein_tools::brief::BriefSink for StoreBriefs {
    fn raise<'a>(
        &'a self,
        cx: &'a ToolContext,
        draft: rein_tools::brief::BriefDraft,
    ) -> BoxFuture<'a, Result<String, rein_tools::brief::BriefRefused>> {
        use rein_store::{BriefAction, BriefPriority};
        use rein_tools::brief::BriefRefused;
        async move {
            let fail = |e: rein_store::StoreError| BriefRefused::Store(e.to_string());
            let record = self
                .store
                .operation(cx.operation_id)
                .await
                .map_err(fail)?
                .ok_or(BriefRefused::UnknownOperation)?;
            let owner = record
                .owner
                .clone()
                .or_else(|| self.fallback_owner.clone())
                .ok_or(BriefRefused::NoOwner)?;
            let root = record
                .root_operation
                .map_or_else(|| cx.operation_id.to_string(), |r| r.to_string());
            let task_id = self.store.task_of_run(&root).await.map_err(fail)?;
            let priority: BriefPriority = draft.priority.into();
            let mut actions: Vec<BriefAction> = draft
                .actions
                .into_iter()
                .map(|a| BriefAction {
                    key: a.key,
                    label: a.label,
                })
                .collect();
            if !actions.iter().any(|a| a.key == "acknowledge") {
                actions.push(BriefAction {
                    key: "acknowledge".into(),
                    label: "Acknowledge".into(),
                });
            }
            let now = chrono::Utc::now();
            let brief = rein_store::Brief {
                id: rein_store::new_brief_id(),
                owner,
                task_id,
                operation_id: Some(root),
                agent: record.agent.clone(),
                kind: draft.kind.into(),
                priority,
                title: draft.title,
                summary: draft.summary,
                artifacts: vec![rein_store::Artifact {
                    kind: "operation".into(),
                    reference: cx.operation_id.to_string(),
                    title: None,
                }],
                actions,
                read_at: None,
                resolution: None,
                created_at: now,
            };
            let notify = if priority == BriefPriority::Urgent {
                self.store
                    .brief_hook(&brief.owner)
                    .await
                    .map_err(fail)?
                    .map(|_| now)
            } else {
                None
            };
            self.store.add_brief(&brief, notify).await.map_err(fail)?;
            Ok(brief.id)
        }
        .boxed()
    }
}

/// The tools that raise briefs through `sink`: `brief.create`, and `ask_user` (an unattended
/// run's questions, when its spec says so).
fn register_briefs(
    registry: &mut rein_tools::ToolRegistry,
    sink: Arc<dyn rein_tools::brief::BriefSink>,
) -> Result<(), ToolError> {
    registry.register(Arc::new(rein_tools::brief::BriefTool::new(Arc::clone(
        &sink,
    ))))?;
    registry.register(Arc::new(rein_tools::ask_user::AskUser::with_briefs(sink)))
}

/// Tools by identifier, executing through the store.
pub struct ToolHost {
    registry: ToolRegistry,
    store: Arc<dyn Store>,
    docs: Arc<dyn Documents>,
    /// Every tool's manifest, built once: operations started here share these `Arc`s, and
    /// operations loaded from the store are given them back where equal (see
    /// [`ToolHost::intern`]), so per-manifest work (token counts) is done once per process.
    map: Arc<ToolManifestMap>,
    /// Identifiers of the tools added beyond the built-ins, in the order they were added.
    added: Vec<String>,
    /// The client driving operations here that does some calls itself (an editor over ACP).
    clients: Option<Arc<dyn crate::client_tools::ClientTools>>,
    /// Whose artifacts the files of operations without an owner are (the CLI's local user).
    fallback_owner: Option<String>,
    /// The secrets replaced in every tool result before anything records or reads it.
    redactor: crate::redact::Redactor,
}

impl ToolHost {
    /// A host with the built-in tools; the knowledge tool embeds queries with `models`.
    pub fn new(
        store: Arc<dyn Store>,
        models: Option<Arc<dyn crate::models::ModelSource>>,
        config: &BuiltinConfig,
    ) -> Result<Self, ToolError> {
        let mut registry = ToolRegistry::with_builtins(config)?;
        let docs: Arc<dyn Documents> = Arc::new(StoreDocuments(Arc::clone(&store)));
        registry.register(Arc::new(Memory::new(Arc::clone(&docs))))?;
        registry.register(Arc::new(Notes::new(Arc::clone(&docs))))?;
        // Runs delegation calls; its manifest is offered per operation (see
        // `Driver::offered_tools`), listing the agents that operation may delegate to.
        registry.register(Arc::new(rein_tools::agents::Agents))?;
        // Offered only to operations with knowledge bases (see `Driver::offered_tools`).
        registry.register(Arc::new(crate::knowledge::KnowledgeTool {
            store: Arc::clone(&store),
            models,
        }))?;
        register_briefs(
            &mut registry,
            Arc::new(StoreBriefs {
                store: Arc::clone(&store),
                fallback_owner: None,
            }),
        )?;
        let map = manifest_map(&registry);
        Ok(Self {
            registry,
            store,
            docs,
            map,
            added: Vec::new(),
            clients: None,
            fallback_owner: None,
            redactor: crate::redact::Redactor::default(),
        })
    }

    /// Replace the secrets `redactor` knows in every tool result.
    pub fn set_redactor(&mut self, redactor: crate::redact::Redactor) {
        self.redactor = redactor;
    }

    /// The built-in tools that take settings (`web`, `shell`, `python`) as `config` says. Like the
    /// built-ins they replace, they are not recorded as tools a continuing process must have.
    pub fn configure_builtins(&mut self, config: &BuiltinConfig) -> Result<(), ToolError> {
        self.registry
            .register(Arc::new(rein_tools::web::Web::new(config.web.clone())))?;
        self.registry
            .register(Arc::new(rein_tools::shell::Shell::new(
                config.shell.clone(),
            )))?;
        if config.interpreter.workspaces.is_some() {
            for language in [
                rein_tools::interpreter::Language::Python,
                rein_tools::interpreter::Language::Node,
            ] {
                self.registry
                    .register(Arc::new(rein_tools::interpreter::Interpreter::new(
                        language,
                        config.interpreter.clone(),
                    )))?;
            }
        }
        self.map = manifest_map(&self.registry);
        Ok(())
    }

    /// Embed memories with `embedder` and recall them by meaning as well as by words.
    pub fn set_embedder(&mut self, embedder: Arc<dyn Embedder>) -> Result<(), ToolError> {
        let memory = Memory::new(Arc::clone(&self.docs)).with_embedder(embedder);
        self.registry.register(Arc::new(memory))?;
        self.map = manifest_map(&self.registry);
        Ok(())
    }

    /// Offer `skills.activate` over `catalog` (when it has skills). Like the built-ins, it is
    /// not recorded as a tool a continuing process must have.
    pub fn set_skills(
        &mut self,
        catalog: Arc<rein_tools::skills::SkillCatalog>,
    ) -> Result<(), ToolError> {
        if catalog.is_empty() {
            return Ok(());
        }
        self.registry
            .register(Arc::new(rein_tools::skills::ActivateSkill::new(catalog)))?;
        self.map = manifest_map(&self.registry);
        Ok(())
    }

    /// Briefs raised by operations without an owner go to `owner` (the CLI's local user), and
    /// the files their calls produce are kept as that user's artifacts.
    pub fn set_brief_owner(&mut self, owner: String) -> Result<(), ToolError> {
        self.fallback_owner = Some(owner.clone());
        register_briefs(
            &mut self.registry,
            Arc::new(StoreBriefs {
                store: Arc::clone(&self.store),
                fallback_owner: Some(owner),
            }),
        )?;
        self.map = manifest_map(&self.registry);
        Ok(())
    }

    /// Have `clients` do the calls they take for the operations they drive.
    pub(crate) fn set_clients(&mut self, clients: Arc<dyn crate::client_tools::ClientTools>) {
        self.clients = Some(clients);
    }

    /// Add a tool this host has by its configuration (like a built-in, not recorded as a tool
    /// a continuing process must have: one without it says the tool is not installed).
    pub(crate) fn register_builtin(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        self.registry.register(tool)?;
        self.map = manifest_map(&self.registry);
        Ok(())
    }

    /// Add a tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let id = tool.manifest().identifier;
        self.registry.register(tool)?;
        self.map = manifest_map(&self.registry);
        if !self.added.contains(&id) {
            self.added.push(id);
        }
        Ok(())
    }

    /// Identifiers of the tools added beyond the built-ins.
    pub fn added(&self) -> Vec<String> {
        self.added.clone()
    }

    /// Whether a tool with `identifier` is installed.
    pub fn has(&self, identifier: &str) -> bool {
        self.registry.get(identifier).is_some()
    }

    /// Manifests of every tool, by identifier.
    pub fn manifests(&self) -> Arc<ToolManifestMap> {
        Arc::clone(&self.map)
    }

    /// Give `loaded` (manifests read back from the store) this host's shared manifests where
    /// they are equal, so a loaded operation shares them as one started here does.
    pub fn intern(&self, loaded: &mut Arc<ToolManifestMap>) {
        if Arc::ptr_eq(loaded, &self.map) {
            return;
        }
        if **loaded == *self.map {
            *loaded = Arc::clone(&self.map);
            return;
        }
        for (id, m) in Arc::make_mut(loaded).iter_mut() {
            if let Some(ours) = self.map.get(id)
                && !Arc::ptr_eq(m, ours)
                && **m == **ours
            {
                *m = Arc::clone(ours);
            }
        }
    }
}

fn manifest_map(registry: &ToolRegistry) -> Arc<ToolManifestMap> {
    Arc::new(
        registry
            .manifests()
            .into_iter()
            .filter(|m| m.identifier != rein_tools::agents::IDENTIFIER)
            .map(|m| (m.identifier.clone(), Arc::new(m)))
            .collect(),
    )
}

/// `call` done by the client holding `topic`, if it takes it (`None`: rein's tool runs it). A
/// call the tool itself would refuse (a path outside the working directory) is refused as the
/// tool words it, nothing done.
async fn delegated(
    clients: &dyn crate::client_tools::ClientTools,
    topic: &str,
    call: &ToolCall,
    cx: &ToolContext,
    args: &serde_json::Value,
) -> Option<ToolOutput> {
    let checked = rein_tools::delegate::delegable(cx, &call.identifier, &call.api, args)?;
    let delegable = match checked {
        Ok(c) => c,
        Err(refusal) => return Some(ToolOutput::failed(refusal.to_string())),
    };
    let work = clients.run(crate::client_tools::ClientCall {
        topic,
        operation_id: cx.operation_id,
        call_id: &call.id,
        call: delegable,
    })?;
    Some(work.await)
}

impl ToolHost {
    /// Whose artifacts an operation's calls keep and read: its user, else this process's
    /// fallback (the CLI's local user), else `local`.
    fn files_owner(&self, state: &AgentState) -> String {
        state
            .metadata
            .owner
            .clone()
            .or_else(|| self.fallback_owner.clone())
            .unwrap_or_else(|| "local".to_owned())
    }

    /// Keep the files `out` carries as artifacts of the operation's conversation, attached to
    /// `call`, each named in the result the model reads (by its artifact id) so a later turn
    /// and the person can refer to it. A file that cannot be kept is named as such; the call's
    /// outcome stands.
    ///
    /// The images among them (up to [`MAX_SEEN_IMAGES`], each up to [`MAX_SEEN_IMAGE_BYTES`])
    /// become the result's media, so a model that can see looks at the plot it asked for.
    async fn keep_files(&self, state: &AgentState, call: &ToolCall, out: &mut ToolOutput) {
        let owner = self.files_owner(state);
        let mut kept = String::from("\n--- artifacts ---");
        for mut file in std::mem::take(&mut out.files) {
            // No key or token of this process is kept or shown in a file either.
            file.bytes = match self.redactor.redact_file(std::mem::take(&mut file.bytes)) {
                Ok(bytes) => bytes,
                Err(secret) => {
                    tracing::warn!(call = %call.id, file = %file.name, "a file holding a secret was withheld");
                    kept.push_str(&format!(
                        "\n{} was withheld: it holds the value of {secret}, a secret of this process",
                        file.name
                    ));
                    continue;
                }
            };
            if let Some(image) = seen_image(&file, out.media.len()) {
                out.media.push(image);
            }
            let new = rein_store::NewArtifact {
                topic_id: state.metadata.topic_id.as_deref(),
                operation_id: state.operation_id,
                tool_call_id: &call.id,
                name: &file.name,
                media_type: &file.media_type,
                content: &file.bytes,
            };
            match self.store.put_artifact(&owner, new).await {
                Ok(a) => kept.push_str(&format!("\n{} {} ({})", a.id, a.name, a.media_type)),
                Err(e) => {
                    tracing::warn!(call = %call.id, file = %file.name, error = %e, "artifact not kept");
                    kept.push_str(&format!("\n{} could not be kept: {e}", file.name));
                }
            }
        }
        out.content.push_str(&kept);
    }
}

/// The most images of one call a model is shown: each costs a request hundreds of tokens.
pub const MAX_SEEN_IMAGES: usize = 4;

/// The largest image a model is shown: 3.75 MB is 5 MB as base64, Anthropic's limit for one
/// image (OpenAI's is larger). A larger one stays an artifact the result names.
pub const MAX_SEEN_IMAGE_BYTES: usize = 3_750_000;

/// `file` as an image the model is shown, when it is one (by its bytes, as an attachment is
/// judged), small enough, and fewer than [`MAX_SEEN_IMAGES`] are shown already.
fn seen_image(file: &rein_core::engine::ports::ToolFile, shown: usize) -> Option<ContentPart> {
    if shown >= MAX_SEEN_IMAGES || file.bytes.len() > MAX_SEEN_IMAGE_BYTES {
        return None;
    }
    let part = crate::attachment::from_bytes(&file.name, &file.bytes);
    matches!(part, ContentPart::Image { .. }).then_some(part)
}

/// How many calls of `call`'s tool API come before it in the operation's conversation.
fn earlier_calls(state: &AgentState, call: &ToolCall) -> u32 {
    let mut n = 0u32;
    for c in state.messages.iter().flat_map(|m| m.tool_calls.iter()) {
        if c.id == call.id {
            break;
        }
        if c.identifier == call.identifier && c.api == call.api {
            n = n.saturating_add(1);
        }
    }
    n
}

/// Records the outside job of one at-most-once call with its running execution
/// ([`rein_tools::CallJob`]).
struct JobBook {
    store: Arc<dyn Store>,
    exec: ToolExecution,
}

impl rein_tools::JobRecorder for JobBook {
    fn record<'a>(&'a self, job: &'a str) -> BoxFuture<'a, Result<(), PortError>> {
        async move {
            let mut exec = self.exec.clone();
            exec.job = Some(job.to_owned());
            self.store
                .record_tool_execution(&exec)
                .await
                .map_err(store_err)?;
            crate::driver::pause_point(&format!("job:{}", exec.tool_call_id)).await;
            Ok(())
        }
        .boxed()
    }
}

/// `output` with the execution record it came from.
fn recorded(mut output: ToolOutput, exec: ToolExecution) -> ToolOutput {
    output.execution = Some(exec);
    output
}

fn store_err(e: rein_store::StoreError) -> PortError {
    PortError::new(rein_core::failure::Fault::Store, e.to_string())
}

impl ToolPort for ToolHost {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        self.run(None, None, call, state)
    }
}

/// The tools of one run: this process's, and its owner's MCP servers
/// ([`crate::own_mcp::OwnTools`]).
pub(crate) struct RunTools {
    pub(crate) host: Arc<ToolHost>,
    pub(crate) own: Option<Arc<crate::own_mcp::OwnTools>>,
    /// The run's commit in flight: a call with effects waits for it.
    pub(crate) landing: Arc<crate::driver::Landing>,
}

impl ToolPort for RunTools {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        self.host
            .run(self.own.as_deref(), Some(&self.landing), call, state)
    }
}

impl ToolHost {
    /// Run `call` with this process's tools, then `own` (an owner's MCP servers): a tool of
    /// this process wins a name both have.
    fn run<'a>(
        &'a self,
        own: Option<&'a crate::own_mcp::OwnTools>,
        landing: Option<&'a crate::driver::Landing>,
        call: &'a ToolCall,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format!("execute_tool {}", call.key()),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.key(),
            gen_ai.tool.call.id = %call.id,
            rein.operation.id = %state.operation_id,
        );
        async move {
            // A device's tool runs on the device: the gateway sends the call once this step is
            // committed, and its answer completes it.
            if state
                .tool_manifests
                .get(&*call.identifier)
                .is_some_and(|m| m.kind == rein_core::tool::ToolKind::Device)
            {
                return Ok(ToolOutput::deferred("Sent to the device; waiting for its answer."));
            }
            let registry = match own {
                Some(own) if self.registry.get(&call.identifier).is_none() => {
                    if let Some(why) = own.unreachable.get(&*call.identifier) {
                        return Ok(ToolOutput::failed(format!("Your MCP server `{}` cannot be used now: {why}", call.identifier)));
                    }
                    &own.registry
                }
                _ => &self.registry,
            };
            let Some(tool) = registry.get(&call.identifier) else {
                return Ok(ToolOutput::failed(format!("Tool `{}` is not installed.", call.identifier)));
            };
            let op = state.operation_id;
            let effect = tool.effect(&call.api);
            // A call with effects runs only once every earlier step is on disk: the model step
            // that asked for it can no longer be lost and asked again differently.
            if effect != Effect::Pure
                && let Some(landing) = landing
            {
                landing.wait().await?;
            }
            let key = format!("{op}:{}", call.id);
            let mut exec = ToolExecution {
                operation_id: op,
                tool_call_id: call.id.to_string(),
                step_index: u64::from(state.step_count),
                tool: call.key(),
                effect,
                status: ExecStatus::Running,
                result: None,
                job: None,
            };
            // Only an at-most-once call can have left a record before its step committed.
            let prior = if effect == Effect::AtMostOnce {
                crate::sim::point("tool-check").await;
                if crate::sim::planted(crate::sim::Bug::UnreadIntent) {
                    None
                } else {
                    self.store.tool_execution(op, &call.id).await.map_err(store_err)?
                }
            } else {
                None
            };
            // The outside job an earlier run of this call started, to wait for again.
            let mut started = None;
            if let Some(prior) = prior {
                match (prior.status, prior.effect) {
                    (ExecStatus::Running, Effect::AtMostOnce) if prior.job.is_some() => {
                        tracing::info!(call = %call.id, job = prior.job.as_deref().unwrap_or_default(), "waiting again for the job an interrupted call started");
                        started = prior.job;
                    }
                    (ExecStatus::Succeeded | ExecStatus::Failed, _) => {
                        // Finished before a crash: report the same result, never run again.
                        let ok = prior.status == ExecStatus::Succeeded;
                        let content = prior.result.clone().unwrap_or_default();
                        let output = if ok { ToolOutput::ok(content) } else { ToolOutput::failed(content) };
                        return Ok(recorded(output, prior));
                    }
                    (ExecStatus::Running, Effect::AtMostOnce) | (ExecStatus::Interrupted, _) => {
                        let content = format!(
                            "The call to `{}` was interrupted (the process stopped while it ran); it may or may not have taken effect, and it was not repeated. Check before trying again.",
                            call.key()
                        );
                        exec.status = ExecStatus::Interrupted;
                        exec.result = Some(content.clone());
                        self.store.record_tool_execution(&exec).await.map_err(store_err)?;
                        return Ok(recorded(ToolOutput::failed(content), exec));
                    }
                    _ => {}
                }
            }
            let parsed: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
            if let Err(problems) = registry.validate(&call.identifier, &call.api, &parsed) {
                // The model reads what was wrong; nothing ran.
                let content = format!("Invalid arguments for `{}`: {problems}. Call it again with arguments that match its parameters.", call.key());
                exec.status = ExecStatus::Failed;
                exec.result = Some(content.clone());
                return Ok(recorded(ToolOutput::failed(content), exec));
            }
            if effect == Effect::AtMostOnce && started.is_none() {
                self.store.record_tool_execution(&exec).await.map_err(store_err)?;
            }
            crate::driver::pause_point(&format!("tool:{}", call.id)).await;
            let job = rein_tools::CallJob {
                started,
                recorder: (effect == Effect::AtMostOnce).then(|| {
                    Arc::new(JobBook { store: Arc::clone(&self.store), exec: exec.clone() })
                        as Arc<dyn rein_tools::JobRecorder>
                }),
            };
            let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
            let cx = ToolContext {
                operation_id: op,
                working_directory: state.metadata.working_directory.as_deref().map(PathBuf::from),
                idempotency_key: key.clone(),
                available_tools: state
                    .tool_manifests
                    .keys()
                    .filter(|k| k.as_str() != rein_tools::activate::IDENTIFIER)
                    .cloned()
                    .collect(),
                scope: document_scope(state),
                knowledge: state.metadata.knowledge.clone(),
                egress: state.metadata.egress.clone(),
                owner: owner_of(state),
                question_briefs: state.intervention.question_briefs,
                sandbox: state.metadata.sandbox.unwrap_or_default(),
                skill_dirs: state
                    .activated_skills
                    .iter()
                    .filter_map(|s| Some((s.name.clone(), PathBuf::from(s.dir.as_ref()?))))
                    .collect(),
                topic: state.metadata.topic_id.clone(),
                earlier_calls: earlier_calls(state, call),
                files_owner: self.files_owner(state),
                job,
            };
            let delegated = match (&self.clients, state.metadata.topic_id.as_deref()) {
                (Some(clients), Some(topic)) => {
                    delegated(clients.as_ref(), topic, call, &cx, &args).await
                }
                _ => None,
            };
            let mut out = match delegated {
                Some(out) => out,
                None => match tool.call(&cx, &call.api, args).await {
                    Ok(out) => out,
                    Err(e) => ToolOutput::failed(format!("Tool `{}` failed: {}", call.key(), e.message)),
                },
            };
            // Message text from here on, before anything records it: both stores take it
            // (PostgreSQL refuses U+0000) and the model reads what is stored.
            if let std::borrow::Cow::Owned(text) = rein_core::text::message_text(&out.content) {
                out.content = text;
            }
            // No key or token of this process reaches the model, the record or an event.
            if let std::borrow::Cow::Owned(text) = self.redactor.redact(&out.content) {
                tracing::warn!(call = %call.id, tool = %call.key(), "a secret was redacted from a tool result");
                out.content = text;
            }
            if out.cost.is_zero() {
                // A tool that does not price its own calls is charged its manifest's price.
                if let Some(price) = state
                    .tool_manifests
                    .get(&*call.identifier)
                    .and_then(|m| m.api(&call.api))
                    .and_then(|a| a.cost)
                {
                    out.cost = price;
                }
            }
            if !out.files.is_empty() {
                self.keep_files(state, call, &mut out).await;
            }
            exec.status = if out.success { ExecStatus::Succeeded } else { ExecStatus::Failed };
            exec.result = Some(out.content.clone());
            if effect == Effect::AtMostOnce
                && let Err(e) = self.store.record_tool_execution(&exec).await
            {
                // The call ran: its effect happened, so it is never reported as failed. The
                // step's commit records the execution with its result; if the process dies
                // first, the `running` record settles it as interrupted, never run again.
                tracing::warn!(call = %call.id, error = %e, "tool execution not recorded before the commit");
            }
            Ok(recorded(out, exec))
        }
        .instrument(span)
        .boxed()
    }
}
