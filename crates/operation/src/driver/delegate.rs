//! `exec_sub_agents`: the tasks a turn's calls delegated become child operations, created with
//! the commit that parks the parent. Each child's spec is derived from the parent's and never
//! wider: the same working directory, owner and tools this process brings; tools within the
//! parent's allow-list, the agent's and the task's; the stricter approval mode; the smaller
//! limits; and a record of what the parent could still spend, which the whole tree is held to
//! (see `children.rs`). A call whose tasks cannot be delegated (an unknown or unlisted agent,
//! the depth limit, a model this process cannot run) is answered with why, and starts nothing.

use crate::agents::AgentDirectory;
use crate::models::ModelSource;
use crate::profile::SpecOrigin;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::{ExecContext, ExecError, ExecOutput, Executor, SubAgentSpawn};
use rein_core::event::EventKind;
use rein_core::failure::Fault;
use rein_core::instruction::{Instruction, SubAgentTask};
use rein_core::intervention::{ApprovalMode, InterventionConfig, InterventionPolicy, key_listed};
use rein_core::phase::{Phase, RuntimeContext, SubAgentsResultPayload};
use rein_core::spec::{Delegation, OperationSpec};
use rein_core::state::{Budget, Status, SubAgentRun};
use rein_core::tool::ToolManifestMap;
use rein_core::{AgentState, Message, OperationId, ToolStatus, Usd};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The executor of `exec_sub_agent` and `exec_sub_agents` for one operation.
pub(super) struct Delegator {
    /// Where named agents are found (`None`: only ad-hoc sub-agents).
    pub agents: Option<Arc<dyn AgentDirectory>>,
    /// Whether this process can run a child's model (and the supervisor's).
    pub models: Arc<dyn ModelSource>,
    /// Where a child's models are priced (a spend cap with an unpriced model is refused).
    pub catalog: Arc<rein_model::Catalog>,
    /// Prices the supervisor's model calls.
    pub pricing: crate::pricing::Pricing,
    /// The parent's spec.
    pub spec: OperationSpec,
}

/// The id of the `n`th sub-agent that call `tool_call_id` of `parent` delegated: derived, so a
/// step re-run after a crash names the same child (and its commit cannot create a second).
pub fn sub_agent_id(parent: OperationId, tool_call_id: &str, n: usize) -> OperationId {
    let fnv = |seed: u64| {
        let mut h = seed;
        for b in tool_call_id.bytes().chain(n.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    };
    let salt =
        (u128::from(fnv(0xcbf2_9ce4_8422_2325)) << 64) | u128::from(fnv(0x6c62_272e_07bb_0142));
    OperationId(super::derived_uuid(parent, salt))
}

/// The stricter of two approval modes: no human anywhere wins, then asking more.
fn stricter(a: ApprovalMode, b: ApprovalMode) -> ApprovalMode {
    let rank = |m: ApprovalMode| match m {
        ApprovalMode::AutoRun => 0,
        ApprovalMode::AllowList => 1,
        ApprovalMode::Manual => 2,
        ApprovalMode::Headless => 3,
    };
    if rank(a) >= rank(b) { a } else { b }
}

/// A sub-agent's rules per tool: its parent's, and its agent's own for the tools its parent
/// has none for, except rules that could lift asking (a `never` anywhere in them).
fn narrower_rules(
    parent: &BTreeMap<String, InterventionConfig>,
    own: &BTreeMap<String, InterventionConfig>,
) -> BTreeMap<String, InterventionConfig> {
    let lifts = |c: &InterventionConfig| match c {
        InterventionConfig::Policy(p) => *p == InterventionPolicy::Never,
        InterventionConfig::Rules(rules) => {
            rules.iter().any(|r| r.policy == InterventionPolicy::Never)
        }
        InterventionConfig::Dynamic(d) => {
            d.policy == InterventionPolicy::Never || d.default == InterventionPolicy::Never
        }
    };
    let mut out = parent.clone();
    for (key, rule) in own {
        if !out.contains_key(key) && !lifts(rule) {
            out.insert(key.clone(), rule.clone());
        }
    }
    out
}

fn min_opt<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Every `identifier/api` of `manifests` that each list allows (`None` allows all); `None`
/// when no list restricts.
fn intersect(manifests: &ToolManifestMap, lists: &[Option<&Vec<String>>]) -> Option<Vec<String>> {
    if lists.iter().all(Option::is_none) {
        return None;
    }
    let mut keys: Vec<String> = manifests
        .values()
        .flat_map(|m| m.apis.iter().map(move |a| (m, a)))
        .filter(|(m, a)| {
            lists
                .iter()
                .all(|l| l.is_none_or(|l| key_listed(l, &m.identifier, &a.name)))
        })
        .map(|(m, a)| format!("{}/{}", m.identifier, a.name))
        .collect();
    keys.sort();
    Some(keys)
}

/// What the parent (and the tree above it) can still spend, under the parent's policy.
pub(super) fn remaining(spec: &OperationSpec, state: &AgentState) -> Budget {
    let spent = state.cost.total;
    let t = &state.usage.llm.tokens;
    let tokens = t.total.max(t.input + t.output);
    let own = &state.budget;
    let above = spec.delegation.as_ref().map(|d| &d.parent_budget);
    let cost_left = |max: Option<Usd>| max.map(|m| m.saturating_sub(spent));
    let tokens_left = |max: Option<u64>| max.map(|m| m.saturating_sub(tokens));
    Budget {
        max_cost: min_opt(
            cost_left(own.max_cost),
            cost_left(above.and_then(|b| b.max_cost)),
        ),
        max_tokens: min_opt(
            tokens_left(own.max_tokens),
            tokens_left(above.and_then(|b| b.max_tokens)),
        ),
        on_exceeded: own.on_exceeded,
        ..Budget::default()
    }
}

/// Who hands a group member its turn, as the member reads it.
const SUPERVISOR: &str = "supervisor";

/// The conversation a sub-agent inherits (a group member's turn): the parent's messages
/// without its system role, copied under new ids (the originals stay where they are), each
/// keeping its author.
fn inherited(state: &AgentState) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for m in rein_core::message::model_view(state.messages.iter().map(|m| (**m).clone()).collect())
    {
        if m.role == rein_core::Role::System {
            continue;
        }
        let mut copy = m.clone();
        copy.id = rein_core::MessageId::new();
        copy.parent_id = out.last().map(|p| p.id);
        out.push(copy);
    }
    out
}

