//! Commands written once for both places they run: this machine's database ([`Local`]) and a
//! `rein serve` over its HTTP API ([`Remote`], `--server URL`). A command asks its [`Backend`]
//! and prints the answer the same way for both. The remote side sends and reads the server's
//! own request and response types (`rein_server::routes`), so an API change that a command
//! would trip on breaks this build, not a user's command. A command that runs only on this
//! machine asks [`Backend::local`], which on a server refuses it, naming what to do.

pub mod agents;
pub mod artifacts;
pub mod backup;
pub mod briefs;
pub mod chat;
pub mod config;
pub mod connect;
pub mod decide;
pub mod devices;
pub mod ended;
pub mod evals;
pub mod gc;
pub mod goals;
pub mod grants;
pub mod groups;
pub mod knowledge;
pub mod local;
pub mod login;
pub mod memory;
pub mod migrate;
pub mod models;
pub mod operations;
pub mod pins;
pub mod portable;
pub mod remote;
pub mod run;
pub mod sandbox;
pub mod serve;
pub mod settings;
pub mod skills;
pub mod tasks;
pub mod tokens;
pub mod topics;
pub mod usage;
pub mod users;

pub use local::Local;
pub use remote::Remote;

use crate::agent_profile::RunAs;
use rein_core::AgentEvent;
use rein_core::OperationId;
use rein_core::intervention::GrantScope;
use rein_core::state::Status;
use rein_operation::context_report::CallContext;
use rein_operation::{AgentProfile, Decision, RunEnd};
use rein_server::routes::agents::Agent;
use rein_server::routes::devices::DeviceOut;
use rein_server::routes::operations::OperationDetail;
use rein_store::{GrantRecord, OperationRecord};
use std::path::PathBuf;

/// An operation id as a command gives it, refused with one line naming it.
pub fn operation_id(id: &str) -> anyhow::Result<OperationId> {
    id.parse()
        .map_err(|_| anyhow::anyhow!("`{id}` is not an operation id"))
}

/// A turn to start: `prompt` as `who` with `over` winning, in `topic` (a new one when `None`).
pub struct Start<'a> {
    /// What the user says (the new text of an edited message; empty to regenerate).
    pub prompt: &'a str,
    /// The agent or group it runs as.
    pub who: RunAs<'a>,
    /// Settings over the agent's.
    pub over: &'a AgentProfile,
    /// Files attached to the prompt, read here.
    pub attachments: &'a [PathBuf],
    /// The conversation it continues.
    pub topic: Option<&'a str>,
    /// A new message, or another version of one (an edit, a regeneration).
    pub turn: rein_operation::Turn,
    /// Ctrl-C cancels it (`run`); otherwise Ctrl-C is left to end the process (`chat`, as it
    /// did before a turn).
    pub interrupt: bool,
}

/// A turn that ran: its operation, its conversation and where it stopped.
pub struct Ran {
    /// The operation.
    pub id: OperationId,
    /// Its conversation.
    pub topic: String,
    /// Where it stopped.
    pub end: RunEnd,
}

/// What approving a call "always" did.
pub enum Granted {
    /// The grant was made and the call approved; the operation ran on to `end`.
    Made {
        /// Where the operation stopped.
        end: RunEnd,
        /// The grant.
        grant: Box<GrantRecord>,
    },
    /// No grant may cover this call (a rule flags it every time, or it has no agent): why.
    Refused(String),
}

