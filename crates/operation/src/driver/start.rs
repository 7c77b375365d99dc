//! Starting an operation: its spec completed (model, the tools this process adds), its first
//! state (system role, the topic's history, the prompt, the tools it is offered), written in
//! one transaction before its id is returned. A sub-agent's first state is made the same way
//! ([`Driver::first_state`]), by the delegation that creates it.

use super::{Driver, StartOptions};
use crate::error::DriverError;
use crate::error::Refusal;
use rein_core::engine::initial_context;
use rein_core::spec::OperationSpec;
use rein_core::tool::ToolManifestMap;
use rein_core::{AgentState, Message, OperationId};
use rein_store::{Created, NewOperation, Trigger};
use std::sync::Arc;

/// A created operation, and whether it waits for its turn in its conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Begun {
    /// The operation.
    pub id: OperationId,
    /// The operation it is queued behind (running, waiting, or queued before it); `None`
    /// when it may run now. A queued one is started by whoever ends the one before it
    /// ([`Driver::promote`]).
    pub queued_behind: Option<OperationId>,
}

impl Driver {
    /// Create an operation for `prompt`; returns its id once it is committed with its spec.
    pub async fn start(
        &self,
        prompt: &str,
        opts: &StartOptions,
    ) -> Result<OperationId, DriverError> {
        Ok(self.begin(prompt, opts).await?.id)
    }

    /// [`Driver::start`], saying whether the operation was queued behind another of its
    /// conversation.
    pub async fn begin(&self, prompt: &str, opts: &StartOptions) -> Result<Begun, DriverError> {
        if let Some(topic) = &opts.topic_id {
            crate::error::check_topic_id(topic)?;
        }
        let id = opts.id.unwrap_or_default();
        let mut spec = opts.spec.clone();
        spec.model.get_or_insert_with(|| self.default_model.clone());
        // Under an egress allow-list the shell and the interpreters get no network (a host list
        // cannot be held against a program's own sockets); the stored spec says so, since a
        // process continuing the operation reads what it may do from there.
        if spec.egress.is_some() {
            spec.sandbox.network = false;
        }
        // The tools this process adds are recorded, so a process continuing the operation
        // without them refuses instead of running it with fewer.
        spec.mcp_servers = self.host_tools();
        // Refuse now, before anything is written, what no step could run, and a spend cap
        // no call could count against.
        self.preflight(id, &spec).await?;
        if spec.surface.external_kind().is_none()
            && let Some(unpriced) = crate::pricing::unpriced(&spec, &self.catalog)
        {
            return Err(unpriced.into());
        }
        let topic_id = opts
            .topic_id
            .clone()
            .unwrap_or_else(|| format!("topic_{id}"));
        let deferred = super::queue::Deferred {
            // A person's words are stored as every store takes them (a NUL from a pipe into
            // `rein chat` shown as ␀, not refused by PostgreSQL).
            prompt: rein_core::text::visible_controls(prompt).into_owned(),
            turn: opts.turn,
            attachments: opts.attachments.clone(),
            history: opts.history.clone(),
        };
        let (state, next) = self
            .opening(id, &spec, opts.topic_id.as_deref(), &topic_id, &deferred)
            .await?;
        let op = NewOperation {
            state,
            topic_id,
            agent: spec.agent.as_ref().map(|a| a.name.clone()),
            trigger: opts.trigger.unwrap_or(Trigger::Cli),
            parent_operation: None,
            next_context: Some(next),
            owner: spec.owner.clone(),
            gate: Some(rein_store::TopicGate {
                when_busy: spec.when_busy,
                deferred: serde_json::to_value(&deferred).map_err(Refusal::PromptNotKept)?,
            }),
            prompt: Some(deferred.prompt.clone()),
            spec,
            admission: opts.admission.clone(),
            thread: None,
            response: opts.response.clone().map(|mut r| {
                r.operation_id = id;
                r
            }),
        };
        match self.store.create_operation(&op).await? {
            Created::Ready => Ok(Begun {
                id,
                queued_behind: None,
            }),
            Created::Queued { behind, status } => {
                tracing::info!(operation = %id, %behind, ?status, "queued behind another operation of its conversation");
                if op.spec.when_busy == rein_core::spec::WhenBusy::Interrupt {
                    self.move_on(behind).await?;
                    // A parked one ended at once: this one's turn may have come.
                    if self.promote(&op.topic_id).await? == Some(id) {
                        return Ok(Begun {
                            id,
                            queued_behind: None,
                        });
                    }
                }
                Ok(Begun {
                    id,
                    queued_behind: Some(behind),
                })
            }
        }
    }