/// Why a call's tasks were not delegated, as the model reads it.
struct NotDelegated(String);

impl Delegator {
    /// The child for `task`, the `n`th of call `call_id`.
    async fn child(
        &self,
        state: &AgentState,
        task: &SubAgentTask,
        call_id: &str,
        n: usize,
    ) -> Result<SubAgentSpawn, NotDelegated> {
        let parent = &self.spec;
        if !parent.may_delegate() {
            return Err(NotDelegated(format!(
                "Delegation is not available here: this agent is at depth {} and the limit is {}. Do the task yourself.",
                parent.depth(),
                parent.sub_agents.max_depth
            )));
        }
        let origin = SpecOrigin {
            owner: parent.owner.clone(),
            agent: None,
            working_directory: parent.working_directory.clone(),
        };
        // What the agent asks for, before it is narrowed to the parent's.
        let (asked, profile_tools, profile_allow) = match &task.target_agent_id {
            Some(name) => {
                if parent
                    .sub_agents
                    .agents
                    .as_ref()
                    .is_some_and(|l| !l.contains(name))
                {
                    return Err(NotDelegated(format!(
                        "Agent `{name}` is not one this agent may delegate to."
                    )));
                }
                let found = match &self.agents {
                    Some(d) => d.agent(parent.owner.as_deref(), name).await.map_err(|e| {
                        NotDelegated(format!("Agent `{name}` could not be read: {e}"))
                    })?,
                    None => None,
                };
                let Some(found) = found else {
                    return Err(NotDelegated(format!("There is no agent `{name}`.")));
                };
                // What the agent leaves unset, it inherits.
                let base = OperationSpec {
                    model: parent.model.clone(),
                    approval: parent.approval,
                    context: parent.context.clone(),
                    ..Default::default()
                };
                let origin = SpecOrigin {
                    agent: Some(found.agent.clone()),
                    ..origin
                };
                let spec = found.profile.spec(&base, origin).map_err(|e| {
                    NotDelegated(format!("Agent `{name}` has invalid settings: {e}"))
                })?;
                (
                    spec,
                    found.profile.tools.clone(),
                    found.profile.allow.clone(),
                )
            }
            None => {
                let spec = OperationSpec {
                    system_role: task.system_role.clone().or_else(|| {
                        Some("You are a sub-agent. Do the task you are given and answer with the result.".into())
                    }),
                    agent: None,
                    ..parent.clone()
                };
                (spec, None, None)
            }
        };
        let model = asked.model.clone().or_else(|| parent.model.clone());
        if let Some(m) = &model
            && let Err(e) = self.models.provider(m)
        {
            return Err(NotDelegated(format!(
                "The sub-agent's model `{}` cannot run here: {e}",
                m.key()
            )));
        }
        let depth = parent.depth() + 1;
        let delegation = Delegation {
            parent: state.operation_id,
            root: parent
                .delegation
                .as_ref()
                .map_or(state.operation_id, |d| d.root),
            depth,
            tool_call_id: call_id.to_owned(),
            parent_budget: remaining(parent, state),
        };
        let mut manifests = Arc::clone(&state.tool_manifests);
        let allowed_tools = intersect(
            &manifests,
            &[
                parent.allowed_tools.as_ref(),
                profile_tools.as_ref(),
                task.tools.as_ref(),
            ],
        );
        // Its own totals are the agent's; what the parent has left binds the whole tree
        // (`delegation.parent_budget`, enforced as the sub-agents spend). Per-call limits
        // apply to every call in the tree.
        let budget = Budget {
            max_tokens: asked.budget.max_tokens,
            max_cost: asked.budget.max_cost,
            max_model_call_cost: min_opt(
                asked.budget.max_model_call_cost,
                parent.budget.max_model_call_cost,
            ),
            max_tool_call_cost: min_opt(
                asked.budget.max_tool_call_cost,
                parent.budget.max_tool_call_cost,
            ),
            on_exceeded: asked.budget.on_exceeded,
        };
        // What runs unasked: the parent's list, narrowed by the agent's own when it has one.
        let allow = match &profile_allow {
            Some(own) => {
                intersect(&manifests, &[Some(&parent.allow), Some(own)]).unwrap_or_default()
            }
            None => parent.allow.clone(),
        };
        let spec = OperationSpec {
            model,
            system_role: asked.system_role.clone(),
            allowed_tools,
            approval: stricter(parent.approval, asked.approval),
            // It runs within its parent's turn of the conversation.
            when_busy: parent.when_busy,
            allow,
            tool_rules: narrower_rules(&parent.tool_rules, &asked.tool_rules),
            // Nobody watches a sub-agent of an unattended run either.
            unattended: parent.unattended,
            question_briefs: parent.question_briefs,
            max_steps: min_opt(asked.max_steps, parent.max_steps),
            budget,
            // Its agent's prices over its parent's.
            prices: parent
                .prices
                .iter()
                .chain(&asked.prices)
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            approval_timeout_secs: min_opt(
                asked.approval_timeout_secs,
                parent.approval_timeout_secs,
            ),
            tools_disclosure: parent.tools_disclosure,
            // A sub-agent starts without its parent's skills; it can activate its own.
            skills: Vec::new(),
            compression_model: parent.compression_model.clone(),
            context: parent.context.clone(),
            mcp_servers: parent.mcp_servers.clone(),
            working_directory: parent.working_directory.clone(),
            // A sub-agent's commands are confined as its parent's.
            sandbox: parent.sandbox,
            // And it runs where its parent runs, whatever its own profile says (a remote
            // agent on its own server).
            surface: crate::surface::of_sub_agent(&parent.surface, &asked.surface),
            time_limit_secs: min_opt(asked.time_limit_secs, parent.time_limit_secs),
            // It searches what its parent may (its tools are its parent's too).
            knowledge: parent.knowledge.clone(),
            // It reaches at most what its parent may, narrowed by its own agent's list.
            egress: narrower_egress(parent.egress.as_deref(), asked.egress.as_deref()),
            // With its own agent's budget for their chunks, else its parent's.
            knowledge_tokens: asked.knowledge_tokens.or(parent.knowledge_tokens),
            // It reads the memories its own agent reads (its own pool, or the shared one).
            memory_scope: asked.memory_scope,
            owner: parent.owner.clone(),
            agent: asked.agent.clone(),
            sub_agents: parent.sub_agents.clone(),
            delegation: Some(delegation),
            // A member speaks as itself; it does not supervise.
            group: None,
            // Its own conversation starts here, even in a fork's tree.
            forked_from: None,
        };
        // What the tree may spend binds the child too: its model must have a price.
        if let Some(unpriced) = crate::pricing::unpriced(&spec, &self.catalog) {
            return Err(NotDelegated(format!(
                "The sub-agent cannot run: {unpriced}"
            )));
        }
        if !spec.may_delegate() {
            Arc::make_mut(&mut manifests).remove(rein_tools::agents::IDENTIFIER);
        }
        let id = sub_agent_id(state.operation_id, call_id, n);
        let topic = state.metadata.topic_id.clone().unwrap_or_default();
        let (history, ask) = if task.inherit_messages {
            let speaker = spec.agent.as_ref().map_or("sub-agent", |a| a.name.as_str());
            let text = if task.instruction.trim().is_empty() {
                format!(
                    "It is your turn, {speaker}: reply to the conversation above, in your role."
                )
            } else {
                shown(&task.instruction)
            };
            let mut ask = Message::user(text);
            ask.author = Some(SUPERVISOR.into());
            (inherited(state), ask)
        } else {
            (Vec::new(), Message::user(shown(&task.instruction)))
        };
        let first = super::start::first_state(id, &spec, &topic, history, Some(ask), manifests);
        Ok(SubAgentSpawn {
            run: SubAgentRun {
                operation_id: id,
                tool_call_id: call_id.to_owned(),
                agent: spec.agent.as_ref().map(|a| a.name.clone()),
                title: task.description.clone(),
            },
            task: task.clone(),
            spec,
            state: first,
            parent_message_id: None,
        })
    }

