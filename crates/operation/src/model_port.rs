//! The model port: turns the engine's `call_llm` into a model-runtime request (messages through
//! the context pipeline, tool schemas from the manifests unless the pipeline withdrew them)
//! and the normalized stream back into the engine's output.

use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use rein_context::{
    AgentFacts, ContextInput, ModelFacts, Pipeline, SkillBrief, SkillText, StepFacts,
    TiktokenEstimator, ToolBrief,
};
use rein_core::Usd;
use rein_core::document::{DocumentKind, Embedding, rank_hybrid};
use rein_core::engine::ports::{
    LlmOutput, LlmPort, LlmProgress, LlmRequest, PortError, RawToolCall,
};
use rein_core::event::ContextReport;
use rein_core::event::StreamChunk;
use rein_core::failure::Fault;
use rein_core::intervention::key_listed;
use rein_core::message::Message;
use rein_core::message::Reasoning;
use rein_core::spec::ContextSettings;
use rein_core::tool::mangle;
use rein_model::{
    Catalog, ChatRequest, ErrorKind, ModelEvent, ModelProvider, ToolChoice, ToolSpec,
};
use rein_store::{MemoryPool, Store};
use rein_tools::documents::{Embedder, RECALL_WINDOW, embed_one};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Calls one provider for the engine.
pub struct ModelPort {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// Provider id (for pricing).
    pub provider_id: String,
    /// Catalog for capabilities.
    pub catalog: Arc<Catalog>,
    /// What its calls cost.
    pub pricing: crate::pricing::Pricing,
    /// Store for the parent-message preflight and knowledge retrieval.
    pub store: Arc<dyn Store>,
    /// Embeds the user's message for knowledge bases with an embedding model.
    pub models: Arc<dyn crate::models::ModelSource>,
    /// Cancels the model call (and any backoff) when the operation is cancelled.
    pub cancel: CancellationToken,
    /// The context pipeline every request goes through.
    pub pipeline: Arc<Pipeline>,
    /// What the pipeline is told beyond the transcript.
    pub context: ContextSettings,
    /// Progressive tool disclosure: `Some(always)` offers full schemas only for the tools named
    /// in `always` and those the model activated with `activate_tools`; the others are listed
    /// by name and one line. `None` offers every tool.
    pub progressive_tools: Option<Vec<String>>,
    /// Skills the operation may activate (listed while inactive).
    pub skills: Arc<rein_tools::skills::SkillCatalog>,
    /// Counts what each call admits (the operation's model's estimator).
    pub estimator: TiktokenEstimator,
    /// Embeds the request to find memories by meaning; keywords only without one.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The last query embedded: every step of an operation asks with the same user message.
    pub query_memo: Mutex<Option<(String, Option<Embedding>)>>,
    /// The knowledge found for the last user message: every step of a turn asks with it, and
    /// the bases do not change within a run.
    pub knowledge_memo: Mutex<Option<(String, Vec<rein_context::KnowledgeChunk>)>>,
    /// The memories recalled for the last user message: they stay the same until the next
    /// one, so a memory the agent saves meanwhile does not change the head of every later
    /// request of the turn (and miss the providers' prompt caches).
    pub memory_memo: Mutex<Option<(String, Vec<String>)>>,
    /// The last request of this run, item by item: what the next one's stable prefix is
    /// measured against.
    pub last_request: Mutex<crate::prompt_prefix::Previous>,
    /// The run's commit in flight (pipelined durability): messages it adds are not yet stored.
    pub(crate) landing: Option<Arc<crate::driver::Landing>>,
}

/// What the user said last: what memories and knowledge are looked up for.
fn latest_user_text(state: &rein_core::AgentState) -> Option<String> {
    state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == rein_core::Role::User)
        .map(|m| m.text_content())
}

impl ModelPort {
    /// Memories relevant to the latest user message (by words, and by meaning with an
    /// embedder), at most five; recalled once per user message in a run.
    async fn relevant_memories(&self, req: &LlmRequest<'_>) -> Vec<String> {
        if !self.context.memories {
            return Vec::new();
        }
        let Some(query) = latest_user_text(req.state) else {
            return Vec::new();
        };
        if let Some((q, memories)) = self
            .memory_memo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            && *q == query
        {
            return memories.clone();
        }
        let recalled = self.recall_memories(req, &query).await;
        *self.memory_memo.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((query, recalled.clone()));
        recalled
    }

