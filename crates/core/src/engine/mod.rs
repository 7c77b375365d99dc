//! The engine: `AgentRuntime::step` runs the brain's instructions through the executor table
//! and returns the new state, the events and the next context.

mod budget;
pub mod builtin;
mod executor;
mod human;
pub mod ports;
mod sub_agents;

pub use executor::{Approval, ExecContext, ExecError, ExecOutput, Executor, ExecutorTable};
pub use human::{
    DecisionError, abort_pending, answer_prompt, answer_select, answer_tool_call,
    approve_tool_call, expire_question, is_question, reject_pending, reject_tool_call,
};
pub use ports::{
    EventSink, LlmOutput, LlmPort, LlmProgress, LlmRequest, PortError, RawToolCall, Summarizer,
    Summary, ToolEffect, ToolOutput, ToolPort,
};
pub use sub_agents::{SubAgentEnd, SubAgentSpawn};

use crate::agent::{Agent, HeuristicEstimator, TokenEstimator};
use crate::event::{AgentEvent, EventKind};
use crate::instruction::BlockedReason;
use crate::instruction::{CallToolPayload, Instruction, InstructionKind};
use crate::message::{Role, ToolStatus};
use crate::phase::{Phase, RuntimeContext, UserInputPayload};
use crate::state::{AgentState, Interruption, StateError, Status, ToolRepeat};
use builtin::{
    CallLlmExecutor, CallToolExecutor, CallToolsBatchExecutor, CompressContextExecutor,
    FinishExecutor, RequestHumanExecutor, ResolveAbortedToolsExecutor, ResolveBlockedToolsExecutor,
    Typed,
};
use chrono::Utc;
use executor::Emitter;
use std::sync::{Arc, Mutex};

/// Default number of tool calls a batch runs at once.
pub const DEFAULT_TOOL_CONCURRENCY: usize = 8;

/// What the host plugs into the runtime.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// Executors that override the built-ins (the agent's own override these).
    pub executors: ExecutorTable,
    /// Model port for the built-in `call_llm`.
    pub llm: Option<Arc<dyn LlmPort>>,
    /// Tool port for the built-in `call_tool`.
    pub tools: Option<Arc<dyn ToolPort>>,
    /// Summarizer for the built-in `compress_context`.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// Compression keeps the newest messages verbatim up to this many tokens (a trailing user
    /// message is always kept).
    pub keep_recent_tokens: u64,
    /// Measures messages for `keep_recent_tokens`.
    pub estimator: Arc<dyn TokenEstimator>,
    /// Live event channel.
    pub sink: Option<Arc<dyn EventSink>>,
    /// Tool calls a batch runs at once.
    pub tool_concurrency: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            executors: ExecutorTable::new(),
            llm: None,
            tools: None,
            summarizer: None,
            keep_recent_tokens: 0,
            estimator: Arc::new(HeuristicEstimator),
            sink: None,
            tool_concurrency: DEFAULT_TOOL_CONCURRENCY,
        }
    }
}

/// The result of one step (or of an interrupt/resume transition): everything a host needs to
/// commit it, as data.
#[derive(Clone, Debug)]
pub struct StepResult {
    /// State after the step.
    pub state: AgentState,
    /// Events emitted, in sequence order.
    pub events: Vec<AgentEvent>,
    /// What the brain sees next; `None` when parked, finished, or nothing is left to do.
    pub next_context: Option<RuntimeContext>,
    /// Instruction types the step ran, in order (empty for a transition outside a step).
    pub instructions: Vec<InstructionKind>,
    /// Tool calls the step asked a human to approve, with why (each becomes an
    /// intervention).
    pub approvals: Vec<Approval>,
    /// The host's records of the tool executions the step ran.
    pub tool_executions: Vec<crate::tool::ToolExecution>,
    /// Sub-agents the step delegated to, to be created with its commit.
    pub spawns: Vec<SubAgentSpawn>,
}

impl StepResult {
    /// A transition that ran no instruction (an interruption, a resume, a decision).
    pub fn transition(
        state: AgentState,
        events: Vec<AgentEvent>,
        next_context: Option<RuntimeContext>,
    ) -> Self {
        Self {
            state,
            events,
            next_context,
            instructions: Vec::new(),
            approvals: Vec::new(),
            tool_executions: Vec::new(),
            spawns: Vec::new(),
        }
    }