    async fn delegate(
        &self,
        mut tasks: Vec<SubAgentTask>,
        parent_message: Option<rein_core::MessageId>,
        state: &mut AgentState,
        cx: &ExecContext<'_>,
    ) -> Result<ExecOutput, ExecError> {
        // The tasks are taken now, whatever becomes of them.
        state.delegated.clear();
        if let Some(group) = &self.spec.group {
            // A group turn without a speaker: the supervisor's model picks one, or ends it.
            for task in tasks.iter_mut().filter(|t| t.target_agent_id.is_none()) {
                match self.choose_speaker(group, state).await? {
                    Some((speaker, instruction)) => {
                        task.description = format!("{} · {speaker}", task.description);
                        task.target_agent_id = Some(speaker);
                        task.instruction = instruction;
                    }
                    None => {
                        return Ok(ExecOutput::new(Some(RuntimeContext::new(
                            Phase::SubAgentsBatchResult(SubAgentsResultPayload {
                                parent_message_id: parent_message,
                                results: Vec::new(),
                            }),
                        ))));
                    }
                }
            }
        }
        let mut calls: Vec<String> = Vec::new();
        for (i, t) in tasks.iter().enumerate() {
            let id = t
                .tool_call_id
                .clone()
                .unwrap_or_else(|| format!("task-{i}"));
            if !calls.contains(&id) {
                calls.push(id);
            }
        }
        let mut spawns = Vec::new();
        for call_id in calls {
            let group: Vec<&SubAgentTask> = tasks
                .iter()
                .enumerate()
                .filter(|(i, t)| {
                    t.tool_call_id
                        .clone()
                        .unwrap_or_else(|| format!("task-{i}"))
                        == call_id
                })
                .map(|(_, t)| t)
                .collect();
            let mut made = Vec::with_capacity(group.len());
            let mut refused = None;
            for (n, task) in group.iter().enumerate() {
                match self.child(state, task, &call_id, n).await {
                    Ok(spawn) => made.push(spawn),
                    Err(NotDelegated(why)) => {
                        refused = Some(format!("Task {} (\"{}\"): {why}", n + 1, task.description));
                        break;
                    }
                }
            }
            let tool_message = state.tool_message_mut(&call_id).map(|m| m.id);
            let (status, text) = match &refused {
                Some(why) => (ToolStatus::Failed, format!("Nothing was delegated. {why}")),
                None => {
                    let list: Vec<String> = made
                        .iter()
                        .map(|s| format!("\"{}\" as operation {}", s.run.title, s.run.operation_id))
                        .collect();
                    (
                        ToolStatus::Pending,
                        format!("Delegated {}; waiting for the answers.", list.join(", ")),
                    )
                }
            };
            if let Some(id) = tool_message
                && let Some(m) = state.message_mut(id)
            {
                m.set_text(&text);
                m.tool_status = Some(status);
            }
            if let Some(why) = &refused
                && tool_message.is_none()
            {
                // A turn no tool call asked for (a group's): nothing can carry the refusal
                // but the operation's own failure.
                return Err(ExecError::new(Fault::SubAgentRefused, why.clone()));
            }
            if refused.is_some() {
                if let Some(id) = tool_message {
                    cx.emit(EventKind::ToolResult {
                        tool_call_id: call_id.clone().into(),
                        tool_message_id: id,
                        status,
                        content: text,
                        duration_ms: 0,
                    });
                }
                continue;
            }
            for mut spawn in made {
                spawn.parent_message_id = tool_message;
                cx.emit(EventKind::SubAgentStarted {
                    sub_agent: spawn.run.operation_id,
                    agent: spawn.run.agent.clone(),
                    title: spawn.run.title.clone(),
                    tool_call_id: call_id.clone(),
                });
                state.sub_agents.push(spawn.run.clone());
                spawns.push(spawn);
            }
        }
        let mut out = if spawns.is_empty() {
            // Nothing to wait for: the model reads the refusals.
            ExecOutput::new(Some(RuntimeContext::new(Phase::SubAgentsBatchResult(
                SubAgentsResultPayload {
                    parent_message_id: parent_message,
                    results: Vec::new(),
                },
            ))))
        } else {
            state.status = Status::WaitingForSubAgents;
            ExecOutput::new(None)
        };
        out.spawns = spawns;
        Ok(out)
    }