    /// The first state and context of operation `id` with `spec` in `topic_id` (`asked`: the
    /// topic the caller named, `None` for a new one), its prompt placed as `deferred.turn` says
    /// in the conversation as it is now.
    pub(super) async fn opening(
        &self,
        id: OperationId,
        spec: &OperationSpec,
        asked: Option<&str>,
        topic_id: &str,
        deferred: &super::queue::Deferred,
    ) -> Result<(AgentState, rein_core::RuntimeContext), DriverError> {
        let start =
            super::turn::resolve(&*self.store, asked, deferred.turn, &deferred.prompt).await?;
        let mut history = start.history;
        history.extend(deferred.history.iter().cloned());
        let user = start.prompt.then(|| {
            let mut user = Message::user(&deferred.prompt);
            user.content.extend(deferred.attachments.iter().cloned());
            user
        });
        let manifests = self.offered_tools(spec).await?;
        let skills = self.spec_skills(spec)?;
        let mut state = first_state(id, spec, topic_id, history, user, manifests);
        state.activated_skills = skills;
        if spec.surface.external_kind().is_some() && deferred.turn != super::Turn::Continue {
            state.metadata.extra.insert(
                crate::external::invocation::FRESH_SESSION.into(),
                serde_json::json!(true),
            );
        }
        let next = initial_context(&state);
        Ok((state, next))
    }

    /// The knowledge bases `spec` names that its owner does not have.
    async fn missing_knowledge(&self, spec: &OperationSpec) -> Result<Vec<String>, DriverError> {
        let mut missing = Vec::new();
        for name in &spec.knowledge {
            if self
                .store
                .knowledge_base(spec.owner.as_deref(), name)
                .await?
                .is_none()
            {
                missing.push(name.clone());
            }
        }
        Ok(missing)
    }

    /// The skills `spec` names, as admitted from the first call on; refused when this process
    /// lacks any of them.
    fn spec_skills(
        &self,
        spec: &OperationSpec,
    ) -> Result<Vec<rein_core::tool::ActivatedSkill>, DriverError> {
        let mut out: Vec<rein_core::tool::ActivatedSkill> = Vec::new();
        let mut missing = Vec::new();
        for name in &spec.skills {
            match self.skills.get(name) {
                Some(s) if !out.iter().any(|a| &a.name == name) => out.push(s.activated(0, "spec")),
                Some(_) => {}
                None => missing.push(name.clone()),
            }
        }
        if missing.is_empty() {
            Ok(out)
        } else {
            Err(DriverError::UnknownSkills(missing))
        }
    }

