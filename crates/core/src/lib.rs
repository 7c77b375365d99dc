//! rein-core: the pure heart of rein.
//!
//! It owns the data every other crate speaks (ids, [`Message`], [`ToolCall`], [`Usage`],
//! [`Cost`], [`Instruction`], [`AgentState`], [`AgentEvent`]), the brain interface ([`Agent`])
//! with the default [`GeneralChatAgent`] and a group's [`agent::GroupSupervisor`], the engine
//! that executes instructions ([`AgentRuntime::step`], the executor table, budgets, tool-batch
//! merging, the end of a delegation: [`AgentRuntime::sub_agents_ended`]), intervention
//! policy ([`InterventionChecker`] with the default security blacklist and the shell guard,
//! which reads commands on a bash syntax tree), questions an agent asks a person
//! ([`question::Question`]: the `ask_user` call, its answers), a conversation's message tree
//! with its branches and active path ([`conversation::Conversation`]), and what one operation
//! may do ([`spec::OperationSpec`], its shell sandbox included), and how a closed set of
//! values is declared once and typed from every edge ([`named_enum!`], [`names`]), and what
//! text a tool's output becomes in a message ([`text`]), and goals: an objective as a graph of
//! works that is planned, run, verified and accepted, with its pure coordinator ([`goal`]).
//!
//! Everything here is synchronous logic or runtime-agnostic futures: no async runtime, no
//! HTTP, no SQL. IO reaches the engine through the ports in [`engine::ports`].

pub mod agent;
pub mod brief;
pub mod conversation;
pub mod document;
pub mod engine;
pub mod event;
pub mod failure;
pub mod goal;
pub mod ids;
pub mod instruction;
pub mod intervention;
pub mod message;
pub mod names;
pub mod phase;
pub mod question;
pub mod spec;
pub mod state;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod tool;
pub mod usage;

pub use agent::{Agent, AgentError, GeneralChatAgent, GeneralChatAgentConfig};
pub use engine::{AgentRuntime, InterruptHandle, RuntimeConfig, RuntimeError, StepResult};
pub use event::{AgentEvent, EventKind};
pub use ids::{MessageId, OperationId};
pub use instruction::{Instruction, InstructionKind};
pub use intervention::{Action, Decision, InterventionChecker};
pub use message::{ContentPart, Message, Role, ToolCall, ToolStatus};
pub use phase::{Phase, RuntimeContext};
pub use state::{AgentState, FinishReason, Status};
pub use tool::{ToolApi, ToolManifest};
pub use usage::{Cost, TokenUsage, Usage, Usd};
