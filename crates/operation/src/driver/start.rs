//! Starting an operation: its spec completed (model, the tools this process adds), its first
//! state (system role, the topic's history, the prompt), written in one transaction before
//! its id is returned.

use super::{Driver, StartOptions};
use crate::error::DriverError;
use rein_core::engine::initial_context;
use rein_core::{AgentState, Message, OperationId};
use rein_store::{NewOperation, Trigger};

impl Driver {
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
        self.preflight(id, &spec)?;
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
        state.tool_manifests = self.tools.manifests();
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
}