    /// Reads and ranks the memories for `query` (see [`ModelPort::relevant_memories`]).
    async fn recall_memories(&self, req: &LlmRequest<'_>, query: &str) -> Vec<String> {
        let scope = crate::tools::document_scope(req.state);
        let owner = crate::tools::owner_of(req.state);
        // What the agent was told to remember, and what was learnt from the user's
        // conversations (with the user's agents, or with this agent alone when it keeps its
        // own; forgotten ones are never listed).
        let read = async {
            let mut all = self
                .store
                .list_documents(DocumentKind::Memory, &scope, RECALL_WINDOW)
                .await?;
            let pool = MemoryPool::of(crate::memories::private_pool(&req.state.metadata));
            let learnt = self
                .store
                .list_memories(owner.as_deref(), pool, false)
                .await?;
            all.extend(learnt.into_iter().take(RECALL_WINDOW).map(|m| {
                rein_core::document::Document {
                    kind: DocumentKind::Memory,
                    scope: scope.clone(),
                    id: m.id,
                    title: String::new(),
                    body: m.text,
                    created_at: m.created_at,
                    updated_at: m.updated_at,
                    embedding: m.embedding,
                }
            }));
            Ok::<_, rein_store::StoreError>(all)
        };
        let all = match read.await {
            Ok(all) => all,
            Err(e) => {
                // Memories enrich a request; failing to read them must not fail it.
                tracing::warn!(error = %e, "memories could not be read");
                return Vec::new();
            }
        };
        if all.is_empty() {
            return Vec::new();
        }
        let embedding = self.query_embedding(query).await;
        rank_hybrid(all, query, embedding.as_ref(), 5)
            .into_iter()
            .map(|d| d.body)
            .collect()
    }

    /// The best chunks of the operation's knowledge bases for the latest user message, best
    /// first, as many as its budget holds (`knowledge_tokens`, counted by the operation's
    /// model's estimator), each with the file and lines to cite.
    async fn relevant_knowledge(&self, req: &LlmRequest<'_>) -> Vec<rein_context::KnowledgeChunk> {
        let names = &req.state.metadata.knowledge;
        let budget = u64::from(
            req.state
                .metadata
                .knowledge_tokens
                .unwrap_or(rein_core::spec::DEFAULT_KNOWLEDGE_TOKENS),
        );
        if !self.context.knowledge || names.is_empty() || budget == 0 {
            return Vec::new();
        }
        let Some(query) = latest_user_text(req.state) else {
            return Vec::new();
        };
        if let Some((q, chunks)) = self
            .knowledge_memo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            && *q == query
        {
            return chunks.clone();
        }
        let owner = crate::tools::owner_of(req.state);
        let hits = match crate::knowledge::retrieve::search(
            &*self.store,
            Some(&*self.models),
            owner.as_deref(),
            names,
            &query,
            // About one candidate per 200 tokens of budget (chunks hold up to 400 by default,
            // most less): 8 for the default budget.
            u32::try_from(budget.div_ceil(200).clamp(1, 20)).unwrap_or(20),
        )
        .await
        {
            Ok(found) => found.hits,
            Err(e) => {
                // Knowledge enriches a request; failing to read it must not fail it.
                tracing::warn!(error = %e, "knowledge could not be searched");
                return Vec::new();
            }
        };
        let mut left = budget;
        let mut out = Vec::new();
        for (_, hit) in hits {
            let source = crate::knowledge::citation(&hit);
            let size = self.estimator.text_tokens(&hit.text) + self.estimator.text_tokens(&source);
            // Best first: a chunk that does not fit ends the list rather than let a worse,
            // smaller one in ahead of it.
            if size > left {
                break;
            }
            left -= size;
            out.push(rein_context::KnowledgeChunk {
                source,
                text: hit.text,
            });
        }
        *self
            .knowledge_memo
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((query, out.clone()));
        out
    }

    async fn query_embedding(&self, query: &str) -> Option<Embedding> {
        let embedder = self.embedder.as_deref()?;
        let memo = |m: &Mutex<Option<(String, Option<Embedding>)>>| {
            m.lock().unwrap_or_else(|p| p.into_inner()).clone()
        };
        if let Some((q, e)) = memo(&self.query_memo)
            && q == query
        {
            return e;
        }
        let e = embed_one(Some(embedder), query).await;
        *self.query_memo.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((query.to_owned(), e.clone()));
        e
    }

