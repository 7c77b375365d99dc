//! Files tool calls produced (an interpreter's plot, a generated image, a report): each an
//! [`ArtifactRecord`] of its owner's conversation, attached to the call that made it
//! (`operation_id`, `tool_call_id`), its bytes kept once per owner and content (SHA-256) in the
//! same place as uploads' ([`crate::Files`]). An artifact is only ever read by its owner:
//! every method takes the owner, and another owner's id reads as none. The SQL is
//! `sql/artifacts.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::OperationId;
use serde::{Deserialize, Serialize};

/// Ids of artifacts: `art-` and 32 lower-case hex digits.
pub const ARTIFACT_ID_PATTERN: &str = "^art-[0-9a-f]{32}$";

/// A new artifact id.
pub fn new_artifact_id() -> String {
    format!("art-{}", uuid::Uuid::now_v7().simple())
}

/// Whether `id` is an artifact id ([`ARTIFACT_ID_PATTERN`]).
pub fn valid_artifact_id(id: &str) -> bool {
    crate::files::prefixed_hex_id(id, "art-")
}

/// One file a tool call produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactRecord {
    /// Its id ([`ARTIFACT_ID_PATTERN`]).
    pub id: String,
    /// The conversation it belongs to (none: an operation outside one).
    pub topic_id: Option<String>,
    /// The operation whose call produced it.
    pub operation_id: String,
    /// That call (the tool message answering it carries the file).
    pub tool_call_id: String,
    /// Its name, as the tool named it (a path relative to where it wrote it).
    pub name: String,
    /// Its media type (`image/png`, `text/csv`, ...).
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256 of its bytes, lower-case hex.
    pub sha256: String,
    /// When it was kept.
    pub created_at: DateTime<Utc>,
}

/// An artifact with its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactContent {
    /// The artifact.
    pub record: ArtifactRecord,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A file a call produced, to keep.
#[derive(Clone, Copy, Debug)]
pub struct NewArtifact<'a> {
    /// Its conversation.
    pub topic_id: Option<&'a str>,
    /// The operation.
    pub operation_id: OperationId,
    /// The call.
    pub tool_call_id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its media type.
    pub media_type: &'a str,
    /// Its bytes.
    pub content: &'a [u8],
}

/// Artifacts. [`Artifacts::put_artifact`] is one transaction.
pub trait Artifacts {
    /// Keep `file` as `owner`'s (its bytes stored unless that owner has them already). A call
    /// keeps a file of one name once: keeping it again returns the first record.
    fn put_artifact<'a>(
        &'a self,
        owner: &'a str,
        file: NewArtifact<'a>,
    ) -> BoxFuture<'a, Result<ArtifactRecord, StoreError>>;

    /// `owner`'s artifacts (of conversation `topic`, of operation `operation`, when given),
    /// newest first, at most `limit`.
    fn artifacts<'a>(
        &'a self,
        owner: &'a str,
        topic: Option<&'a str>,
        operation: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ArtifactRecord>, StoreError>>;

    /// `owner`'s artifact `id`, without its bytes (none: no such artifact of theirs).
    fn artifact<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ArtifactRecord>, StoreError>>;

    /// `owner`'s artifact `id` with its bytes (none: no such artifact of theirs).
    fn artifact_content<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ArtifactContent>, StoreError>>;
}