    /// Ask the supervisor's model who speaks next in `group` (and what they should address):
    /// `None` when it ends the conversation (its reason is recorded in the state). The call is
    /// a forced tool call (structured output on every protocol), charged to the operation.
    async fn choose_speaker(
        &self,
        group: &rein_core::spec::GroupSpec,
        state: &mut AgentState,
    ) -> Result<Option<(String, String)>, ExecError> {
        let fail = |m: String| ExecError::new(Fault::SupervisorFailed, m);
        let model = self
            .spec
            .model
            .clone()
            .ok_or_else(|| fail("the supervisor has no model".into()))?;
        let provider = self
            .models
            .provider(&model)
            .map_err(|e| fail(e.to_string()))?;
        let transcript: Vec<String> = state
            .messages
            .iter()
            .filter(|m| m.role != rein_core::Role::System)
            .map(|m| {
                let who = m.author.clone().unwrap_or_else(|| match m.role {
                    rein_core::Role::User => "user".into(),
                    _ => "assistant".into(),
                });
                format!("[{who}] {}", m.text_content())
            })
            .collect();
        let mut choices: Vec<String> = group.members.clone();
        choices.push(DONE.into());
        let system = format!(
            "{}\n\nYou supervise a group conversation among these agents: {}. Each turn, pick who speaks next and what they should address, or `{DONE}` once the user's request is answered.",
            self.spec.system_role.as_deref().unwrap_or_default(),
            group.members.join(", ")
        );
        let messages = vec![
            std::sync::Arc::new(Message::system(system.trim_start())),
            std::sync::Arc::new(Message::user(format!(
                "The conversation so far:\n\n{}\n\nWho speaks next?",
                transcript.join("\n\n")
            ))),
        ];
        let mut request = rein_model::ChatRequest::new(model.model.to_string(), messages);
        request.tools = vec![rein_model::request::ToolSpec {
            name: "next_speaker".into(),
            description: "The next speaker, or done.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "speaker": {"type": "string", "enum": choices},
                    "instruction": {"type": "string", "description": "What the speaker should address"},
                    "reason": {"type": "string"}
                },
                "required": ["speaker"]
            }),
        }];
        request.tool_choice = rein_model::request::ToolChoice::Tool("next_speaker".into());
        let started = std::time::Instant::now();
        let r = provider.complete(request).await;
        let key = model.key();
        if let Some(usage) = &r.usage {
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            state.usage.record_llm(&key, usage, ms);
            let cost = self
                .pricing
                .cost(&model.provider, &model.model, usage, r.reported_cost)
                .unwrap_or(Usd::ZERO);
            state.cost.record_llm(&key, cost);
        }
        if let Some(e) = r.error {
            return Err(fail(format!("the supervisor's model failed: {e}")));
        }
        let args = r
            .tool_calls
            .into_iter()
            .find(|c| c.name == "next_speaker")
            .and_then(|c| c.arguments)
            .ok_or_else(|| fail("the supervisor's model did not pick a speaker".into()))?;
        let speaker = args["speaker"].as_str().unwrap_or_default().to_owned();
        let said = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
        if speaker == DONE {
            let why = said("reason");
            state.metadata.extra.insert(
                rein_core::agent::GROUP_DONE.into(),
                serde_json::json!(if why.is_empty() { "done".into() } else { why }),
            );
            return Ok(None);
        }
        if !group.members.contains(&speaker) {
            return Err(fail(format!(
                "the supervisor's model picked `{speaker}`, who is not a member ({})",
                group.members.join(", ")
            )));
        }
        Ok(Some((speaker, said("instruction"))))
    }
}

