//! How a spec becomes an engine: the brain (this driver's tuning narrowed to the spec's
//! scope), the model and summarizer ports, the tool host, and the token estimator of the
//! spec's model. A process lacking what the spec names refuses here, before anything runs.

use super::Driver;
use super::open::Loaded;
use crate::error::DriverError;
use crate::model_port::ModelPort;
use crate::models::ModelSource;
use rein_context::{Encoding, TiktokenEstimator};
use rein_core::agent::TokenEstimator;
use rein_core::engine::{EventSink, RuntimeConfig};
use rein_core::instruction::InstructionKind;
use rein_core::spec::OperationSpec;
use rein_core::state::ModelRef;
use rein_core::tool::ToolManifestMap;
use rein_core::{AgentRuntime, GeneralChatAgent, GeneralChatAgentConfig, OperationId};
use std::sync::Arc;

/// The engine of one run, with what lives as long as it: where its commit in flight is, and
/// the writer of what it is doing.
pub(super) struct Running {
    pub runtime: AgentRuntime,
    pub landing: Arc<super::landing::Landing>,
    _activity: crate::activity::ActivityWriter,
}

/// The model providers an operation's spec resolves to in this process.
struct Providers {
    model: ModelRef,
    provider: Arc<dyn rein_model::ModelProvider>,
    summary_model: ModelRef,
    summary_provider: Arc<dyn rein_model::ModelProvider>,
    /// Where the operation's other models come from (delegation, knowledge embeddings): its
    /// owner's providers over this process's.
    models: Arc<dyn ModelSource>,
}

