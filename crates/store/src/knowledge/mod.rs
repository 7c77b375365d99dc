//! Knowledge bases: files cut into chunks, searched by full text (SQLite's FTS5 with BM25,
//! PostgreSQL's `tsvector` with `ts_rank`) and by meaning (each base's embedding model's
//! vectors, in the in-process [`index`]). A file is written whole: its chunks are replaced in
//! the transaction that records its content hash (or why it was skipped) and marks its
//! ingestion job's entry done, so a search never sees half a file, a resumed job never writes
//! a file twice, and adding a file whose hash is unchanged needs no write at all. A chunk's
//! vector is written only while the file still has the content it was embedded from.
//! The SQL behind [`Knowledge`] is `sql/knowledge.rs`.

pub(crate) mod index;
pub(crate) mod jobs;
pub(crate) mod pgvector;

pub use jobs::{FileOutcome, IngestJob, IngestState, JobFile, KnowledgeJobs, NewJobFile};
pub use pgvector::{VectorIndex, VectorSearch};

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// A knowledge base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KnowledgeBase {
    /// Id (`kb_` and a UUID).
    pub id: String,
    /// Its user (`None`: the local CLI's).
    pub owner: Option<String>,
    /// Name, unique per user.
    pub name: String,
    /// The model its chunks are embedded with (`provider/model`); `None`: full-text search
    /// only.
    pub embed_model: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
}

/// A file of a knowledge base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KnowledgeFile {
    /// Its path as added.
    pub path: String,
    /// The hash of the content indexed (or skipped).
    pub content_hash: String,
    /// How many chunks it has.
    pub chunks: u64,
    /// Why it is not indexed.
    pub skipped: Option<String>,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
}

/// A chunk to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewChunk {
    /// The headings it sits under.
    pub headings: Vec<String>,
    /// Its first line in the file (1-based).
    pub line_start: u64,
    /// Its last line.
    pub line_end: u64,
    /// Its text.
    pub text: String,
}

/// A chunk a search found, with where it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChunkHit {
    /// The file.
    pub path: String,
    /// Its position among the file's chunks.
    pub ordinal: u64,
    /// The headings it sits under.
    pub headings: Vec<String>,
    /// Its first line (1-based).
    pub line_start: u64,
    /// Its last line.
    pub line_end: u64,
    /// Its text.
    pub text: String,
    /// How well it matches (higher is better; comparable within one search).
    pub score: f64,
}

/// A chunk that has no vector for its base's embedding model yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingChunk {
    /// The file.
    pub path: String,
    /// Its position among the file's chunks.
    pub ordinal: u64,
    /// The hash of the file content it was cut from.
    pub content_hash: String,
    /// Its text (what is embedded).
    pub text: String,
}

/// Knowledge bases, their files and chunks. Every method is one transaction.
pub trait Knowledge: Send + Sync {
    /// Create a knowledge base; [`StoreError::Conflict`] when the user has one of that name.
    fn create_knowledge_base<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<KnowledgeBase, StoreError>>;
    /// A user's knowledge base by name.
    fn knowledge_base<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<KnowledgeBase>, StoreError>>;
    /// A knowledge base by id.
    fn knowledge_base_by_id<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<KnowledgeBase>, StoreError>>;
    /// A user's knowledge bases by name.
    fn list_knowledge_bases<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<KnowledgeBase>, StoreError>>;
    /// Delete a knowledge base with its files and chunks; whether it existed.
    fn delete_knowledge_base<'a>(&'a self, kb: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// A file of a knowledge base.
    fn knowledge_file<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Option<KnowledgeFile>, StoreError>>;
    /// The files of a knowledge base by path.
    fn knowledge_files<'a>(
        &'a self,
        kb: &'a str,
    ) -> BoxFuture<'a, Result<Vec<KnowledgeFile>, StoreError>>;
    /// Write a file whole: its hash and chunks (replacing what it had, vectors included), or
    /// why it is skipped; and mark `job_file` (an ingestion job's entry) done with it.
    fn put_knowledge_file<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
        content_hash: &'a str,
        chunks: &'a [NewChunk],
        skipped: Option<&'a str>,
        job_file: Option<(&'a str, u64)>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Remove a file and its chunks; whether it was there.
    fn remove_knowledge_file<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// The chunks of `kb` that match `query` best, at most `limit`.
    fn search_knowledge<'a>(
        &'a self,
        kb: &'a str,
        query: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ChunkHit>, StoreError>>;
    /// The chunk of `kb`'s file `path` that holds line `line` (the first, where chunks
    /// overlap): what a citation `[path:line]` points at.
    fn chunk_at<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
        line: u64,
    ) -> BoxFuture<'a, Result<Option<ChunkHit>, StoreError>>;
    /// Set (or clear) the embedding model of `kb`: the vectors of any other model are deleted,
    /// so every chunk is embedded again. Setting the model it has changes nothing.
    fn set_embed_model<'a>(
        &'a self,
        kb: &'a str,
        model: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Up to `limit` chunks of `kb` without a vector of `model`, in file order, after the
    /// chunk `after` (`(path, ordinal)`; `None`: from the start). Walking with the last one
    /// returned reads each chunk once however large the base.
    fn pending_embeddings<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
        after: Option<(&'a str, u64)>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<PendingChunk>, StoreError>>;
    /// Store the vectors of `model` for chunks (one transaction); a chunk whose file changed
    /// since it was read (another content hash) is passed over. How many were stored.
    fn put_knowledge_vectors<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
        vectors: &'a [(PendingChunk, Vec<f32>)],
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// `(embedded, chunks)`: how many of `kb`'s chunks have a vector of `model`, of all.
    fn embedding_counts<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
    ) -> BoxFuture<'a, Result<(u64, u64), StoreError>>;
    /// The chunks of `kb` whose `model` vectors are closest to `query` (cosine similarity as
    /// the score), at most `limit`.
    fn search_knowledge_vectors<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
        query: &'a [f32],
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ChunkHit>, StoreError>>;
}
