//! The end of a delegation: once every sub-agent an operation waits for has ended, each
//! delegating call is answered with its sub-agents' answers (or their failures, visibly), what
//! they spent is added to the operation's usage and cost, and its budgets are checked against
//! the sum, before the brain sees the results.

use super::builtin::write_tool_message;
use super::executor::{Emitter, ExecContext};
use super::{AgentRuntime, DecisionError, StepResult, budget};
use crate::event::EventKind;
use crate::ids::OperationId;
use crate::instruction::{InstructionKind, SubAgentTask};
use crate::message::ToolStatus;
use crate::phase::{Phase, RuntimeContext, SubAgentOutcome, SubAgentsResultPayload};
use crate::spec::OperationSpec;
use crate::state::{AgentState, Finish, StateError, Status, SubAgentRun};
use crate::usage::{Cost, Usage};
use chrono::Utc;

/// A sub-agent to create: its operation's first state and spec, made by the host's
/// `exec_sub_agents` executor and created in the same commit that parks the parent.
#[derive(Clone, Debug)]
pub struct SubAgentSpawn {
    /// Which child, for which call.
    pub run: SubAgentRun,
    /// The task it was given.
    pub task: SubAgentTask,
    /// What it may do (derived from the parent's spec, never wider).
    pub spec: OperationSpec,
    /// Its first state (system role and the task as the user message).
    pub state: AgentState,
    /// The parent's tool message its thread hangs from.
    pub parent_message_id: Option<crate::MessageId>,
}

/// How a sub-agent ended, as its parent learns it.
#[derive(Clone, Debug, PartialEq)]
pub struct SubAgentEnd {
    /// The child operation.
    pub operation_id: OperationId,
    /// Its final status (`done` or `error`; a cancelled child is `done`, `user_requested`).
    pub status: Status,
    /// How it finished.
    pub finish: Option<Finish>,
    /// Its failure.
    pub error: Option<StateError>,
    /// Its final answer (the last assistant text).
    pub answer: Option<String>,
    /// What it used, its own sub-agents included.
    pub usage: Usage,
    /// What it cost, its own sub-agents included.
    pub cost: Cost,
}

impl SubAgentEnd {
    /// Whether its answer counts as the task done.
    pub fn success(&self) -> bool {
        self.status == Status::Done && self.finish.as_ref().is_some_and(|f| f.reason.is_success())
    }

    fn failure(&self) -> String {
        if let Some(e) = &self.error {
            return format!("failed ({}): {}", e.code, e.message);
        }
        match &self.finish {
            Some(f) => {
                let reason = f.reason.to_string();
                match &f.detail {
                    Some(d) => format!("ended without completing ({reason}): {d}"),
                    None => format!("ended without completing ({reason})"),
                }
            }
            None => format!("ended as {:?}", self.status),
        }
    }
}

/// The result text of one delegating call: each task's answer, or what stopped it.
fn call_result(group: &[(&SubAgentRun, &SubAgentEnd)]) -> (ToolStatus, String) {
    let all_ok = group.iter().all(|(_, e)| e.success());
    let status = if all_ok {
        ToolStatus::Succeeded
    } else {
        ToolStatus::Failed
    };
    if let [(run, end)] = group {
        let text = if end.success() {
            end.answer.clone().unwrap_or_default()
        } else {
            format!(
                "The sub-agent for \"{}\" (operation {}) {}.{}",
                run.title,
                run.operation_id,
                end.failure(),
                end.answer
                    .as_deref()
                    .filter(|a| !a.is_empty())
                    .map(|a| format!(" Its last answer: {a}"))
                    .unwrap_or_default()
            )
        };
        return (status, text);
    }
    let mut text = format!("Results of {} delegated tasks, in order:\n", group.len());
    for (i, (run, end)) in group.iter().enumerate() {
        let who = run.agent.as_deref().unwrap_or("sub-agent");
        text.push_str(&format!("\n## {}. {} ({who})\n", i + 1, run.title));
        if end.success() {
            text.push_str(end.answer.as_deref().unwrap_or_default());
        } else {
            text.push_str(&format!(
                "Not completed: the sub-agent (operation {}) {}.",
                run.operation_id,
                end.failure()
            ));
        }
        text.push('\n');
    }
    (status, text)
}