impl Driver {
    /// The token estimator for `model`: the catalog's tokenizer hint, else o200k. One per
    /// vocabulary and factor for the driver's lifetime, so what it remembers (the shared tool
    /// manifests' counts above all) serves every run.
    fn estimator(&self, model: &ModelRef) -> TiktokenEstimator {
        let (encoding, factor) = match self
            .catalog
            .lookup(&model.provider, &model.model)
            .and_then(|m| m.tokenizer.clone())
        {
            Some(h) if h.encoding == "cl100k" => (Encoding::Cl100k, h.factor),
            Some(h) => (Encoding::O200k, h.factor),
            None => (Encoding::O200k, 1.0),
        };
        let mut known = self.estimators.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, e)) = known
            .iter()
            .find(|((enc, f), _)| *enc == encoding && *f == factor.to_bits())
        {
            return e.clone();
        }
        let e = TiktokenEstimator::new(encoding, factor);
        known.push(((encoding, factor.to_bits()), e.clone()));
        e
    }

    /// The brain of an operation: this driver's tuning with the spec's scope, and (given the
    /// tools it is offered) whether they are disclosed progressively.
    fn brain(
        &self,
        spec: &OperationSpec,
        model: &ModelRef,
        offered: Option<&ToolManifestMap>,
    ) -> (GeneralChatAgentConfig, TiktokenEstimator) {
        let estimator = self.estimator(model);
        let mut agent = self.agent.clone();
        agent.allowed_tools = spec.allowed_tools.clone();
        // One decision sets both what the model is sent and what the agent counts.
        agent.progressive_tools = offered.and_then(|m| progressive(spec, m, &estimator));
        if self.window_from_catalog
            && let Some(info) = self.catalog.lookup(&model.provider, &model.model)
        {
            agent.compression.window_tokens = info.context_window;
            agent.compression.max_output_tokens = Some(info.max_output);
        }
        (agent, estimator)
    }

    /// The runtime of a run that steps the operation: its model, its tools (this process must
    /// have every tool the spec records), its scope and context settings, with a sink that also
    /// keeps the operation's activity on its record (returned guard: the writer).
    pub(super) async fn running_runtime(&self, run: &Loaded) -> Result<Running, DriverError> {
        // Refuse before the record says anything about running.
        let models = self.models_of(&run.spec).await?;
        let providers = self.providers(run.id, &run.spec, models)?;
        // Only the owner's servers this operation was offered are connected.
        let offered = &run.committed.tool_manifests;
        let own = self
            .own_tools(&run.spec, &|name| offered.contains_key(name))
            .await?;
        // Previews wait for the commit in flight (pipelined durability), then the host's sink.
        let landing = super::landing::Landing::new(self.sink.clone());
        let (sink, writer) = crate::activity::track(
            Arc::clone(&self.store),
            run.id,
            self.sink
                .is_some()
                .then(|| Arc::clone(&landing) as Arc<dyn EventSink>),
            run.committed.step_count + 1,
        );
        let sink: Arc<dyn EventSink> = sink;
        let tools: Arc<dyn rein_core::engine::ports::ToolPort> = Arc::new(crate::tools::RunTools {
            host: Arc::clone(&self.tools),
            own: (!own.is_empty()).then(|| Arc::new(own)),
            landing: Arc::clone(&landing),
        });
        let runtime = self.runtime_with(
            &run.spec,
            offered,
            providers,
            tools,
            Some(sink),
            Some(Arc::clone(&landing)),
        );
        Ok(Running {
            runtime,
            landing,
            _activity: writer,
        })
    }

    /// Refuse an operation this process cannot run: an MCP server or custom tool the spec
    /// records that is not here, or a model (or compression model) it has no provider for.
    pub(super) async fn preflight(
        &self,
        id: OperationId,
        spec: &OperationSpec,
    ) -> Result<(), DriverError> {
        // An external agent is its own model and tools: what it needs is its program.
        match &spec.surface {
            rein_core::spec::Surface::External(kind) => {
                let command = self
                    .external
                    .get(*kind)
                    .ok_or(crate::external::ExternalError::NotEnabled(kind.as_str()))?;
                crate::external::resolve_program(*kind, &command.program)?;
                return Ok(());
            }
            // The device checks that it runs the agent when asked to; a remote agent is
            // reached (and its registration read) when it runs.
            rein_core::spec::Surface::ExternalOnDevice { .. }
            | rein_core::spec::Surface::A2a(_) => return Ok(()),
            rein_core::spec::Surface::Local
            | rein_core::spec::Surface::Server
            | rein_core::spec::Surface::Device(_) => {}
        }
        let models = self.models_of(spec).await?;
        self.providers(id, spec, models).map(|_| ())
    }

    /// The tools of `spec`'s owner's MCP servers that `wanted` names (none without an owner,
    /// or where users define none).
    pub(super) async fn own_tools(
        &self,
        spec: &OperationSpec,
        wanted: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<crate::own_mcp::OwnTools, DriverError> {
        let Some(own) = &self.own_mcp else {
            return Ok(Default::default());
        };
        Ok(own
            .tools_for(&*self.store, spec.owner.as_deref(), wanted, &|name| {
                self.tools.has(name)
            })
            .await?)
    }

    /// Where the models of an operation come from: its owner's own providers over this
    /// process's, when this process serves them; else this process's.
    pub(super) async fn models_of(
        &self,
        spec: &OperationSpec,
    ) -> Result<Arc<dyn ModelSource>, DriverError> {
        Ok(crate::own_models::models_for(
            self.own_keys.as_ref(),
            &*self.store,
            &self.models,
            spec.owner.as_deref(),
        )
        .await?)
    }

    /// What the spec runs on: its tools must all be here; its model's provider, and the
    /// compression model's (the model's own when it names none).
    fn providers(
        &self,
        id: OperationId,
        spec: &OperationSpec,
        models: Arc<dyn ModelSource>,
    ) -> Result<Providers, DriverError> {
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
        let provider = models.provider(&model)?;
        let (summary_provider, summary_model) = match &spec.compression_model {
            Some(m) => (models.provider(m)?, m.clone()),
            None => (Arc::clone(&provider), model.clone()),
        };
        Ok(Providers {
            model,
            provider,
            summary_model,
            summary_provider,
            models,
        })
    }

    fn runtime_with(
        &self,
        spec: &OperationSpec,
        offered: &ToolManifestMap,
        providers: Providers,
        tools: Arc<dyn rein_core::engine::ports::ToolPort>,
        sink: Option<Arc<dyn EventSink>>,
        landing: Option<Arc<super::landing::Landing>>,
    ) -> AgentRuntime {
        let Providers {
            model,
            provider,
            summary_model,
            summary_provider,
            models,
        } = providers;
        let (agent, estimator) = self.brain(spec, &model, Some(offered));
        let mut port = self.model_port(spec, &model, provider, &models, &agent, &estimator);
        port.landing = landing;
        let estimator: Arc<dyn TokenEstimator> = Arc::new(estimator);
        let summarizer = crate::ModelSummarizer {
            provider: summary_provider,
            provider_id: summary_model.provider.to_string(),
            model: summary_model.model.to_string(),
            window_tokens: self
                .catalog
                .lookup(&summary_model.provider, &summary_model.model)
                .map(|info| info.context_window),
            pricing: crate::pricing::Pricing::new(Arc::clone(&self.catalog), spec),
            cancel: self.cancel.clone(),
        };
        let delegator: Arc<dyn rein_core::engine::Executor> =
            Arc::new(super::delegate::Delegator {
                agents: self.agents.clone(),
                models,
                catalog: Arc::clone(&self.catalog),
                pricing: crate::pricing::Pricing::new(Arc::clone(&self.catalog), spec),
                spec: spec.clone(),
            });
        let executors = rein_core::engine::ExecutorTable::new()
            .with(InstructionKind::ExecSubAgents, Arc::clone(&delegator))
            .with(InstructionKind::ExecSubAgent, delegator);
        let config = RuntimeConfig {
            executors,
            llm: Some(Arc::new(port)),
            tools: Some(tools),
            summarizer: Some(Arc::new(summarizer)),
            keep_recent_tokens: spec
                .context
                .keep_recent_tokens
                .min(agent.compression.window_tokens / 4),
            estimator: Arc::clone(&estimator),
            sink,
            ..Default::default()
        };
        AgentRuntime::new(brain_of(spec, agent, estimator), config)
    }

    /// The port `spec`'s calls to `model` go through (at `provider`), as `agent` (the brain's
    /// tuning) discloses the tools.
    fn model_port(
        &self,
        spec: &OperationSpec,
        model: &ModelRef,
        provider: Arc<dyn rein_model::ModelProvider>,
        models: &Arc<dyn ModelSource>,
        agent: &GeneralChatAgentConfig,
        estimator: &TiktokenEstimator,
    ) -> ModelPort {
        ModelPort {
            provider,
            provider_id: model.provider.to_string(),
            catalog: Arc::clone(&self.catalog),
            pricing: crate::pricing::Pricing::new(Arc::clone(&self.catalog), spec),
            store: Arc::clone(&self.store),
            models: Arc::clone(models),
            cancel: self.cancel.clone(),
            pipeline: Arc::clone(&self.pipeline),
            context: spec.context.clone(),
            progressive_tools: agent.progressive_tools.clone(),
            skills: Arc::clone(&self.skills),
            estimator: estimator.clone(),
            embedder: self.embedder.clone(),
            query_memo: Default::default(),
            knowledge_memo: Default::default(),
            memory_memo: Default::default(),
            last_request: Default::default(),
            landing: None,
        }
    }

    /// The brain and the model port of `spec` as its operation would step with `offered`
    /// tools: what a replay of one of its model calls asks with.
    pub(super) async fn caller(
        &self,
        id: OperationId,
        spec: &OperationSpec,
        offered: &ToolManifestMap,
    ) -> Result<(Arc<dyn rein_core::Agent>, ModelPort), DriverError> {
        let models = self.models_of(spec).await?;
        let Providers {
            model,
            provider,
            models,
            ..
        } = self.providers(id, spec, models)?;
        let (agent, estimator) = self.brain(spec, &model, Some(offered));
        let port = self.model_port(spec, &model, provider, &models, &agent, &estimator);
        Ok((brain_of(spec, agent, Arc::new(estimator)), port))
    }

    /// A runtime that only settles an operation (cancellation, an expired approval): it calls
    /// no model and no tool, so it works in a process that could not run the operation.
    pub(super) fn settling_runtime(&self, spec: &OperationSpec) -> AgentRuntime {
        let model = spec
            .model
            .clone()
            .unwrap_or_else(|| self.default_model.clone());
        // It calls no model: what the model would be offered does not matter.
        let (agent, estimator) = self.brain(spec, &model, None);
        let estimator: Arc<dyn TokenEstimator> = Arc::new(estimator);
        let config = RuntimeConfig {
            estimator: Arc::clone(&estimator),
            sink: self.sink.clone(),
            ..Default::default()
        };
        AgentRuntime::new(brain_of(spec, agent, estimator), config)
    }
}

