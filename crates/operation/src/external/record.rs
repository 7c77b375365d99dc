//! An external agent's observed step written into an operation's state: the assistant message
//! (its text, reasoning, the calls it made, the agent's session), a tool message per call
//! (its reported result, or aborted when none came), usage and cost, and the events the engine
//! would emit for the same work, numbered after the state's last.

use super::transcript::ObservedStep;
use crate::driver::derived_message_id;
use rein_core::event::{EventKind, StreamChunk};
use rein_core::instruction::InstructionKind;
use rein_core::message::{ExternalSession, Role, ToolStatus};
use rein_core::state::Status;
use rein_core::{AgentEvent, AgentState, Message, OperationId, ToolCall, Usd};

/// The key usage is recorded under: `SOURCE/MODEL` (`claude-code/…`, `a2a/NAME`).
pub(crate) fn model_key(source: &str, model: Option<&str>) -> String {
    format!("{source}/{}", model.unwrap_or("unknown"))
}

/// Stamp `kinds` as the state's next events, in the step it is in.
pub(crate) fn emit(state: &mut AgentState, kinds: Vec<EventKind>) -> Vec<AgentEvent> {
    kinds
        .into_iter()
        .map(|kind| {
            let e = AgentEvent {
                operation_id: state.operation_id,
                step: state.step_count.max(1),
                seq: state.next_event_seq,
                kind,
            };
            state.next_event_seq += 1;
            e
        })
        .collect()
}

/// What an observed step cost: its own figure or the estimate at the operation's prices
/// (`None` when neither is known), and what the prompt cache saved on it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Priced {
    pub cost: Option<Usd>,
    pub cache_saved: Usd,
}

/// Write one observed step of `source` (an external agent's kind, or `a2a` for a remote
/// agent) into `state` (commit number `commit`): the assistant message with the calls it
/// made, a tool message per call, usage and cost; returns its events.
pub(crate) fn record(
    state: &mut AgentState,
    commit: u64,
    source: &str,
    model: Option<&str>,
    session: Option<ExternalSession>,
    step: ObservedStep,
    priced: Priced,
) -> Vec<AgentEvent> {
    let Priced { cost, cache_saved } = priced;
    state.step_count += 1;
    let key = model_key(source, model);
    let op: OperationId = state.operation_id;
    let calls: Vec<ToolCall> = step
        .calls
        .iter()
        .map(|c| {
            ToolCall::new(
                c.id.as_str(),
                source,
                c.name.as_str(),
                c.arguments.to_string(),
            )
        })
        .collect();
    let mut assistant = Message::assistant(step.text.clone());
    assistant.id = derived_message_id(op, commit);
    assistant.parent_id = state
        .messages
        .iter()
        .rev()
        .find(|m| m.role != Role::System)
        .map(|m| m.id);
    assistant.tool_calls = calls.clone();
    assistant.model = Some(key.clone());
    assistant.usage = Some(step.tokens);
    assistant.external_session = session;
    if !step.reasoning.is_empty() {
        assistant.reasoning = Some(rein_core::message::Reasoning {
            text: step.reasoning.clone(),
            ..Default::default()
        });
    }
    let id = assistant.id;
    let mut kinds = vec![
        EventKind::StepStart {
            phase: "external".into(),
        },
        EventKind::LlmStart {
            assistant_message_id: id,
            model: Some(key.clone()),
        },
    ];
    if !step.reasoning.is_empty() {
        kinds.push(EventKind::LlmStream {
            assistant_message_id: id,
            chunk: StreamChunk::Reasoning {
                text: step.reasoning,
            },
        });
    }
    if !step.text.is_empty() {
        kinds.push(EventKind::LlmStream {
            assistant_message_id: id,
            chunk: StreamChunk::Text {
                text: step.text.clone(),
            },
        });
    }
    kinds.push(EventKind::LlmResult {
        assistant_message_id: id,
        content: step.text,
        tool_calls: calls.clone(),
        usage: step.tokens,
        cost: cost.unwrap_or_default(),
        cache_saved,
        stop_reason: None,
    });
    state.usage.record_llm(&key, &step.tokens, 0);
    if let Some(c) = cost {
        state.cost.record_llm(&key, c);
    }
    state.push_message(assistant);
    if !calls.is_empty() {
        kinds.push(EventKind::ToolPending {
            tool_calls: calls.clone(),
        });
    }
    for (call, observed) in calls.iter().zip(step.calls) {
        let (status, content) = match observed.outcome {
            Some((content, false)) => (ToolStatus::Succeeded, content),
            Some((content, true)) => (ToolStatus::Failed, content),
            None => (
                ToolStatus::Aborted,
                "the external agent reported no result for this call".to_owned(),
            ),
        };
        let message = Message::tool_result(call, Some(id), status, content.clone());
        state.usage.record_tool(
            &format!("{source}/{}", call.api),
            status == ToolStatus::Succeeded,
            0,
        );
        kinds.push(EventKind::ToolResult {
            tool_call_id: call.id.clone(),
            tool_message_id: message.id,
            status,
            content,
            duration_ms: 0,
        });
        state.push_message(message);
    }
    kinds.push(EventKind::StepComplete {
        status: Status::Running,
        instructions: vec![InstructionKind::ExternalTurn],
    });
    emit(state, kinds)
}
