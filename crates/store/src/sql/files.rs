//! [`Files`] in SQL on both backends: an upload's row first, then its bytes if its owner has
//! none with that digest, in one transaction; a delete removes the bytes only when no other
//! upload or artifact of theirs has them (instants as microseconds).

use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::files::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

fn record(row: &AnyRow) -> Result<FileRecord, StoreError> {
    let size: i64 = row.try_get("size")?;
    Ok(FileRecord {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        media_type: row.try_get("media_type")?,
        size: u64::try_from(size).map_err(|e| StoreError::corrupt("file size", e))?,
        sha256: row.try_get("sha256")?,
        created_at: from_micros(row.try_get("created_at")?, "file created_at")?,
    })
}

impl Files for SqlStore {
    fn put_file<'a>(
        &'a self,
        owner: &'a str,
        file: NewFile<'a>,
    ) -> BoxFuture<'a, Result<FileRecord, StoreError>> {
        async move {
            let record = FileRecord {
                id: new_file_id(),
                name: file.name.to_owned(),
                media_type: file.media_type.to_owned(),
                size: file.content.len() as u64,
                sha256: Sha256::digest(file.content)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
                created_at: chrono::Utc::now(),
            };
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO files (id, owner, sha256, name, media_type, size, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&record.id)
            .bind(owner)
            .bind(&record.sha256)
            .bind(&record.name)
            .bind(&record.media_type)
            .bind(record.size as i64)
            .bind(micros(record.created_at))
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO file_blobs (owner, sha256, content) VALUES ($1, $2, $3) \
                 ON CONFLICT (owner, sha256) DO NOTHING",
            )
            .bind(owner)
            .bind(&record.sha256)
            .bind(file.content.to_vec())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(record)
        }
        .boxed()
    }

    fn files<'a>(
        &'a self,
        owner: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<FileRecord>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT id, name, media_type, size, sha256, created_at FROM files \
                 WHERE owner = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
            )
            .bind(owner)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(record)
            .collect()
        }
        .boxed()
    }

    fn file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<FileRecord>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT id, name, media_type, size, sha256, created_at FROM files \
                 WHERE owner = $1 AND id = $2",
            )
            .bind(owner)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(record)
            .transpose()
        }
        .boxed()
    }

    fn file_content<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<FileContent>, StoreError>> {
        async move {
            let Some(row) = sqlx::query(
                "SELECT f.id, f.name, f.media_type, f.size, f.sha256, f.created_at, b.content \
                 FROM files f JOIN file_blobs b ON b.owner = f.owner AND b.sha256 = f.sha256 \
                 WHERE f.owner = $1 AND f.id = $2",
            )
            .bind(owner)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            else {
                return Ok(None);
            };
            Ok(Some(FileContent {
                record: record(&row)?,
                bytes: row.try_get("content")?,
            }))
        }
        .boxed()
    }

    fn delete_file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let Some(sha256) = sqlx::query_scalar::<_, String>(
                "DELETE FROM files WHERE owner = $1 AND id = $2 RETURNING sha256",
            )
            .bind(owner)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            else {
                return Ok(false);
            };
            sqlx::query(
                "DELETE FROM file_blobs WHERE owner = $1 AND sha256 = $2 AND NOT EXISTS \
                 (SELECT 1 FROM files WHERE owner = $1 AND sha256 = $2) AND NOT EXISTS \
                 (SELECT 1 FROM artifacts WHERE owner = $1 AND sha256 = $2)",
            )
            .bind(owner)
            .bind(&sha256)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(true)
        }
        .boxed()
    }
}
