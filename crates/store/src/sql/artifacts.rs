//! [`Artifacts`] in SQL on both backends: the artifact's row (kept once per call and name),
//! then its bytes in `file_blobs` if its owner has none with that digest, in one transaction
//! (instants as microseconds).

use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::artifacts::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

const COLUMNS: &str = "a.id, a.topic_id, a.operation_id, a.tool_call_id, a.name, a.media_type, a.size, a.sha256, a.created_at";

fn record(row: &AnyRow) -> Result<ArtifactRecord, StoreError> {
    let size: i64 = row.try_get("size")?;
    Ok(ArtifactRecord {
        id: row.try_get("id")?,
        topic_id: row.try_get("topic_id")?,
        operation_id: row.try_get("operation_id")?,
        tool_call_id: row.try_get("tool_call_id")?,
        name: row.try_get("name")?,
        media_type: row.try_get("media_type")?,
        size: u64::try_from(size).map_err(|e| StoreError::corrupt("artifact size", e))?,
        sha256: row.try_get("sha256")?,
        created_at: from_micros(row.try_get("created_at")?, "artifact created_at")?,
    })
}

impl Artifacts for SqlStore {
    fn put_artifact<'a>(
        &'a self,
        owner: &'a str,
        file: NewArtifact<'a>,
    ) -> BoxFuture<'a, Result<ArtifactRecord, StoreError>> {
        async move {
            let sha256: String = Sha256::digest(file.content)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let operation = file.operation_id.to_string();
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO artifacts (id, owner, topic_id, operation_id, tool_call_id, name, \
                 media_type, size, sha256, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 ON CONFLICT (operation_id, tool_call_id, name) DO NOTHING",
            )
            .bind(new_artifact_id())
            .bind(owner)
            .bind(file.topic_id)
            .bind(&operation)
            .bind(file.tool_call_id)
            .bind(file.name)
            .bind(file.media_type)
            .bind(file.content.len() as i64)
            .bind(&sha256)
            .bind(micros(chrono::Utc::now()))
            .execute(&mut *tx)
            .await?;
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM artifacts a \
                 WHERE a.operation_id = $1 AND a.tool_call_id = $2 AND a.name = $3"
            )))
            .bind(&operation)
            .bind(file.tool_call_id)
            .bind(file.name)
            .fetch_one(&mut *tx)
            .await?;
            let kept = record(&row)?;
            // The first keeping of this call's file decides its bytes.
            if kept.sha256 == sha256 {
                sqlx::query(
                    "INSERT INTO file_blobs (owner, sha256, content) VALUES ($1, $2, $3) \
                     ON CONFLICT (owner, sha256) DO NOTHING",
                )
                .bind(owner)
                .bind(&sha256)
                .bind(file.content.to_vec())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(kept)
        }
        .boxed()
    }

    fn artifacts<'a>(
        &'a self,
        owner: &'a str,
        topic: Option<&'a str>,
        operation: Option<&'a str>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ArtifactRecord>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM artifacts a WHERE a.owner = $1 \
                 AND ($2 IS NULL OR a.topic_id = $2) AND ($3 IS NULL OR a.operation_id = $3) \
                 ORDER BY a.created_at DESC, a.id DESC LIMIT $4"
            )))
            .bind(owner)
            .bind(topic)
            .bind(operation)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(record)
            .collect()
        }
        .boxed()
    }

    fn artifact<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ArtifactRecord>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM artifacts a WHERE a.owner = $1 AND a.id = $2"
            )))
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

    fn artifact_content<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ArtifactContent>, StoreError>> {
        async move {
            let Some(row) = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS}, b.content FROM artifacts a \
                 JOIN file_blobs b ON b.owner = a.owner AND b.sha256 = a.sha256 \
                 WHERE a.owner = $1 AND a.id = $2"
            )))
            .bind(owner)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            else {
                return Ok(None);
            };
            Ok(Some(ArtifactContent {
                record: record(&row)?,
                bytes: row.try_get("content")?,
            }))
        }
        .boxed()
    }
}