    /// The tools an operation with `spec` is offered: this process's, plus the delegation tool
    /// listing the agents it may delegate to, when it may delegate at all and its owner has
    /// agents it may use; without the MCP tools whose definitions changed since they were
    /// pinned ([`crate::mcp_pins`]).
    pub(super) async fn offered_tools(
        &self,
        spec: &OperationSpec,
    ) -> Result<Arc<ToolManifestMap>, DriverError> {
        let mut map = self.tools.manifests();
        let own = self.own_tools(spec, &|_| true).await?;
        if let Some((name, why)) = own.unreachable().iter().next() {
            return Err(DriverError::OwnMcpUnavailable {
                name: name.clone(),
                why: why.clone(),
            });
        }
        let mut own_servers = std::collections::BTreeSet::new();
        for m in own.manifests() {
            own_servers.insert(m.identifier.clone());
            Arc::make_mut(&mut map).insert(m.identifier.clone(), Arc::new(m));
        }
        // A definition changed since it was pinned is not offered until a person approves it.
        crate::mcp_pins::hold_changed(&*self.store, &mut map, &own_servers, spec.owner.as_deref())
            .await?;
        if spec.knowledge.is_empty() {
            Arc::make_mut(&mut map).remove(crate::knowledge::IDENTIFIER);
        } else {
            let missing = self.missing_knowledge(spec).await?;
            if !missing.is_empty() {
                return Err(DriverError::UnknownKnowledge(missing));
            }
        }
        if let Some(name) = spec.surface.device() {
            let offered = match &self.devices {
                Some(d) => d.tools(spec.owner.as_deref(), name).await?,
                None => None,
            };
            let offered = offered.ok_or_else(|| DriverError::UnknownDevice(name.to_owned()))?;
            if matches!(spec.surface, rein_core::spec::Surface::Device(_)) {
                map = Arc::new(crate::devices::device_manifests(&map, offered));
            }
        }
        let Some(directory) = &self.agents else {
            return Ok(map);
        };
        if !spec.may_delegate() {
            return Ok(map);
        }
        let delegates: Vec<rein_tools::agents::Delegate> = directory
            .agents(spec.owner.as_deref())
            .await?
            .into_iter()
            .filter(|a| {
                spec.sub_agents
                    .agents
                    .as_ref()
                    .is_none_or(|l| l.contains(&a.agent.name))
            })
            .map(|a| rein_tools::agents::Delegate {
                description: a.profile.description(),
                name: a.agent.name,
            })
            .collect();
        if delegates.is_empty() {
            // Nothing to delegate to by name: the tool would only weigh on every call.
            return Ok(map);
        }
        let manifest = rein_tools::agents::manifest(&delegates);
        Arc::make_mut(&mut map).insert(manifest.identifier.clone(), Arc::new(manifest));
        Ok(map)
    }
}

/// The first state of operation `id`: its system role, `history` (the branch of its topic it
/// continues), the `user` message (none when it answers the last of `history` again), and what
/// the spec sets (model, limits, approval, where it runs and for whom). The spec names its
/// model (a started operation's always does). The prompt hangs from the last message of the
/// conversation, never from a system message (each operation has its own).
pub(super) fn first_state(
    id: OperationId,
    spec: &OperationSpec,
    topic_id: &str,
    history: Vec<Message>,
    user: Option<Message>,
    manifests: Arc<ToolManifestMap>,
) -> AgentState {
    let mut state = AgentState::new(id);
    if let Some(system) = &spec.system_role {
        state.push_message(Message::system(system));
    }
    for m in history {
        state.push_message(m);
    }
    if let Some(mut user) = user {
        user.parent_id = state
            .messages
            .iter()
            .rev()
            .find(|m| m.role != rein_core::Role::System)
            .map(|m| m.id);
        state.push_message(user);
    }
    state.tool_manifests = manifests;
    state.model = spec.model.clone();
    state.max_steps = spec.max_steps;
    state.budget = spec.budget.clone();
    state.intervention.approval_mode = spec.approval;
    state.intervention.allow_list = spec.allow.clone();
    state.intervention.tool_rules = spec.tool_rules.clone();
    state.intervention.unattended = spec.unattended;
    state.intervention.question_briefs = spec.unattended && spec.question_briefs;
    state.metadata.working_directory = spec.working_directory.clone();
    // Under an egress allow-list the shell and the interpreters get no network (`begin` also
    // writes it into the spec; a spec built elsewhere is held to it here too).
    state.metadata.sandbox = Some(rein_core::spec::Sandbox {
        network: spec.sandbox.network && spec.egress.is_none(),
        ..spec.sandbox
    });
    state.metadata.topic_id = Some(topic_id.to_owned());
    state.metadata.knowledge = spec.knowledge.clone();
    state.metadata.egress = spec.egress.clone();
    state.metadata.knowledge_tokens = spec.knowledge_tokens;
    state.metadata.memory_scope = spec.memory_scope;
    // The memory and notes tools scope documents by it.
    state.metadata.owner = spec.owner.clone();
    state.metadata.agent_id = spec.agent.as_ref().map(|a| a.name.clone());
    state
}