    /// This result followed by `later`, as one: `later`'s state and next context, both
    /// results' events, instructions and approvals.
    pub fn then(mut self, later: StepResult) -> StepResult {
        self.events.extend(later.events);
        self.instructions.extend(later.instructions);
        self.approvals.extend(later.approvals);
        self.tool_executions.extend(later.tool_executions);
        self.spawns.extend(later.spawns);
        StepResult {
            state: later.state,
            next_context: later.next_context,
            ..self
        }
    }
}

/// Asks a running operation to stop between instructions.
#[derive(Clone, Debug, Default)]
pub struct InterruptHandle(Arc<Mutex<Option<String>>>);

impl InterruptHandle {
    /// Request an interruption with `reason`.
    pub fn interrupt(&self, reason: impl Into<String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.into());
    }

    /// Whether an interruption is pending.
    pub fn is_requested(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A runtime failure outside any step.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// `resume` on an operation that is not interrupted.
    #[error("operation is {0:?}, not interrupted; only an interrupted operation can resume")]
    NotInterrupted(Status),
    /// `resume` on an interruption marked final.
    #[error("operation was interrupted for good ({0}) and cannot resume")]
    CannotResume(String),
}

/// Executes an agent's instructions. Cheap to share; one per host or per operation.
pub struct AgentRuntime {
    agent: Arc<dyn Agent>,
    table: ExecutorTable,
    tool_concurrency: usize,
    sink: Option<Arc<dyn EventSink>>,
    interrupt: InterruptHandle,
}

/// Set `interrupted` status, record why, emit the event.
pub(crate) fn interrupt_in_place(
    state: &mut AgentState,
    cx: &ExecContext<'_>,
    reason: String,
    can_resume: bool,
    instruction: Option<Instruction>,
) {
    interrupt_state(state, cx.emitter, reason, can_resume, instruction);
}

fn interrupt_state(
    state: &mut AgentState,
    emitter: &Emitter,
    reason: String,
    can_resume: bool,
    instruction: Option<Instruction>,
) {
    state.status = Status::Interrupted;
    state.interruption = Some(Interruption {
        reason: reason.clone(),
        interrupted_at: Utc::now(),
        interrupted_instruction: instruction.map(Box::new),
        can_resume,
        finish_reason: None,
    });
    emitter.emit(EventKind::Interrupted { reason, can_resume });
}

/// The context a step starts from when none is given.
pub fn initial_context(state: &AgentState) -> RuntimeContext {
    match state.messages.last() {
        Some(m) if m.role == Role::User => {
            RuntimeContext::new(Phase::UserInput(UserInputPayload {
                message_id: Some(m.id),
                is_first_message: state.is_first_user_turn(),
            }))
        }
        _ => RuntimeContext::new(Phase::Init),
    }
}

impl AgentRuntime {
    /// Build a runtime: built-in executors, overridden by `config.executors`, overridden by
    /// the agent's executors.
    pub fn new(agent: Arc<dyn Agent>, config: RuntimeConfig) -> Self {
        let mut table = ExecutorTable::new()
            .with(InstructionKind::Finish, Arc::new(Typed(FinishExecutor)))
            .with(
                InstructionKind::CallToolsBatch,
                Arc::new(Typed(CallToolsBatchExecutor)),
            )
            .with(
                InstructionKind::ResolveBlockedTools,
                Arc::new(Typed(ResolveBlockedToolsExecutor)),
            )
            .with(
                InstructionKind::ResolveAbortedTools,
                Arc::new(Typed(ResolveAbortedToolsExecutor)),
            )
            .with(
                InstructionKind::RequestHumanApprove,
                Arc::new(Typed(RequestHumanExecutor)),
            )
            .with(
                InstructionKind::RequestHumanPrompt,
                Arc::new(Typed(RequestHumanExecutor)),
            )
            .with(
                InstructionKind::RequestHumanSelect,
                Arc::new(Typed(RequestHumanExecutor)),
            )
            .with(
                InstructionKind::CompressContext,
                Arc::new(Typed(CompressContextExecutor {
                    summarizer: config.summarizer.clone(),
                    keep_recent_tokens: config.keep_recent_tokens,
                    estimator: Arc::clone(&config.estimator),
                })),
            );
        if let Some(port) = &config.llm {
            table.insert(
                InstructionKind::CallLlm,
                Arc::new(Typed(CallLlmExecutor {
                    port: Arc::clone(port),
                })),
            );
        }
        if let Some(port) = &config.tools {
            table.insert(
                InstructionKind::CallTool,
                Arc::new(Typed(CallToolExecutor {
                    port: Arc::clone(port),
                })),
            );
        }
        table.overlay(&config.executors);
        table.overlay(&agent.executors());
        Self {
            agent,
            table,
            tool_concurrency: config.tool_concurrency.max(1),
            sink: config.sink,
            interrupt: InterruptHandle::default(),
        }
    }

