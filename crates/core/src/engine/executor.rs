//! The executor table: one executor per instruction type, looked up by the engine.

use crate::event::{AgentEvent, EventKind};
use crate::ids::OperationId;
use crate::instruction::{Instruction, InstructionKind};
use crate::phase::RuntimeContext;
use crate::state::AgentState;
use crate::usage::Usd;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::ports::EventSink;

/// An executor failure: the step ends with status `error`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ExecError {
    /// What kind of failure.
    pub code: crate::failure::FailureCode,
    /// What went wrong.
    pub message: String,
}

impl ExecError {
    /// An executor error.
    pub fn new(code: impl Into<crate::failure::FailureCode>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// What an executor produced besides its changes to the state.
#[derive(Clone, Debug, Default)]
pub struct ExecOutput {
    /// The phase the brain sees next, if this instruction determines it.
    pub next_context: Option<RuntimeContext>,
    /// Cost of each tool call run (for per-call tool budgets); empty for other instructions.
    pub tool_call_costs: Vec<Usd>,
    /// The host's records of the tool executions this instruction ran.
    pub tool_executions: Vec<crate::tool::ToolExecution>,
    /// Sub-agents to create with the step's commit (`exec_sub_agents`).
    pub spawns: Vec<super::SubAgentSpawn>,
    /// Calls this instruction parked for a person, each with why it asks
    /// (`request_human_approve`).
    pub approvals: Vec<Approval>,
}

/// A call waiting for a person, and why the checker asked (none for a re-park of calls that
/// were already waiting: their first request keeps its reason).
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    /// The call.
    pub call: crate::ToolCall,
    /// Why it asks.
    pub reason: Option<crate::intervention::ApprovalReason>,
}

impl ExecOutput {
    /// Output with a next context.
    pub fn new(next_context: Option<RuntimeContext>) -> Self {
        Self {
            next_context,
            ..Default::default()
        }
    }
}

/// Turns one instruction into a state transition.
///
/// The executor changes `state` in place. If it fails, the engine discards every change of the
/// step (the step's result is built from the state the step started with), so an executor never
/// has to undo partial work.
pub trait Executor: Send + Sync {
    /// Execute `instruction` on `state`.
    fn execute<'a>(
        &'a self,
        instruction: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>>;
}

/// Executors by instruction type.
#[derive(Clone, Default)]
pub struct ExecutorTable {
    map: BTreeMap<InstructionKind, Arc<dyn Executor>>,
}

impl ExecutorTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: register `executor` for `kind`.
    pub fn with(mut self, kind: InstructionKind, executor: Arc<dyn Executor>) -> Self {
        self.insert(kind, executor);
        self
    }

    /// Register `executor` for `kind`, replacing any previous one.
    pub fn insert(&mut self, kind: InstructionKind, executor: Arc<dyn Executor>) {
        self.map.insert(kind, executor);
    }

    /// Overlay `other`: its entries win.
    pub fn overlay(&mut self, other: &ExecutorTable) {
        for (k, v) in &other.map {
            self.map.insert(*k, Arc::clone(v));
        }
    }

    /// The executor for `kind`.
    pub fn get(&self, kind: InstructionKind) -> Option<&Arc<dyn Executor>> {
        self.map.get(&kind)
    }

    /// Registered kinds.
    pub fn kinds(&self) -> impl Iterator<Item = InstructionKind> + '_ {
        self.map.keys().copied()
    }
}

/// Assigns sequence numbers, records events and forwards them live.
pub(crate) struct Emitter {
    operation_id: OperationId,
    step: u32,
    seq: AtomicU64,
    events: Mutex<Vec<AgentEvent>>,
    sink: Option<Arc<dyn EventSink>>,
}

impl Emitter {
    pub(crate) fn new(
        operation_id: OperationId,
        step: u32,
        next_seq: u64,
        sink: Option<Arc<dyn EventSink>>,
    ) -> Self {
        Self {
            operation_id,
            step,
            seq: AtomicU64::new(next_seq),
            events: Mutex::new(Vec::with_capacity(8)),
            sink,
        }
    }

    pub(crate) fn emit(&self, kind: EventKind) {
        // Sequence assignment and recording happen under one lock so the recorded order is
        // the sequence order even when batch tools emit concurrently.
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let event = AgentEvent {
            operation_id: self.operation_id,
            step: self.step,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            kind,
        };
        if let Some(sink) = &self.sink {
            sink.publish(&event);
        }
        events.push(event);
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    pub(crate) fn take(&self) -> Vec<AgentEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What an executor can reach besides the state.
pub struct ExecContext<'a> {
    pub(crate) emitter: &'a Emitter,
    pub(crate) table: &'a ExecutorTable,
    pub(crate) tool_concurrency: usize,
    pub(crate) context: &'a RuntimeContext,
}

impl ExecContext<'_> {
    /// Emit an event (sequenced, recorded and published live).
    pub fn emit(&self, kind: EventKind) {
        self.emitter.emit(kind);
    }

    /// The executor that won precedence for `kind` (a batch runs calls through `call_tool`).
    pub fn executor(&self, kind: InstructionKind) -> Option<&Arc<dyn Executor>> {
        self.table.get(kind)
    }

    /// Maximum concurrent tool calls in a batch.
    pub fn tool_concurrency(&self) -> usize {
        self.tool_concurrency
    }

    /// The context the brain was called with.
    pub fn runtime_context(&self) -> &RuntimeContext {
        self.context
    }

    /// Index of the running step.
    pub fn step(&self) -> u32 {
        self.emitter.step
    }
}
