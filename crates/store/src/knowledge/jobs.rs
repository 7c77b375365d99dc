//! Ingestion jobs: what is to be added to a knowledge base, recorded before any of it is read,
//! so an ingestion that stops (a crash, a kill, a restart) is finished by whoever resumes it.
//! Each file's entry is marked done in the transaction that writes the file
//! ([`super::Knowledge::put_knowledge_file`]), so a resumed job picks up exactly the files not
//! yet written; embedding the chunks is the job's last phase, resumable the same way (a chunk
//! without a vector is still to do).
//! The SQL behind [`KnowledgeJobs`] is `sql/knowledge_jobs.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Where an ingestion job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IngestState {
    /// Files or embeddings are still to do (also a job whose process stopped: resume it).
    Running,
    /// Every file written and every chunk embedded.
    Done,
    /// It stopped on an error (`error` says which); resuming it tries again.
    Failed,
}

/// An ingestion job and how far it got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IngestJob {
    /// Id (`kj_` and a UUID).
    pub id: String,
    /// The knowledge base.
    pub kb_id: String,
    /// Where it is.
    pub state: IngestState,
    /// The most a chunk holds, in estimated tokens.
    pub chunk_tokens: u64,
    /// What consecutive chunks share, in estimated tokens.
    pub overlap_tokens: u64,
    /// Files recorded.
    pub files: u64,
    /// Files written (or found unchanged, or skipped).
    pub files_done: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// Recorded.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// A file to record in a job: read from `source` (a path on the ingesting machine) or
/// `content` (uploaded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJobFile {
    /// Its name in the knowledge base (what citations show).
    pub path: String,
    /// Where to read it.
    pub source: Option<String>,
    /// Its bytes.
    pub content: Option<Vec<u8>>,
}

/// What ingesting one file of a job did. Stored as its text (`3 chunks`, `unchanged`,
/// `skipped: why`) and read back from it, so every reader sees the same three cases; the API
/// shows it as JSON (`{"indexed": {"chunks": 3}}`, `"unchanged"`, `{"skipped": "why"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileOutcome {
    /// Parsed and written as this many chunks.
    Indexed {
        /// How many.
        chunks: u64,
    },
    /// The base already had this content; nothing was written.
    Unchanged,
    /// Not indexed, for this reason (a binary file, too large, a broken PDF…).
    Skipped(String),
}

impl std::fmt::Display for FileOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Indexed { chunks: 1 } => f.write_str("1 chunk"),
            Self::Indexed { chunks } => write!(f, "{chunks} chunks"),
            Self::Unchanged => f.write_str("unchanged"),
            Self::Skipped(why) => write!(f, "skipped: {why}"),
        }
    }
}

impl FileOutcome {
    /// The outcome a stored text says (`1 chunks`, as earlier versions wrote it, included).
    pub(crate) fn parse(text: &str) -> Result<Self, StoreError> {
        if text == "unchanged" {
            return Ok(Self::Unchanged);
        }
        if let Some(why) = text.strip_prefix("skipped: ") {
            return Ok(Self::Skipped(why.to_owned()));
        }
        text.strip_suffix(" chunks")
            .or_else(|| text.strip_suffix(" chunk"))
            .and_then(|n| n.parse().ok())
            .map(|chunks| Self::Indexed { chunks })
            .ok_or_else(|| StoreError::corrupt("ingestion outcome", format!("`{text}`")))
    }
}

/// A file of a job, with how it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFile {
    /// Its place in the job.
    pub seq: u64,
    /// Its name in the knowledge base.
    pub path: String,
    /// Where to read it.
    pub source: Option<String>,
    /// Its bytes.
    pub content: Option<Vec<u8>>,
    /// `None`: still to do; else what happened.
    pub outcome: Option<FileOutcome>,
}

/// Ingestion jobs. Every method is one transaction.
pub trait KnowledgeJobs: Send + Sync {
    /// Record a job over `files` for `kb`, running.
    fn create_ingest_job<'a>(
        &'a self,
        kb: &'a str,
        chunk_tokens: u64,
        overlap_tokens: u64,
        files: &'a [NewJobFile],
    ) -> BoxFuture<'a, Result<IngestJob, StoreError>>;
    /// A job.
    fn ingest_job<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<IngestJob>, StoreError>>;
    /// The jobs of `kb`, newest first (only those not done with `unfinished_only`: running,
    /// or stopped by their process, or failed).
    fn ingest_jobs<'a>(
        &'a self,
        kb: &'a str,
        unfinished_only: bool,
    ) -> BoxFuture<'a, Result<Vec<IngestJob>, StoreError>>;
    /// Jobs of any base still running (recorded, or stopped with their process), oldest first,
    /// at most `limit`: what a server's ingester picks up.
    fn running_ingest_jobs<'a>(
        &'a self,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<IngestJob>, StoreError>>;
    /// The files of a job still to do, in order (with their content).
    fn pending_job_files<'a>(
        &'a self,
        job: &'a str,
    ) -> BoxFuture<'a, Result<Vec<JobFile>, StoreError>>;
    /// The files of a job with their outcomes (without their content).
    fn job_files<'a>(&'a self, job: &'a str) -> BoxFuture<'a, Result<Vec<JobFile>, StoreError>>;
    /// Mark a file done without writing it (its content is unchanged, or it could not be
    /// read), saying so in `outcome`.
    fn finish_job_file<'a>(
        &'a self,
        job: &'a str,
        seq: u64,
        outcome: &'a FileOutcome,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Set a job's state (and error; uploaded contents are dropped once it is done).
    fn set_ingest_state<'a>(
        &'a self,
        job: &'a str,
        state: IngestState,
        error: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}
