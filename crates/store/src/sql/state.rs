//! The small state exchanged by the write and read paths: an operation's state without its
//! messages and tool manifests, a step row's summary, and the spec of an operation from before
//! specs were stored.

use super::*;
use rein_core::AgentState;

/// The state as stored in `operations.state`: everything but its messages (kept in the topic,
/// their order in `operation_messages`) and its tool manifests (`operations.tool_manifests`,
/// written when they change). What is left is small and changes with every step.
pub(super) fn compact_state(state: &AgentState) -> Result<String, StoreError> {
    let compact = AgentState {
        messages: Vec::new(),
        tool_manifests: Default::default(),
        ..state.clone()
    };
    to_json(&compact, "state")
}

/// What a step row keeps: counters and outcome after the step. The latest full state lives in
/// the operation row and messages and events in their own tables, so a per-step snapshot would
/// only repeat them.
pub(super) fn step_summary(state: &AgentState) -> String {
    serde_json::json!({
        "step_count": state.step_count,
        "status": state.status,
        "tokens": state.usage.llm.tokens.total,
        "cost": state.cost.total,
        "message_count": state.messages.len(),
        "next_event_seq": state.next_event_seq,
        "finish": state.finish,
        "error": state.error,
    })
    .to_string()
}

/// What a step row keeps to rebuild the state after it ([`crate::checkpoint`]): the compact
/// state and next context already serialized for the operation row, and how to undo the step.
pub(super) fn step_checkpoint(
    compact: &str,
    next_context: Option<&str>,
    changes: &crate::StateChanges,
) -> Result<String, StoreError> {
    let undo = crate::checkpoint::StepUndo {
        kept: changes.kept,
        removed: changes.removed.clone(),
        replaced: changes.replaced.clone(),
        manifests_before: changes.manifests_before.clone(),
    };
    // Both parts are JSON already: joined, not parsed and written again.
    Ok(format!(
        "{{\"state\":{compact},\"next_context\":{},\"undo\":{}}}",
        next_context.unwrap_or("null"),
        to_json(&undo, "step undo")?
    ))
}

/// The spec of an operation started before specs were stored, rebuilt from its state. Its
/// allow-list was never kept, so none is assumed.
pub(super) fn legacy_spec(state: &AgentState) -> rein_core::spec::OperationSpec {
    rein_core::spec::OperationSpec {
        model: state.model.clone(),
        system_role: state
            .messages
            .iter()
            .find(|m| m.role == rein_core::Role::System)
            .map(|m| m.text_content()),
        approval: state.intervention.approval_mode,
        max_steps: state.max_steps,
        budget: state.budget.clone(),
        approval_timeout_secs: state
            .metadata
            .extra
            .get("approval_timeout_secs")
            .and_then(serde_json::Value::as_f64)
            .map(|s| s.max(0.0).round() as u64),
        working_directory: state.metadata.working_directory.clone(),
        owner: state.metadata.owner.clone(),
        agent: state
            .metadata
            .agent_id
            .clone()
            .map(|name| rein_core::spec::AgentRef {
                name,
                version: None,
            }),
        ..Default::default()
    }
}