/// The brain of `spec`'s operation: a group's supervisor, or the general agent with `agent`'s
/// tuning.
fn brain_of(
    spec: &OperationSpec,
    agent: GeneralChatAgentConfig,
    estimator: Arc<dyn TokenEstimator>,
) -> Arc<dyn rein_core::Agent> {
    match &spec.group {
        Some(group) => Arc::new(rein_core::agent::GroupSupervisor::new(group.clone())),
        None => Arc::new(GeneralChatAgent::new(agent).with_estimator(estimator)),
    }
}

/// Whether `spec`'s operation lists its tools instead of sending their schemas (`Some` with the
/// tools always sent in full, beyond the activation tools: none), given the tools it is
/// offered. `auto` weighs the schemas the allow-list lets through; the same spec and tools
/// give the same answer in every process.
fn progressive(
    spec: &OperationSpec,
    offered: &ToolManifestMap,
    estimator: &TiktokenEstimator,
) -> Option<Vec<String>> {
    let tokens = || -> u64 {
        offered
            .values()
            .filter(|m| {
                m.identifier != rein_core::tool::ACTIVATE_TOOLS
                    && m.identifier != rein_core::tool::ACTIVATE_SKILLS
            })
            .map(|m| {
                rein_context::report::schema_tokens(estimator, m, |api| {
                    spec.allows(&m.identifier, api)
                })
                .0
            })
            .sum()
    };
    let listed = match spec.tools_disclosure {
        rein_core::spec::ToolDisclosure::Auto => spec.tools_disclosure.progressive(tokens()),
        d => d.progressive(0),
    };
    listed.then(Vec::new)
}
