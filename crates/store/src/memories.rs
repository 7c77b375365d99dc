//! Memories extracted from conversations, per user: what a model proposed about the user (a
//! fact, a preference, an ongoing project) with the message it came from. A memory is shared by
//! the user's agents, or private to the agent whose conversation taught it (an agent with
//! `memory: agent`): each is a pool of its own. Applying proposals is one transaction with the
//! extraction's queue entry: a proposal whose normalised text a current memory of its pool
//! already has is merged into it (only touched), one about a subject a current memory of its
//! pool has with other words replaces it (the old one stays as history, `superseded_by`), one
//! the user forgot (in any pool) is dropped. The queue is every finished top-level operation since the
//! database's memory epoch whose owner has not turned extraction off; a failed extraction is
//! retried later, then given up with its error. Only conversations count: operations started
//! by a person (`rein run`, the API), not task runs or sub-agents.
//! The SQL behind [`Memories`] is `sql/memories.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::document::Embedding;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

rein_core::named_enum! {
    /// What a memory is about.
    pub enum MemoryCategory as "category" {
        /// Something true about the user (where they live, what they do).
        Fact = "fact",
        /// How the user likes things done.
        Preference = "preference",
        /// Something the user is working on.
        Project = "project",
    }
}

/// A stored memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryRecord {
    /// Id (`mem_` and a UUID).
    pub id: String,
    /// Its user (`None`: the local CLI's).
    pub owner: Option<String>,
    /// The agent of the conversation it came from.
    pub agent: Option<String>,
    /// The agent it is private to (`None`: shared by the user's agents).
    pub private_to: Option<String>,
    /// What it is about.
    pub category: MemoryCategory,
    /// The short subject contradictions are found by ("home city", "editor").
    pub subject: String,
    /// The memory, one sentence.
    pub text: String,
    /// The operation it was extracted from.
    pub source_operation: Option<String>,
    /// The message it came from.
    pub source_message: Option<String>,
    /// Its embedding (with an embedding model configured).
    #[serde(skip)]
    #[schemars(skip)]
    pub embedding: Option<Embedding>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last confirmed or edited.
    pub updated_at: DateTime<Utc>,
    /// The memory that replaced it (history), if one did.
    pub superseded_by: Option<String>,
}

/// A memory a model proposed.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMemory {
    /// What it is about.
    pub category: MemoryCategory,
    /// Its subject.
    pub subject: String,
    /// The memory.
    pub text: String,
    /// The message it came from.
    pub source_message: Option<String>,
    /// Its embedding.
    pub embedding: Option<Embedding>,
}

/// A memory with the ones it replaced, newest first.
pub type MemoryWithHistory = (MemoryRecord, Vec<MemoryRecord>);

/// What applying proposals did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// New memories.
    pub added: u64,
    /// Proposals a current memory already said.
    pub merged: u64,
    /// Memories replaced by a contradicting proposal (kept as history).
    pub replaced: u64,
    /// Proposals of something the user forgot.
    pub forgotten: u64,
}

/// Which of a user's memories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryPool<'a> {
    /// Every one, shared or private.
    All,
    /// Those the user's agents share.
    Shared,
    /// Those private to this agent.
    PrivateTo(&'a str),
    /// Those the user's agents share and those private to this agent.
    SharedAnd(&'a str),
}

impl<'a> MemoryPool<'a> {
    /// The pool an agent reads and learns into: its own, or the shared one.
    pub fn of(private_to: Option<&'a str>) -> Self {
        private_to.map_or(Self::Shared, Self::PrivateTo)
    }

    /// What a listing asks for: one agent's (`agent`), the shared ones (`shared`), both, or
    /// (neither) all.
    pub fn select(agent: Option<&'a str>, shared: bool) -> Self {
        match (agent, shared) {
            (None, false) => Self::All,
            (None, true) => Self::Shared,
            (Some(a), false) => Self::PrivateTo(a),
            (Some(a), true) => Self::SharedAnd(a),
        }
    }
}

/// A finished operation to read for memories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtractionTask {
    /// The operation.
    pub operation_id: String,
    /// Its user.
    pub owner: Option<String>,
    /// Its agent.
    pub agent: Option<String>,
    /// Earlier failed attempts.
    pub attempts: u64,
}

/// Memories and their extraction queue. Every method is one transaction.
pub trait Memories: Send + Sync {
    /// Operations to read for memories now (at most `limit`, oldest first).
    fn pending_extractions<'a>(
        &'a self,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ExtractionTask>, StoreError>>;
    /// Apply what was extracted from `task`'s operation to the shared memories, or to those
    /// private to the agent `private_to`, and mark it done.
    fn apply_memories<'a>(
        &'a self,
        task: &'a ExtractionTask,
        private_to: Option<&'a str>,
        proposals: &'a [NewMemory],
    ) -> BoxFuture<'a, Result<Applied, StoreError>>;
    /// Write `memories` as `owner`'s, private to the agent `private_to` (an imported agent's:
    /// `rein agent import`), as extraction writes them (a forgotten text stays forgotten, a
    /// text the pool holds is not written twice, one about the same subject becomes history).
    fn import_memories<'a>(
        &'a self,
        owner: Option<&'a str>,
        private_to: &'a str,
        memories: &'a [NewMemory],
    ) -> BoxFuture<'a, Result<Applied, StoreError>>;
    /// Record a failed extraction: retried at `retry_at`, or given up (`None`).
    fn extraction_failed<'a>(
        &'a self,
        task: &'a ExtractionTask,
        error: &'a str,
        retry_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Whether extraction is on for `owner` (it is unless turned off).
    fn memory_extraction<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Turn extraction on or off for `owner`.
    fn set_memory_extraction<'a>(
        &'a self,
        owner: Option<&'a str>,
        on: bool,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// `owner`'s current memories of `pool`, newest first (with `history`, replaced ones too).
    fn list_memories<'a>(
        &'a self,
        owner: Option<&'a str>,
        pool: MemoryPool<'a>,
        history: bool,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, StoreError>>;
    /// One of `owner`'s memories with the ones it replaced, newest first.
    fn memory<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<MemoryWithHistory>, StoreError>>;
    /// Change a current memory's text (its embedding is dropped); whether it was there.
    fn edit_memory<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
        text: &'a str,
        embedding: Option<&'a Embedding>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Forget a memory and its history: only the hash of each text is kept, so the same fact
    /// is not extracted again. Whether it was there.
    fn forget_memory<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// What two texts that say the same thing share: lowercase words, single spaces, no final
/// punctuation, hashed (a forgotten text is kept only as this).
pub fn text_key(text: &str) -> String {
    let normal: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    Sha256::digest(normal.join(" ").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
