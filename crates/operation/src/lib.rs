//! rein-operation: durable operations.
//!
//! It owns what an operation may do and how that is decided: agent profiles and their
//! validation ([`AgentProfile`]), the spec a profile and a request make ([`OperationSpec`],
//! written with the operation), and a process's setup ([`Host`]: where models come from, its
//! tools, the defaults), from which the CLI and the server make their drivers. The [`Driver`]
//! builds each operation's engine from its stored spec (model runtime through [`ModelPort`],
//! the tool host [`ToolHost`] with durable executions, the store), then runs the loop: load the
//! operation once, step, commit what the step changed in one transaction (the step result
//! carries everything the commit needs), repeat until the operation parks or ends. Human
//! decisions, cancellation and crash recovery all continue from what is on disk. Delegation
//! makes operation trees: sub-agents created in the commit that parks their parent, with specs
//! never wider than its, run by the parent's run within what it has left to spend; a group is a
//! supervisor whose turns are sub-agents ([`GroupProfile`]). Each model call records what it
//! admitted ([`context_report`]): the skills, tool listing and instructions it carried and
//! what every context processor changed. Where a new prompt goes in its topic's tree is a
//! [`Turn`] (continue, edit, regenerate); a topic as people see it is a
//! [`topic::TopicTree`]. Where an operation's work runs is chosen once ([`surface::route`]): rein's
//! own brain and tools, an external agent CLI ([`external`]) or a remote agent reached over
//! A2A ([`a2a`]: its card checked, its task followed without ever being sent twice, its
//! questions asked as the operation's), bounded and recorded like any other operation. The system model ([`Driver::with_system_model`]) titles topics and
//! reads task runs and learns memories about the user from finished conversations
//! ([`memories`]). An operation's knowledge bases ([`knowledge`]) are searched by its tool and
//! feed each call the best chunks for the user's message, by full text and meaning fused
//! ([`knowledge::retrieve`]); durable ingestion jobs fill them ([`knowledge::ingest`]).
//! A person's "always for this tool" is a grant ([`grants`]), kept in the store and loaded
//! before every step, never covering what the blacklist or the command guard flags. Against
//! instructions planted in what a model reads: MCP tool definitions are pinned and a changed one
//! is held until a person approves it ([`mcp_pins`]), and the process's keys are replaced in
//! every tool result ([`redact`]); marking data as data is rein-context's `spotlight`.
//! On a server, a user's operations use the model providers they brought ([`own_models`]),
//! their API keys sealed at rest with the server's secret key ([`secrets`]), are offered the
//! tools of the MCP servers they defined on origins the server allows ([`own_mcp`]), and work
//! in the directory they chose among those the server allows ([`workdirs`]).
//! A process's [`settings`] (configuration file, environment, flags) are resolved here, with
//! one precedence, for the CLI and any embedder of the server. A client driving an operation
//! (an editor over ACP) may do its file and shell work in its own world ([`client_tools`]).
//! Goals ([`goals`]) run the pure coordinator's instructions against the store: a planner
//! call, works as operations with derived ids, independent verifications, a final acceptance,
//! one committed event at a time, within the goal's budget. In test builds (`test-hooks`), a
//! deterministic simulation can hold any run at the points [`sim`] names.

pub mod a2a;
mod activity;
mod agents;
pub mod attachment;
pub mod client_tools;
pub mod context_report;
pub mod devices;
mod driver;
mod embedder;
pub mod env;
mod error;
pub mod evals;
pub mod external;
pub mod goals;
pub mod grants;
pub mod group;
mod host;
pub mod images;
pub mod knowledge;
pub mod mcp_pins;
pub mod memories;
mod model_port;
pub mod models;
pub mod own_mcp;
pub mod own_models;
pub mod pricing;
pub mod profile;
mod prompt_prefix;
pub mod redact;
pub mod secrets;
pub mod settings;
pub mod sim;
pub mod speech;
mod summarizer;
pub mod surface;
mod tools;
pub mod topic;
pub mod tree;
pub mod videos;
pub mod workdirs;

pub use agents::{AgentDirectory, StoredAgents};
pub use driver::{
    AGENT_FORMAT, AgentArchive, AgentImportError, AgentMemory, Begun, BranchError, CalledTool,
    CancelWatch, ChainReplay, ChoosableTools, CommitHook, Decision, Driver, Durability, Fork,
    ForkChanges, ForkError, ForkOptions, KnowledgeManifest, MOVED_ON, ReplayAnswer, ReplayError,
    ReplayOptions, RunEnd, SkillManifest, StartOptions, StepReplay, SystemModelError,
    TITLE_INSTRUCTIONS, Turn, derived_message_id,
};
pub use embedder::ProviderEmbedder;
pub use error::{DriverError, Refusal, TOPIC_ID_PATTERN, check_topic_id};
pub use group::GroupProfile;
pub use host::{Host, SpecError, StoredAgent, stored_agent};
pub use model_port::ModelPort;
pub use models::{ModelSource, ModelUnavailable, RegistryModels, SingleProvider};
pub use profile::{AgentProfile, ProfileError, SpecOrigin};
pub use rein_context::{FORCE_FINISH_PROMPT, Pipeline};
pub use rein_core::spec::{AgentRef, ContextSettings, OperationSpec};
pub use rein_tools::{BuiltinConfig, Tool, ToolContext, skills, web};
pub use summarizer::{ModelSummarizer, SUMMARY_INSTRUCTIONS};
pub use tools::ToolHost;