    /// The messages and tools this call sends, through the context pipeline, and what they
    /// admitted.
    fn assemble(
        &self,
        req: &LlmRequest<'_>,
        model: &str,
        memories: Vec<String>,
        knowledge: Vec<rein_context::KnowledgeChunk>,
    ) -> (Vec<Arc<Message>>, Vec<ToolSpec>, ToolChoice, ContextReport) {
        let entry = self.catalog.lookup(&self.provider_id, model);
        let vision = entry.as_ref().is_none_or(|m| m.capabilities.vision);
        // One tool result may take at most half the model's window (about four bytes a
        // token): a larger one would make every later call fail, and compression keeps the
        // newest round whole, so it would not shrink it either. Cut with a visible note.
        let window_cap = entry
            .map(|m| m.context_window)
            .filter(|w| *w > 0)
            .map(|w| usize::try_from(w.saturating_mul(2)).unwrap_or(usize::MAX));
        let max_tool_result_chars = match (self.context.max_tool_result_chars, window_cap) {
            (Some(set), Some(cap)) => Some(set.min(cap)),
            (set, cap) => set.or(cap),
        };
        let model_facts = ModelFacts {
            id: format!("{}/{model}", self.provider_id),
            vision,
            // rein-model groups consecutive same-role turns for the protocols that need it.
            alternating_roles: false,
        };
        let always = self.progressive_tools.as_deref();
        let active =
            |id: &str| rein_core::tool::schemas_offered(id, always, &req.state.activated_tools);
        let allowed = |m: &rein_core::tool::ToolManifest, api: &str| {
            req.payload
                .allowed_tools
                .as_ref()
                .is_none_or(|l| key_listed(l, &m.identifier, api))
        };
        let offers = |m: &rein_core::tool::ToolManifest| {
            active(&m.identifier) && m.apis.iter().any(|a| allowed(m, &a.name))
        };
        let agent = AgentFacts {
            // Messages other agents wrote (a group's) are relabelled against it.
            name: req.state.metadata.agent_id.clone(),
            max_tool_result_chars,
            max_file_chars: self.context.max_file_chars,
            history_limit: self.context.history_limit,
            memories,
            tool_roles: req
                .state
                .tool_manifests
                .values()
                .filter(|m| offers(m))
                .filter_map(|m| Some((m.identifier.clone(), m.system_role.clone()?)))
                .collect(),
            active_skills: req
                .state
                .activated_skills
                .iter()
                .map(|s| SkillText {
                    name: s.name.clone(),
                    body: s.body.clone(),
                    from_call: s.source == "model",
                })
                .collect(),
            knowledge,
            spotlight: self.context.spotlight,
            offers_tools: req.state.tool_manifests.values().any(|m| offers(m)),
            ..Default::default()
        };
        // Skills are listed only where the model can activate them; the pipeline leaves out
        // those whose instructions it puts at the head, and keeps listing one the model
        // activated (its result carries the instructions), so the head does not change.
        let can_activate = req
            .state
            .tool_manifests
            .get(rein_tools::skills::IDENTIFIER)
            .is_some_and(|m| allowed(m, rein_tools::skills::API));
        let available_skills = if can_activate {
            self.skills
                .skills()
                .iter()
                .map(|s| SkillBrief {
                    name: s.name.clone(),
                    description: s.description.clone(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let inactive_tools = match always {
            None => Vec::new(),
            Some(_) => req
                .state
                .tool_manifests
                .values()
                .filter(|m| !active(&m.identifier) && m.apis.iter().any(|a| allowed(m, &a.name)))
                .map(|m| ToolBrief {
                    name: m.identifier.clone(),
                    description: if m.description.is_empty() {
                        m.title.clone()
                    } else {
                        m.description.clone()
                    },
                })
                .collect(),
        };
        let step = StepFacts {
            now: self.context.date.then(chrono::Utc::now),
            working_directory: req
                .state
                .metadata
                .working_directory
                .as_ref()
                .filter(|_| self.context.workspace)
                .map(PathBuf::from),
            os: self
                .context
                .workspace
                .then(|| std::env::consts::OS.to_owned()),
            force_finish: req.force_finish,
            inactive_tools,
            available_skills,
            todos: req.state.todos.clone(),
        };
        let input = ContextInput {
            messages: &req.state.messages,
            agent: &agent,
            model: &model_facts,
            step: &step,
        };
        let (out, mut report) =
            rein_context::report::explain(&self.pipeline, &input, &self.estimator);
        let mut tools = Vec::new();
        let (mut schema_tokens, mut functions) = (0, 0);
        // Tools withdrawn (force-finish) stay defined with a choice of none, the way every
        // protocol allows: a history with tool calls and results but no tools is refused
        // (Anthropic: "Requests which include `tool_use` or `tool_result` blocks must define
        // tools").
        let choice = if out.tools_enabled {
            ToolChoice::Auto
        } else {
            ToolChoice::None
        };
        {
            for m in req.state.tool_manifests.values() {
                if !active(&m.identifier) {
                    continue;
                }
                let (t, n) =
                    rein_context::report::schema_tokens(&self.estimator, m, |api| allowed(m, api));
                schema_tokens += t;
                functions += n;
                for api in &m.apis {
                    if allowed(m, &api.name) {
                        tools.push(ToolSpec {
                            name: mangle(&m.identifier, &api.name),
                            description: api.description.clone(),
                            parameters: api.parameters.clone(),
                        });
                    }
                }
            }
        }
        rein_context::report::admit_tool_schemas(&mut report, schema_tokens, functions);
        (out.messages, tools, choice, report)
    }
}

impl LlmPort for ModelPort {
    fn call<'a>(
        &'a self,
        req: LlmRequest<'a>,
        on_progress: &'a (dyn Fn(LlmProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<LlmOutput, PortError>> {
        // A span per model call, with OpenTelemetry's GenAI attribute names (the binary decides
        // whether spans are exported).
        let requested = req
            .model
            .as_ref()
            .map(|m| m.model.to_string())
            .unwrap_or_default();
        let span = tracing::info_span!(
            "chat",
            otel.name = %format!("chat {requested}"),
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = %self.provider_id,
            gen_ai.request.model = %requested,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            error.type = tracing::field::Empty,
            rein.operation.id = %req.state.operation_id,
        );
        async move {
            // A conversation edited while the operation ran must not get an answer attached to
            // a message that no longer exists.
            // One the run's commit in flight adds exists once it lands, and this step commits
            // only after that; one the step's check read just before it is not read again.
            if let Some(parent) = req.payload.parent_message_id
                && !self.landing.as_ref().is_some_and(|l| l.knows(parent))
                && !self
                    .store
                    .message_exists(parent)
                    .await
                    .map_err(|e| PortError::new(Fault::Store, e.to_string()))?
            {
                return Err(PortError::new(
                    Fault::ConversationParentMissing,
                    format!("the message {parent} this answer would follow was deleted"),
                ));
            }
            let model = req
                .model
                .map(|m| m.model.to_string())
                .ok_or_else(|| PortError::new(ErrorKind::Config, "the operation has no model"))?;
            let here = tracing::Span::current();
            let memories = self.relevant_memories(&req).await;
            let knowledge = self.relevant_knowledge(&req).await;
            let (messages, tools, choice, mut report) =
                self.assemble(&req, &model, memories, knowledge);
            report.stable_prefix_tokens = self
                .last_request
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .next(&tools, &messages, &self.estimator);
            let stable_messages =
                crate::prompt_prefix::stable_messages(&req.state.messages, &messages);
            let mut chat = ChatRequest::new(model.clone(), messages);
            chat.prompt_cache = self
                .context
                .prompt_cache
                .then_some(rein_model::PromptCache {
                    stable_messages: Some(stable_messages),
                    long_ttl: self.context.prompt_cache_hour,
                    key: Some(req.state.operation_id.to_string()),
                });
            chat.tools = tools;
            chat.tool_choice = choice;
            chat.replay_reasoning = self
                .catalog
                .lookup(&self.provider_id, &model)
                .is_some_and(|m| m.capabilities.reasoning);
            chat.cancel = self.cancel.child_token();
            let mut stream = self.provider.chat(chat);
            let mut collector = rein_model::Collector::new();
            while let Some(event) = stream.next().await {
                match &event {
                    ModelEvent::TextDelta { text } => {
                        on_progress(LlmProgress::Chunk(StreamChunk::Text { text: text.clone() }))
                    }
                    ModelEvent::ReasoningDelta { text } => {
                        on_progress(LlmProgress::Chunk(StreamChunk::Reasoning {
                            text: text.clone(),
                        }))
                    }
                    ModelEvent::ToolCallStart {
                        index, id, name, ..
                    } => on_progress(LlmProgress::Chunk(StreamChunk::ToolCall {
                        index: *index,
                        id: id.clone(),
                        name: Some(name.clone()),
                        arguments: String::new(),
                    })),
                    ModelEvent::ToolCallDelta { index, arguments } => {
                        on_progress(LlmProgress::Chunk(StreamChunk::ToolCall {
                            index: *index,
                            id: None,
                            name: None,
                            arguments: arguments.clone(),
                        }))
                    }
                    ModelEvent::Retry {
                        attempt,
                        max_attempts,
                        delay_ms,
                        error,
                    } => on_progress(LlmProgress::Retry {
                        attempt: *attempt,
                        max_attempts: *max_attempts,
                        delay_ms: *delay_ms,
                        error_kind: Some(error.kind.as_str().to_owned()),
                    }),
                    _ => {}
                }
                collector.push(&event);
            }
            let r = collector.finish();
            let usage = r.usage.unwrap_or_default();
            here.record("gen_ai.usage.input_tokens", usage.input);
            here.record("gen_ai.usage.output_tokens", usage.output);
            if let Some(stop) = &r.stop_reason {
                here.record("gen_ai.response.finish_reasons", stop.as_str());
            }
            if let Some(e) = &r.error {
                here.record("error.type", e.kind.as_str());
            }
            let cost = self
                .pricing
                .cost(&self.provider_id, &model, &usage, r.reported_cost)
                .unwrap_or(Usd::ZERO);
            let cache_saved = self.pricing.cache_saved(&self.provider_id, &model, &usage);
            let reasoning = (r.reasoning.is_some()
                || r.reasoning_signature.is_some()
                || !r.redacted_reasoning.is_empty()
                || r.encrypted_reasoning.is_some())
            .then(|| Reasoning {
                text: r.reasoning.clone().unwrap_or_default(),
                signature: r.reasoning_signature.clone(),
                redacted: r.redacted_reasoning.clone(),
                encrypted: r.encrypted_reasoning.clone(),
            });
            if let Some(e) = &r.error {
                if e.kind == ErrorKind::Cancelled {
                    // Keep what was said; the engine interrupts at the next boundary.
                    return Ok(LlmOutput {
                        content: r.text,
                        reasoning,
                        usage,
                        cost,
                        cache_saved,
                        stop_reason: Some("cancelled".into()),
                        ..Default::default()
                    });
                }
                // The kind becomes the error code; the message keeps the provider's details.
                let mut detail = e.message.clone();
                if let Some(s) = e.http_status.filter(|s| *s != 200) {
                    detail.push_str(&format!(" (HTTP {s})"));
                }
                if let Some(c) = e.provider_code.as_deref().or(e.provider_type.as_deref()) {
                    detail.push_str(&format!(" [{c}]"));
                }
                return Err(PortError::new(e.kind, detail));
            }
            let tool_calls = r
                .tool_calls
                .iter()
                .map(|c| RawToolCall {
                    // Gemini has no call ids: synthesize ones unique in the operation (the
                    // message being written is new at every call), or a later turn's result
                    // would answer an earlier turn's call.
                    id: c.id.clone().unwrap_or_else(|| {
                        format!("call_{}_{}", req.assistant_message_id, c.index)
                    }),
                    name: c.name.clone(),
                    arguments: c.arguments_raw.clone(),
                    thought_signature: c.thought_signature.clone(),
                })
                .collect();
            Ok(LlmOutput {
                content: r.text,
                reasoning,
                tool_calls,
                usage,
                cost,
                cache_saved,
                stop_reason: r.stop_reason.map(|s| s.as_str().to_owned()),
                elapsed_ms: 0,
                context: Some(report),
            })
        }
        .instrument(span)
        .boxed()
    }
}