/// The supervisor's word for "the conversation is over".
const DONE: &str = "done";

impl Executor for Delegator {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let (tasks, parent) = match ins {
                Instruction::ExecSubAgents { payload } => {
                    (payload.tasks, payload.parent_message_id)
                }
                Instruction::ExecSubAgent { payload } => {
                    (vec![*payload.task], payload.parent_message_id)
                }
                other => {
                    return Err(ExecError::new(
                        Fault::ExecutorMismatch,
                        format!(
                            "the sub-agent executor received a {} instruction",
                            other.kind().as_str()
                        ),
                    ));
                }
            };
            self.delegate(tasks, parent, state, cx).await
        }
        .boxed()
    }
}

/// A task the model wrote, as a sub-agent's message carries it: control characters shown as
/// their pictures (a NUL in the tool call's arguments would otherwise be refused by
/// PostgreSQL when the child's first message is stored).
fn shown(instruction: &str) -> String {
    rein_core::text::visible_controls(instruction).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_ids_are_stable_per_call_and_position_and_differ_otherwise() {
        let p = OperationId::new();
        assert_eq!(sub_agent_id(p, "c1", 0), sub_agent_id(p, "c1", 0));
        assert_ne!(sub_agent_id(p, "c1", 0), sub_agent_id(p, "c1", 1));
        assert_ne!(sub_agent_id(p, "c1", 0), sub_agent_id(p, "c2", 0));
        assert_ne!(
            sub_agent_id(p, "c1", 0),
            sub_agent_id(OperationId::new(), "c1", 0)
        );
    }

    #[test]
    fn approval_only_gets_stricter() {
        use ApprovalMode::*;
        assert_eq!(stricter(AutoRun, Manual), Manual);
        assert_eq!(stricter(Manual, AutoRun), Manual);
        assert_eq!(stricter(Headless, AutoRun), Headless);
        assert_eq!(stricter(AllowList, Headless), Headless);
        assert_eq!(stricter(AutoRun, AllowList), AllowList);
    }
}