    /// The handle that interrupts this runtime's steps between instructions.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.interrupt.clone()
    }

    /// The effective executor table.
    pub fn executors(&self) -> &ExecutorTable {
        &self.table
    }

    /// Run one step.
    ///
    /// Never panics and never returns an error: a failing brain or executor, an instruction
    /// without an executor, or a brain with nothing to say yields the input state with status
    /// `error` and an `error` event. A finished operation, and one parked for a human or an
    /// async tool, is returned unchanged: parked operations move on only through a decision
    /// ([`approve_tool_call`], [`reject_tool_call`], [`abort_pending`], [`answer_prompt`], ...)
    /// or [`AgentRuntime::interrupt`].
    pub async fn step(&self, state: AgentState, context: Option<RuntimeContext>) -> StepResult {
        if state.status.is_terminal() || state.status.is_parked() {
            return StepResult::transition(state, Vec::new(), None);
        }
        // The brain sees a turn's results only once every async call of it has answered (an
        // approved call still runs: it may be one more of them).
        if state.status == Status::Running
            && !state.async_calls.is_empty()
            && !matches!(
                context.as_ref().map(|c| &c.phase),
                Some(Phase::HumanApprovedTool(_))
            )
        {
            let mut st = state;
            st.status = Status::WaitingForAsyncTool;
            return StepResult::transition(st, Vec::new(), None);
        }
        let mut st = state.clone();
        // A cloned Vec has no spare capacity; a step appends a few messages.
        st.messages.reserve(4);
        st.step_count += 1;
        let step_index = st.step_count;
        st.updated_at = Utc::now();
        if let Some(max) = st.max_steps
            && st.step_count > max
            && !st.force_finish
        {
            st.force_finish = true;
        }
        if st.status == Status::Idle {
            st.status = Status::Running;
        }
        let emitter = Emitter::new(
            st.operation_id,
            step_index,
            st.next_event_seq,
            self.sink.clone(),
        );
        let ctx = context.unwrap_or_else(|| initial_context(&st));
        emitter.emit(EventKind::StepStart {
            phase: ctx.phase.name().into(),
        });

        let instructions = match &ctx.phase {
            Phase::HumanApprovedTool(p) => vec![Instruction::CallTool {
                payload: CallToolPayload {
                    parent_message_id: p.parent_message_id,
                    tool_call: p.tool_call.clone(),
                    existing_tool_message_id: p.tool_message_id,
                },
            }],
            _ => match self.agent.runner(&ctx, &st) {
                Ok(list) if list.is_empty() => {
                    let msg = format!(
                        "the agent returned no instructions in phase {}",
                        ctx.phase.name()
                    );
                    return self.error_result(
                        state,
                        step_index,
                        &emitter,
                        crate::failure::Fault::AgentNoInstructions.into(),
                        msg,
                    );
                }
                Ok(list) => list,
                Err(e) => {
                    return self.error_result(
                        state,
                        step_index,
                        &emitter,
                        crate::failure::Fault::AgentFailed.into(),
                        e.to_string(),
                    );
                }
            },
        };

        let cx = ExecContext {
            emitter: &emitter,
            table: &self.table,
            tool_concurrency: self.tool_concurrency,
            context: &ctx,
        };
        let mut next: Option<RuntimeContext> = None;
        let mut executed: Vec<InstructionKind> = Vec::with_capacity(instructions.len());
        let mut finished = false;
        let mut approvals = Vec::new();
        let mut tool_executions = Vec::new();
        let mut spawns = Vec::new();
        for ins in instructions {
            if let Some(reason) = self.interrupt.take() {
                interrupt_state(&mut st, &emitter, reason, true, Some(ins));
                break;
            }
            let kind = ins.kind();
            let Some(exec) = self.table.get(kind) else {
                let msg = format!("no executor found for instruction type {}", kind.as_str());
                return self.error_result(
                    state,
                    step_index,
                    &emitter,
                    crate::failure::Fault::ExecutorMissing.into(),
                    msg,
                );
            };
            let effect = Effect::of(&ins);
            let status_before = st.status;
            let cost_before = budget::spends(kind).then(|| st.cost.clone());
            let out = match exec.execute(ins, &mut st, &cx).await {
                Ok(out) => out,
                Err(e) => {
                    return self.error_result(state, step_index, &emitter, e.code, e.message);
                }
            };
            if out.next_context.is_some() {
                next = out.next_context;
            }
            tool_executions.extend(out.tool_executions);
            spawns.extend(out.spawns);
            finished |= kind == InstructionKind::Finish;
            executed.push(kind);
            approvals.extend(out.approvals);
            if kind == InstructionKind::CallLlm {
                st.pending_assistant_message_id = None;
            }
            effect.apply(&mut st);
            if let Some(before) = cost_before
                && !st.status.is_terminal()
            {
                let delta = st.cost.delta_since(&before);
                budget::enforce(&mut st, &cx, kind, &delta, &out.tool_call_costs);
            }
            // An instruction that parks or ends the operation ends the step. A step that starts
            // interrupted (settling a cancellation) keeps going until its `finish`.
            if st.status != status_before && (st.status.is_blocked() || st.status.is_terminal()) {
                break;
            }
        }
        // Calls a device runs answer later: the operation waits for them.
        if st.status == Status::Running && !st.async_calls.is_empty() {
            st.status = Status::WaitingForAsyncTool;
        }
        // Executors cannot change the step count; a finishing step does not count.
        st.step_count = if finished { step_index - 1 } else { step_index };
        if st.status.is_blocked() || st.status.is_terminal() {
            next = None;
        }
        emitter.emit(EventKind::StepComplete {
            status: st.status,
            instructions: executed.clone(),
        });
        st.next_event_seq = emitter.next_seq();
        StepResult {
            state: st,
            events: emitter.take(),
            next_context: next,
            instructions: executed,
            approvals,
            tool_executions,
            spawns,
        }
    }

    fn error_result(
        &self,
        mut state: AgentState,
        step_index: u32,
        emitter: &Emitter,
        code: crate::failure::FailureCode,
        message: String,
    ) -> StepResult {
        state.step_count = step_index;
        state.status = Status::Error;
        state.updated_at = Utc::now();
        state.error = Some(StateError {
            code: code.clone(),
            message: message.clone(),
        });
        emitter.emit(EventKind::Error { code, message });
        state.next_event_seq = emitter.next_seq();
        StepResult {
            state,
            events: emitter.take(),
            next_context: None,
            instructions: Vec::new(),
            approvals: Vec::new(),
            tool_executions: Vec::new(),
            spawns: Vec::new(),
        }
    }

    /// Step until the operation parks, ends, or has nothing left to do. Returns the last
    /// state with every event, instruction and approval of the run.
    pub async fn run(
        &self,
        mut state: AgentState,
        mut context: Option<RuntimeContext>,
    ) -> StepResult {
        let mut all = StepResult::transition(AgentState::new(state.operation_id), Vec::new(), None);
        loop {
            let r = self.step(state, context).await;
            all.events.extend(r.events);
            all.instructions.extend(r.instructions);
            all.approvals.extend(r.approvals);
            all.tool_executions.extend(r.tool_executions);
            all.spawns.extend(r.spawns);
            state = r.state;
            context = r.next_context;
            if context.is_none() || state.status.is_blocked() || state.status.is_terminal() {
                all.state = state;
                all.next_context = context;
                return all;
            }
        }
    }

    /// Answer async call `tool_call_id` (run on a device) with `output`: its tool message gets
    /// the result, and once no async call is left an operation that waited for them runs on
    /// (the brain then sees the turn's results). One waiting for a human as well stays so.
    pub fn complete_async_tool(
        &self,
        mut state: AgentState,
        tool_call_id: &str,
        output: &ToolOutput,
    ) -> Result<StepResult, DecisionError> {
        let Some(pos) = state.async_calls.iter().position(|c| c == tool_call_id) else {
            return Err(DecisionError::UnknownToolCall(tool_call_id.to_owned()));
        };
        let call = state
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .find(|c| &*c.id == tool_call_id)
            .cloned()
            .ok_or_else(|| DecisionError::UnknownToolCall(tool_call_id.to_owned()))?;
        state.async_calls.remove(pos);
        let emitter = Emitter::new(
            state.operation_id,
            state.step_count,
            state.next_event_seq,
            self.sink.clone(),
        );
        let status = if output.success {
            ToolStatus::Succeeded
        } else {
            ToolStatus::Failed
        };
        let parent = state
            .messages
            .iter()
            .find(|m| m.tool_calls.iter().any(|c| &*c.id == tool_call_id))
            .map(|m| m.id);
        // A device's answer becomes message text here, as every tool's does in `settle`.
        let content = crate::text::message_text(&output.content).into_owned();
        let id = builtin::write_tool_message(&mut state, &call, parent, None, status, &content);
        let key = call.key();
        state.usage.record_tool(&key, output.success, 0);
        state.cost.record_tool(&key, output.cost);
        emitter.emit(EventKind::ToolResult {
            tool_call_id: call.id.clone(),
            tool_message_id: id,
            status,
            content: content.clone(),
            duration_ms: 0,
        });
        let next = (state.async_calls.is_empty() && state.status == Status::WaitingForAsyncTool)
            .then(|| {
                state.status = Status::Running;
                RuntimeContext::new(Phase::ToolResult(crate::phase::ToolResultPayload {
                    parent_message_id: parent,
                    tool_message_id: id,
                    tool_call: call,
                    status,
                    content,
                    execution_ms: 0,
                    follow_up: None,
                }))
            });
        state.next_event_seq = emitter.next_seq();
        state.updated_at = Utc::now();
        Ok(StepResult::transition(state, emitter.take(), next))
    }

    /// Interrupt an operation from outside a step.
    pub fn interrupt(
        &self,
        mut state: AgentState,
        reason: impl Into<String>,
        can_resume: bool,
    ) -> StepResult {
        let emitter = Emitter::new(
            state.operation_id,
            state.step_count,
            state.next_event_seq,
            self.sink.clone(),
        );
        interrupt_state(&mut state, &emitter, reason.into(), can_resume, None);
        state.next_event_seq = emitter.next_seq();
        state.updated_at = Utc::now();
        StepResult {
            state,
            events: emitter.take(),
            next_context: None,
            instructions: Vec::new(),
            approvals: Vec::new(),
            tool_executions: Vec::new(),
            spawns: Vec::new(),
        }
    }

    /// Interrupt for good with the finish reason the settlement will use (an expired approval
    /// ends with `timeout`).
    pub fn interrupt_finishing(
        &self,
        state: AgentState,
        reason: impl Into<String>,
        finish: crate::state::FinishReason,
    ) -> StepResult {
        let mut r = self.interrupt(state, reason, false);
        if let Some(i) = r.state.interruption.as_mut() {
            i.finish_reason = Some(finish);
        }
        r
    }

    /// Resume an interrupted operation; the next context continues the conversation.
    pub fn resume(
        &self,
        mut state: AgentState,
        reason: impl Into<String>,
    ) -> Result<StepResult, RuntimeError> {
        if state.status != Status::Interrupted {
            return Err(RuntimeError::NotInterrupted(state.status));
        }
        if let Some(i) = &state.interruption
            && !i.can_resume
        {
            return Err(RuntimeError::CannotResume(i.reason.clone()));
        }
        let emitter = Emitter::new(
            state.operation_id,
            state.step_count,
            state.next_event_seq,
            self.sink.clone(),
        );
        state.status = Status::Running;
        state.interruption = None;
        state.updated_at = Utc::now();
        emitter.emit(EventKind::Resumed {
            reason: reason.into(),
            resumed_from_step: state.step_count,
        });
        state.next_event_seq = emitter.next_seq();
        let next = initial_context(&state);
        Ok(StepResult::transition(state, emitter.take(), Some(next)))
    }
}

/// Bookkeeping the engine does for an instruction, whichever executor ran it, so the loop
/// breaker and the unknown-name limit cannot be bypassed by overriding an executor.
enum Effect {
    None,
    ToolsRan(Vec<u64>),
    UnknownNames,
}

impl Effect {
    fn of(ins: &Instruction) -> Self {
        match ins {
            Instruction::CallTool { payload } => {
                Effect::ToolsRan(vec![ToolRepeat::signature(&payload.tool_call)])
            }
            Instruction::CallToolsBatch { payload } => Effect::ToolsRan(
                payload
                    .tool_calls
                    .iter()
                    .map(ToolRepeat::signature)
                    .collect(),
            ),
            Instruction::ResolveBlockedTools { payload }
                if payload.blocked_reason == BlockedReason::UnknownToolName =>
            {
                Effect::UnknownNames
            }
            _ => Effect::None,
        }
    }

    fn apply(self, st: &mut AgentState) {
        match self {
            Effect::None => {}
            Effect::ToolsRan(sigs) => sigs
                .into_iter()
                .for_each(|s| st.tool_repeat.record_signature(s)),
            Effect::UnknownNames => st.tool_name_error_rounds += 1,
        }
    }
}
