//! rein-store: the durable record of agents' work.
//!
//! Goals ([`Goals`]) are kept as their graph, committed one event at a time against the seq
//! read (no commit lost to another), with their event log.
//!
//! One [`Store`] trait over operations (record, latest state, next context, and the spec they
//! started with), their committed
//! steps (idempotent by `(operation, step_index)`), the event log (the replay cursor), the
//! message tree of each topic, tool executions (effect class and status, for crash recovery)
//! interventions (single-use human decisions), and documents (memories and notes per user and
//! agent). [`SqlStore`] implements it over SQLite (the
//! embedded default, WAL; step commits run as one job each on a writer thread) and PostgreSQL
//! (step commits notify other processes: [`CommitNotices`]) with the same portable SQL; one
//! conformance suite runs against both. A commit writes what the step changed
//! ([`StateChanges`]): the compact state, new or changed messages, their order from the first
//! changed position, the tool manifests only when they change. Beside operations: accounts,
//! tasks with their deliveries and runs ([`Tasks`]), and briefs with their hooks and hook
//! outbox ([`Briefs`]), topics: conversations created, renamed, searched and deleted, each
//! with the message its active branch runs through ([`Topics`]), devices and their tokens
//! ([`Devices`]), and knowledge bases: files written whole as chunks, searched by full text
//! with each backend's own index, FTS5 or `tsvector`, and by their embedding model's vectors
//! (pgvector's HNSW index on a PostgreSQL that has it, else an in-process index:
//! [`VectorSearch`]) ([`Knowledge`]), filled by durable ingestion jobs ([`KnowledgeJobs`]),
//! and the memories models extract from finished conversations, with their history and queue
//! ([`Memories`]), and the grants people make ("always for this tool", per operation,
//! conversation or agent, revocable: [`Grants`]), and sign-ins from another device approved
//! by a signed-in person ([`Logins`]), and browser sessions signed in by password
//! ([`Sessions`]), and the providers users bring, their keys sealed ([`OwnProviders`]), and the
//! MCP servers they define, their headers sealed ([`OwnMcpServers`]), MCP tool definitions
//! pinned against a server changing them ([`McpPins`]), and the files they
//! upload to send with a message ([`Files`]), and what their Responses API requests asked for
//! ([`Responses`]); a user's data as portable rows, to move them to another
//! database ([`Portable`]); and what an old database lets go of (finished operations'
//! steps, events and tool results) and its backups ([`Retention`]), and what operations spent,
//! summed per day, agent, model or user ([`Usage`]).

mod a2a_push;
mod accounts;
mod artifacts;
mod briefs;
mod checkpoint;
mod devices;
mod dialect;
mod error;
mod evals;
mod files;
mod goals;
mod grants;
mod knowledge;
mod logins;
mod mcp_pins;
mod memories;
mod migrate;
mod operation_archive;
mod own_mcp;
mod own_providers;
mod portable;
mod records;
mod responses;
mod retention;
mod schema;
mod sessions;
mod sql;
mod step_check;
mod tasks;
mod topics;
mod usage;

pub use a2a_push::{A2aPush, PushConfig};
pub use accounts::{
    Accounts, AgentRecord, AgentVersion, ApiToken, Caps, GroupRecord, PasswordHolder, TokenHolder,
    TokenScope, TokenSpec, User, UserRole,
};
pub use artifacts::{
    ARTIFACT_ID_PATTERN, ArtifactContent, ArtifactRecord, Artifacts, NewArtifact, new_artifact_id,
    valid_artifact_id,
};
pub use briefs::{
    Artifact, BRIEF_ID_PATTERN, Brief, BriefAction, BriefFilter, BriefHook, BriefKind, BriefNotice,
    BriefPriority, Briefs, Resolution, new_brief_id, valid_brief_id,
};
pub use checkpoint::{Rewound, StepCheckpoint};
pub use devices::{DeviceRecord, Devices};
pub use dialect::Dialect;
pub use error::StoreError;
pub use evals::{EvalRunRecord, Evals};
pub use files::{
    FILE_ID_PATTERN, FileContent, FileRecord, Files, NewFile, new_file_id, valid_file_id,
};
pub use goals::{GoalLogEntry, GoalRecord, GoalSpend, Goals};
pub use grants::{
    GRANT_ID_PATTERN, GrantFilter, GrantRecord, GrantSubject, Grants, NewGrant, valid_grant_id,
};
pub use knowledge::{
    ChunkHit, FileOutcome, IngestJob, IngestState, JobFile, Knowledge, KnowledgeBase,
    KnowledgeFile, KnowledgeJobs, NewChunk, NewJobFile, PendingChunk, VectorIndex, VectorSearch,
};
pub use logins::{LoginClaim, LoginRecord, Logins};
pub use mcp_pins::{McpPin, McpPins, PinChange, PinOwner};
pub use memories::{
    Applied, ExtractionTask, Memories, MemoryCategory, MemoryPool, MemoryRecord, NewMemory,
    text_key,
};
pub use migrate::AppliedMigration;
pub use operation_archive::{ArchiveError, OPERATION_FORMAT, OperationArchive, Renames};
pub use own_mcp::{OwnMcpServer, OwnMcpServers};
pub use own_providers::{OwnProvider, OwnProviders, Resealed, SealedFor, SealedKey, StoredKey};
pub use portable::{ARCHIVE_FORMAT, ArchiveHeader, Imported, Portable, PortableRow};
pub use records::*;
pub use responses::{ResponseRequest, Responses};
pub use retention::{Compacted, Retention, compact_all, delete_stale_topics};
pub use schema::{Migration, Schema};
pub use sessions::{Failures, SessionRecord, Sessions};
pub use sql::{CommitNotices, Counts, Notice, SqlStore, Synchronous, WriterStats, redact};
pub use step_check::{StepCheck, StepCheckFor};
pub use tasks::{Delivery, DeliveryStatus, Handoff, RunTrigger, TaskRow, TaskRun, Tasks};
pub use topics::{
    DeletedTopic, NewTopic, OperationRecords, StoredConversation, TitleSource, TopicFilter,
    TopicRecord, Topics, new_topic_id,
};
pub use usage::{ReplaySpend, Usage, UsageBy, UsageRow, Whose};