impl AgentRuntime {
    /// Continue an operation waiting for its sub-agents once all have ended (`ends` holds one
    /// end per sub-agent it waits for): the delegating calls answered in call order, the
    /// children's usage and cost added, the budgets checked (a limit the tree crossed applies
    /// its policy here). The next context hands the results to the brain.
    pub fn sub_agents_ended(
        &self,
        mut state: AgentState,
        ends: &[SubAgentEnd],
    ) -> Result<StepResult, DecisionError> {
        if state.status != Status::WaitingForSubAgents {
            return Err(DecisionError::NotWaiting(state.status));
        }
        let runs = std::mem::take(&mut state.sub_agents);
        let mut pairs = Vec::with_capacity(runs.len());
        for run in &runs {
            let end = ends
                .iter()
                .find(|e| e.operation_id == run.operation_id)
                .ok_or(DecisionError::SubAgentRunning(run.operation_id))?;
            pairs.push((run, end));
        }
        let emitter = Emitter::new(
            state.operation_id,
            state.step_count,
            state.next_event_seq,
            self.sink.clone(),
        );
        let cost_before = state.cost.clone();
        let mut outcomes = Vec::with_capacity(pairs.len());
        for (run, end) in &pairs {
            state.usage.add(&end.usage);
            state.cost.add(&end.cost);
            let t = &end.usage.llm.tokens;
            emitter.emit(EventKind::SubAgentEnded {
                sub_agent: run.operation_id,
                agent: run.agent.clone(),
                status: end.status,
                success: end.success(),
                cost: end.cost.total,
                total_tokens: t.total.max(t.input + t.output),
            });
            outcomes.push(SubAgentOutcome {
                success: end.success(),
                thread_id: Some(run.operation_id.to_string()),
                result: end.answer.clone(),
                error: (!end.success()).then(|| end.failure()),
            });
        }
        let mut calls: Vec<&str> = Vec::new();
        for run in &runs {
            if !calls.contains(&run.tool_call_id.as_str()) {
                calls.push(&run.tool_call_id);
            }
        }
        let mut assistant = None;
        for call_id in calls {
            let group: Vec<(&SubAgentRun, &SubAgentEnd)> = pairs
                .iter()
                .filter(|(r, _)| r.tool_call_id == call_id)
                .copied()
                .collect();
            let (status, text) = call_result(&group);
            let Some(turn) = state
                .messages
                .iter()
                .rev()
                .find(|m| m.tool_calls.iter().any(|c| &*c.id == call_id))
            else {
                // A turn a supervisor gave (no tool call asked for it): the answer joins the
                // conversation as the speaker's own message.
                for (run, end) in &group {
                    let mut m =
                        crate::message::Message::assistant(end.answer.clone().unwrap_or_default());
                    m.author = Some(run.agent.clone().unwrap_or_else(|| "sub-agent".into()));
                    m.parent_id = state.messages.last().map(|l| l.id);
                    state.push_message(m);
                }
                continue;
            };
            let (turn_id, call) = match turn.tool_calls.iter().find(|c| &*c.id == call_id) {
                Some(c) => (turn.id, c.clone()),
                None => continue,
            };
            assistant = Some(turn_id);
            let id = write_tool_message(&mut state, &call, Some(turn_id), None, status, &text);
            emitter.emit(EventKind::ToolResult {
                tool_call_id: call.id.clone(),
                tool_message_id: id,
                status,
                content: text,
                duration_ms: 0,
            });
        }
        state.status = Status::Running;
        state.updated_at = Utc::now();
        let ctx = RuntimeContext::new(Phase::SubAgentsBatchResult(SubAgentsResultPayload {
            parent_message_id: assistant,
            results: outcomes,
        }));
        let cx = ExecContext {
            emitter: &emitter,
            table: &self.table,
            tool_concurrency: self.tool_concurrency,
            context: &ctx,
        };
        let delta = state.cost.delta_since(&cost_before);
        budget::enforce(&mut state, &cx, InstructionKind::ExecSubAgents, &delta, &[]);
        let next = (!state.status.is_blocked() && !state.status.is_terminal()).then_some(ctx);
        state.next_event_seq = emitter.next_seq();
        let mut r = StepResult::transition(state, emitter.take(), next);
        r.instructions = vec![InstructionKind::ExecSubAgents];
        Ok(r)
    }
}
