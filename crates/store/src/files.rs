//! Files users upload to send with a message: each upload a [`FileRecord`] (its id, the name
//! it was sent with, the media type sniffed from its content, its size), its bytes kept once
//! per owner and content (SHA-256) and shared by that owner's uploads of the same bytes. A
//! file is only ever read by its owner: every method takes the owner, and another owner's id
//! reads as none. The SQL behind [`Files`] is `sql/files.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Ids of uploaded files: `file-` and 32 lower-case hex digits.
pub const FILE_ID_PATTERN: &str = "^file-[0-9a-f]{32}$";

/// A new file id.
pub fn new_file_id() -> String {
    format!("file-{}", uuid::Uuid::now_v7().simple())
}

/// Whether `id` is a file id ([`FILE_ID_PATTERN`]).
pub fn valid_file_id(id: &str) -> bool {
    prefixed_hex_id(id, "file-")
}

/// Whether `id` is `prefix` and 32 lower-case hex digits (uploads' and artifacts' ids).
pub(crate) fn prefixed_hex_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// One uploaded file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Its id ([`FILE_ID_PATTERN`]).
    pub id: String,
    /// The name it was sent with.
    pub name: String,
    /// Its media type, from its content (`image/png`, `text/csv`, ...).
    pub media_type: String,
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256 of its bytes, lower-case hex.
    pub sha256: String,
    /// When it was uploaded.
    pub created_at: DateTime<Utc>,
}

/// A file with its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileContent {
    /// The file.
    pub record: FileRecord,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A file to keep.
#[derive(Clone, Copy, Debug)]
pub struct NewFile<'a> {
    /// The name it was sent with.
    pub name: &'a str,
    /// Its media type.
    pub media_type: &'a str,
    /// Its bytes.
    pub content: &'a [u8],
}

/// Uploaded files. [`Files::put_file`] and [`Files::delete_file`] are one transaction each.
pub trait Files {
    /// Keep `file` as `owner`'s (its bytes stored unless that owner has them already).
    fn put_file<'a>(
        &'a self,
        owner: &'a str,
        file: NewFile<'a>,
    ) -> BoxFuture<'a, Result<FileRecord, StoreError>>;

    /// `owner`'s files, newest first, at most `limit`.
    fn files<'a>(
        &'a self,
        owner: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<FileRecord>, StoreError>>;

    /// `owner`'s file `id` (none: no such file of theirs).
    fn file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<FileRecord>, StoreError>>;

    /// `owner`'s file `id` with its bytes.
    fn file_content<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<FileContent>, StoreError>>;

    /// Delete `owner`'s file `id` (its bytes with the last upload of them); whether it was
    /// there.
    fn delete_file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