/// A sub-agent's egress allow-list: its parent's, narrowed by its own agent's (an entry of its
/// own counts only where the parent's list covers all it admits).
fn narrower_egress(parent: Option<&[String]>, own: Option<&[String]>) -> Option<Vec<String>> {
    use rein_tools::web::egress_allows;
    match (parent, own) {
        (None, own) => own.map(<[String]>::to_vec),
        (Some(parent), None) => Some(parent.to_vec()),
        (Some(parent), Some(own)) => Some(
            own.iter()
                .filter(|e| match e.strip_prefix("*.") {
                    // A wildcard is covered only by a wildcard of the same or a wider domain.
                    Some(domain) => parent.iter().any(|p| {
                        p.strip_prefix("*.")
                            .is_some_and(|pd| egress_allows(&[format!("*.{pd}")], domain))
                    }),
                    None => egress_allows(parent, e),
                })
                .cloned()
                .collect(),
        ),
    }
}

#[cfg(test)]
mod egress_tests {
    #[test]
    fn a_sub_agent_reaches_at_most_what_its_parent_may() {
        let list = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let parent = list(&["docs.rs", "*.example.com"]);
        assert_eq!(super::narrower_egress(None, None), None);
        assert_eq!(
            super::narrower_egress(Some(&parent), None),
            Some(parent.clone())
        );
        assert_eq!(
            super::narrower_egress(
                Some(&parent),
                Some(&list(&[
                    "docs.rs",
                    "a.example.com",
                    "*.b.example.com",
                    "*.rs",
                    "evil.net"
                ]))
            ),
            Some(list(&["docs.rs", "a.example.com", "*.b.example.com"]))
        );
    }
}
