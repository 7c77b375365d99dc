//! Brains: an [`Agent`] reads the phase and state and returns instructions. Pure: no IO.

mod compression;
mod general;
mod group;

pub use compression::{CompressionConfig, HeuristicEstimator, TokenEstimator, existing_summary};
pub use general::{
    DEFAULT_LOOP_BREAKER, DEFAULT_TOOL_NAME_ERROR_ROUNDS, GeneralChatAgent, GeneralChatAgentConfig,
};
pub use group::{GROUP_DONE, GroupSupervisor};

use crate::engine::ExecutorTable;
use crate::instruction::Instruction;
use crate::phase::RuntimeContext;
use crate::state::AgentState;

/// A brain failure (a bug or an impossible state, not a model or tool failure).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("agent failed: {0}")]
pub struct AgentError(pub String);

/// Decides what to do next.
pub trait Agent: Send + Sync {
    /// The instructions for this phase, run in order.
    fn runner(
        &self,
        context: &RuntimeContext,
        state: &AgentState,
    ) -> Result<Vec<Instruction>, AgentError>;

    /// Executors this agent brings; they override the runtime's.
    fn executors(&self) -> ExecutorTable {
        ExecutorTable::new()
    }
}