/// Where a command runs: what each shared command needs from a database or a server.
pub trait Backend:
    topics::Conversations
    + goals::Goaled
    + memory::Remembered
    + briefs::Inbox
    + groups::Groups
    + tasks::Scheduled
    + knowledge::KnowledgeBases
    + users::UserAdmin
    + usage::Spending
    + artifacts::Kept
    + settings::ServerSettings
    + tokens::TokenAdmin
{
    /// This machine's database, or why a command that needs it cannot run here.
    fn local(&self) -> anyhow::Result<&Local>;

    /// Operations, newest first (at most 200).
    async fn operations(&self, status: Option<Status>) -> anyhow::Result<Vec<OperationRecord>>;

    /// One operation with its timeline, pending decisions, sub-agents and where it stopped.
    async fn operation(&self, id: OperationId) -> anyhow::Result<OperationDetail>;

    /// What the model calls of `id` admitted (only the call of `step`, when given).
    async fn call_contexts(&self, id: OperationId, step: u32) -> anyhow::Result<Vec<CallContext>>;

    /// Hand each committed event of `id` after `after` to `each`, in order; with `follow`,
    /// until the operation ends.
    async fn events(
        &self,
        id: OperationId,
        after: Option<u64>,
        follow: bool,
        each: &mut (dyn FnMut(&AgentEvent) -> anyhow::Result<()> + Send),
    ) -> anyhow::Result<()>;

    /// Start `turn` and run it, printing its events as it runs, to where it stops.
    async fn run(&self, turn: Start<'_>) -> anyhow::Result<Ran>;

    /// The names of the skills an operation here may admit (`/skill NAME` in `chat`).
    async fn skill_names(&self) -> anyhow::Result<Vec<String>>;

    /// The model a turn run as `who` with `over` would call (`provider/model`), refusing
    /// settings that cannot run before a turn is started with them.
    async fn model_of(&self, who: RunAs<'_>, over: &AgentProfile) -> anyhow::Result<String>;

    /// Continue `id` from its last committed step; where it stopped next.
    async fn resume(&self, id: OperationId) -> anyhow::Result<RunEnd>;

    /// Cancel `id`; where it stopped.
    async fn cancel(&self, id: OperationId) -> anyhow::Result<RunEnd>;

    /// Send step `request.step`'s model call of `id` again to `request.models`.
    async fn replay(
        &self,
        id: OperationId,
        request: &rein_server::routes::replay::ReplayStep,
    ) -> anyhow::Result<rein_operation::StepReplay>;

    /// Replay every model call of `id` with `request.model` until it diverges.
    async fn replay_chain(
        &self,
        id: OperationId,
        request: &rein_server::routes::replay::ReplayChain,
    ) -> anyhow::Result<rein_operation::ChainReplay>;

    /// Operation `id` as a portable file.
    async fn export_operation(
        &self,
        id: OperationId,
    ) -> anyhow::Result<rein_store::OperationArchive>;

    /// Load `archive` as yours under new ids: its id and conversation here.
    async fn import_operation(
        &self,
        archive: &rein_store::OperationArchive,
    ) -> anyhow::Result<(OperationId, String)>;

    /// Fork `id` as `request` says and run the fork to where it stops: its id and end.
    async fn fork(
        &self,
        id: OperationId,
        request: &rein_server::routes::fork::ForkOperation,
    ) -> anyhow::Result<(OperationId, RunEnd)>;

    /// Decide `calls` of `id` (every pending call when `None`) and let it continue; where it
    /// stopped next.
    async fn decide(
        &self,
        id: OperationId,
        calls: Option<Vec<String>>,
        decision: Decision,
    ) -> anyhow::Result<RunEnd>;

    /// Approve `call` of `id` and grant its tool for `scope` from now on.
    async fn approve_always(
        &self,
        id: OperationId,
        call: &str,
        scope: GrantScope,
    ) -> anyhow::Result<Granted>;

    /// Your grants, newest first.
    async fn grants(
        &self,
        scope: Option<GrantScope>,
        revoked: bool,
    ) -> anyhow::Result<Vec<GrantRecord>>;

    /// Revoke a grant.
    async fn revoke_grant(&self, id: &str) -> anyhow::Result<GrantRecord>;

    /// Your agents.
    async fn agents(&self) -> anyhow::Result<Vec<Agent>>;

    /// One agent (an error naming it when there is none).
    async fn agent(&self, name: &str) -> anyhow::Result<Agent>;

    /// Create an agent (refused when the name is taken).
    async fn create_agent(&self, name: &str, config: AgentProfile) -> anyhow::Result<Agent>;

    /// Agent `name` as a portable file.
    async fn export_agent(&self, name: &str) -> anyhow::Result<rein_operation::AgentArchive>;

    /// Create the agent `archive` holds, with its memories (refused, naming it, when this host
    /// cannot give it its model, tools, skills or knowledge bases).
    async fn import_agent(&self, archive: &rein_operation::AgentArchive) -> anyhow::Result<Agent>;

    /// Replace an agent's configuration (its version counts up).
    async fn update_agent(&self, name: &str, config: AgentProfile) -> anyhow::Result<Agent>;

    /// Delete an agent.
    async fn delete_agent(&self, name: &str) -> anyhow::Result<()>;

    /// An agent's versions, newest first.
    async fn agent_versions(
        &self,
        name: &str,
    ) -> anyhow::Result<Vec<rein_server::routes::agents::AgentVersionOut>>;

    /// Give an agent an earlier version's configuration again, as its next version.
    async fn rollback_agent(&self, name: &str, version: u64) -> anyhow::Result<Agent>;

    /// Your devices (a server's only).
    async fn devices(&self) -> anyhow::Result<Vec<DeviceOut>>;

    /// Revoke a device (a server's only).
    async fn revoke_device(&self, name: &str) -> anyhow::Result<()>;

    /// Print the models (`rein models`): this machine's catalog and configured prices, or the
    /// server's.
    async fn print_models(&self, json: bool) -> anyhow::Result<()>;

    /// What `provider` itself serves (`rein models --remote`), asked with this machine's key
    /// for it, or through the server with yours there (else the server's).
    async fn provider_models(
        &self,
        provider: &str,
    ) -> anyhow::Result<rein_server::routes::models::ProviderModels>;
}