/// What the scheduler needs of a store: tasks with their deliveries and runs, and the briefs
/// their runs give.
pub trait TaskStore: Tasks + Briefs {}

impl<T: Tasks + Briefs + ?Sized> TaskStore for T {}

use futures::future::BoxFuture;
use rein_core::document::{Document, DocumentKind};
use rein_core::{AgentEvent, AgentState, Message, MessageId, OperationId};

/// Durable storage for operations (and the briefs they raise). Every method is one
/// transaction.
pub trait Store:
    Briefs
    + Topics
    + Knowledge
    + KnowledgeJobs
    + Memories
    + Grants
    + Logins
    + Sessions
    + OwnProviders
    + OwnMcpServers
    + McpPins
    + Files
    + Artifacts
    + Responses
    + Goals
    + Usage
    + Portable
    + Evals
    + Send
    + Sync
{
    /// Persist a new operation with its first messages, before anything runs; under its
    /// [`TopicGate`] it is queued behind (or refused by, `TopicBusy`) another operation of its
    /// conversation that is running, parked or queued, decided in the same transaction.
    fn create_operation<'a>(
        &'a self,
        op: &'a NewOperation,
    ) -> BoxFuture<'a, Result<Created, StoreError>>;
    /// The oldest queued operation of `topic` (read under the topic's lock, so one queued just
    /// before is seen).
    fn next_queued<'a>(
        &'a self,
        topic: &'a str,
    ) -> BoxFuture<'a, Result<Option<QueuedOperation>, StoreError>>;
    /// Activate queued operation `op` with its first state as computed now: its messages join
    /// the conversation and it becomes ready, only if it is the oldest queued one of its topic
    /// and nothing else there is idle, running or parked; `false` otherwise.
    fn activate_queued<'a>(
        &'a self,
        op: &'a NewOperation,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// End queued operation `id` with `state` (interrupted, never started) without running it;
    /// `false` when it is no longer queued.
    fn drop_queued<'a>(
        &'a self,
        id: OperationId,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// The operation holding `topic` (idle, running or parked), else its oldest queued one;
    /// never `except`.
    fn topic_holder<'a>(
        &'a self,
        topic: &'a str,
        except: OperationId,
    ) -> BoxFuture<'a, Result<Option<(OperationId, rein_core::state::Status)>, StoreError>>;
    /// Topics whose oldest queued operation could start (nothing else of theirs is idle,
    /// running or parked).
    fn stalled_topics(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;
    /// Operations waiting for a person (not leased by `not_leased_by`) holding a decision
    /// recorded after their last commit: their process stopped before carrying it out.
    fn decided_while_parked<'a>(
        &'a self,
        not_leased_by: &'a str,
    ) -> BoxFuture<'a, Result<Vec<OperationRecord>, StoreError>>;
    /// Commit one step (state, messages, events, tool executions, interventions) atomically.
    fn commit_step<'a>(
        &'a self,
        commit: &'a StepCommit,
    ) -> BoxFuture<'a, Result<CommitOutcome, StoreError>>;
    /// The operation with its state.
    fn load_operation(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<StoredOperation>, StoreError>>;
    /// An operation's record without its state (cheap); `None` when there is no such operation.
    fn operation(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<OperationRecord>, StoreError>>;
    /// Take or renew the lease on running operation `id` for `owner` until `until`; `false`
    /// when another owner holds a lease that has not run out at `now`.
    fn lease_operation<'a>(
        &'a self,
        id: OperationId,
        owner: &'a str,
        until: chrono::DateTime<chrono::Utc>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Claim `id` for a run: take the lease for `admission.node` unless another process holds
    /// a live one (`Busy`), and only within `admission.limits` (else `AtCapacity`), in one
    /// transaction.
    fn claim_operation<'a>(
        &'a self,
        id: OperationId,
        admission: &'a Admission,
    ) -> BoxFuture<'a, Result<Claim, StoreError>>;
    /// Record what running operation `id` is doing (an idle one becomes `running`); ignored
    /// once it is no longer running.
    fn set_activity<'a>(
        &'a self,
        id: OperationId,
        activity: &'a Activity,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Record that a process could not resume `id` (`reason`); recovery tries again at
    /// `retry_at`.
    fn note_recovery_failure<'a>(
        &'a self,
        id: OperationId,
        reason: &'a str,
        retry_at: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Forget a recovery failure (the operation runs again).
    fn clear_recovery(&self, id: OperationId) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Give up `owner`'s lease on `id`.
    fn release_operation<'a>(
        &'a self,
        id: OperationId,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// An operation's status alone (no state is read); `None` when there is no such operation.
    fn operation_status(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Option<rein_core::state::Status>, StoreError>>;
    /// Operations matching `filter`, newest first.
    fn list_operations<'a>(
        &'a self,
        filter: &'a OperationFilter,
    ) -> BoxFuture<'a, Result<Vec<OperationRecord>, StoreError>>;
    /// The step timeline.
    fn steps(&self, id: OperationId) -> BoxFuture<'_, Result<Vec<StepRecord>, StoreError>>;
    /// The whole state operation `id` had right after its committed step `step_index` (0:
    /// the state it started with), messages with their bodies as they were then, tool
    /// manifests, next context; rebuilt from the latest state and the later steps' undo
    /// records.
    fn state_at(
        &self,
        id: OperationId,
        step_index: u64,
    ) -> BoxFuture<'_, Result<Rewound, StoreError>>;
    /// Events with `seq > after`, in order.
    fn events(
        &self,
        id: OperationId,
        after: Option<u64>,
    ) -> BoxFuture<'_, Result<Vec<AgentEvent>, StoreError>>;
    /// The messages of a topic's own conversation (not its sub-agents' threads), oldest first.
    fn topic_messages<'a>(
        &'a self,
        topic_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>>;
    /// A sub-agent's thread: its messages, oldest first.
    fn thread_messages<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, StoreError>>;
    /// The threads of a topic (one per sub-agent), oldest first.
    fn threads<'a>(&'a self, topic_id: &'a str) -> BoxFuture<'a, Result<Vec<Thread>, StoreError>>;
    /// Whether a message exists.
    fn message_exists(&self, id: MessageId) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Delete a message (it stays referenced by nothing; children keep their parent id).
    fn delete_message(&self, id: MessageId) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Record (insert or update) a tool execution outside a step commit, so "running" is on
    /// disk before the tool's side effects start.
    fn record_tool_execution<'a>(
        &'a self,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// One tool execution.
    fn tool_execution<'a>(
        &'a self,
        id: OperationId,
        tool_call_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ToolExecution>, StoreError>>;
    /// The operation's interventions.
    fn interventions(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<Vec<Intervention>, StoreError>>;
    /// Decide a pending intervention; a second decision on the same call fails.
    fn decide_intervention<'a>(
        &'a self,
        id: OperationId,
        tool_call_id: &'a str,
        status: InterventionStatus,
        decided_by: Option<&'a str>,
        reason: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Ask the process running the operation to stop at its next boundary.
    fn request_cancel(&self, id: OperationId) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Which of `ids` have a cancel request ([`Store::request_cancel`]): what a process polls
    /// for all the runs it drives at once.
    fn cancels_requested<'a>(
        &'a self,
        ids: &'a [OperationId],
    ) -> BoxFuture<'a, Result<Vec<OperationId>, StoreError>>;
    /// What a run reads before each step, in one round trip: its cancel request, the grants
    /// that apply to it and whether the message its model call answers still exists.
    fn step_check<'a>(
        &'a self,
        what: &'a StepCheckFor<'a>,
    ) -> BoxFuture<'a, Result<StepCheck, StoreError>>;
    /// Insert or replace a document (memory or note).
    fn put_document<'a>(&'a self, doc: &'a Document) -> BoxFuture<'a, Result<(), StoreError>>;
    /// One document.
    fn get_document<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Document>, StoreError>>;
    /// The scope's documents of `kind`, newest first, at most `limit`.
    fn list_documents<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Document>, StoreError>>;
    /// Delete a document; whether it existed.
    fn delete_document<'a>(
        &'a self,
        kind: DocumentKind,
        scope: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
