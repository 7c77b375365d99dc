//! [`KnowledgeJobs`] in SQL on both backends: rows mapped to `crate::knowledge::jobs`'s records.

use super::{SqlStore, enum_from, enum_str, parse_ts, ts};
use crate::StoreError;
use crate::knowledge::jobs::*;
use chrono::Utc;
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;
/// Mark a job's file done inside a transaction writing it.
pub(crate) async fn finish_file(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    job: &str,
    seq: u64,
    outcome: &FileOutcome,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE knowledge_job_files SET outcome = $1 WHERE job_id = $2 AND seq = $3")
        .bind(outcome.to_string())
        .bind(job)
        .bind(crate::sql::i64_of(seq))
        .execute(&mut **tx)
        .await?;
    sqlx::query("UPDATE knowledge_jobs SET updated_at = $1 WHERE id = $2")
        .bind(ts(Utc::now()))
        .bind(job)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

const JOB_COLUMNS: &str = "j.id AS id, j.kb_id AS kb_id, j.state AS state, \
     j.chunk_tokens AS chunk_tokens, j.overlap_tokens AS overlap_tokens, j.error AS error, \
     j.created_at AS created_at, j.updated_at AS updated_at, \
     (SELECT COUNT(*) FROM knowledge_job_files f WHERE f.job_id = j.id) AS files, \
     (SELECT COUNT(*) FROM knowledge_job_files f WHERE f.job_id = j.id \
      AND f.outcome IS NOT NULL) AS files_done";

fn job_from(row: &AnyRow) -> Result<IngestJob, StoreError> {
    let n = |col: &str| -> Result<u64, StoreError> {
        Ok(crate::sql::u64_of(row.try_get::<i64, _>(col)?))
    };
    Ok(IngestJob {
        id: row.try_get("id")?,
        kb_id: row.try_get("kb_id")?,
        state: enum_from(&row.try_get::<String, _>("state")?, "ingest job state")?,
        chunk_tokens: n("chunk_tokens")?,
        overlap_tokens: n("overlap_tokens")?,
        files: n("files")?,
        files_done: n("files_done")?,
        error: row.try_get("error")?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "job created_at")?,
        updated_at: parse_ts(&row.try_get::<String, _>("updated_at")?, "job updated_at")?,
    })
}

fn file_from(row: &AnyRow, with_content: bool) -> Result<JobFile, StoreError> {
    Ok(JobFile {
        seq: crate::sql::u64_of(row.try_get::<i64, _>("seq")?),
        path: row.try_get("path")?,
        source: row.try_get("source")?,
        content: if with_content {
            row.try_get("content")?
        } else {
            None
        },
        outcome: row
            .try_get::<Option<String>, _>("outcome")?
            .map(|o| FileOutcome::parse(&o))
            .transpose()?,
    })
}

impl KnowledgeJobs for SqlStore {
    fn create_ingest_job<'a>(
        &'a self,
        kb: &'a str,
        chunk_tokens: u64,
        overlap_tokens: u64,
        files: &'a [NewJobFile],
    ) -> BoxFuture<'a, Result<IngestJob, StoreError>> {
        async move {
            let id = format!("kj_{}", uuid::Uuid::now_v7().simple());
            let now = ts(Utc::now());
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO knowledge_jobs (id, kb_id, state, chunk_tokens, overlap_tokens, \
                 error, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, NULL, $6, $6)",
            )
            .bind(&id)
            .bind(kb)
            .bind(enum_str(&IngestState::Running))
            .bind(crate::sql::i64_of(chunk_tokens))
            .bind(crate::sql::i64_of(overlap_tokens))
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            for (seq, f) in files.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO knowledge_job_files (job_id, seq, path, source, content, outcome) \
                     VALUES ($1, $2, $3, $4, $5, NULL)",
                )
                .bind(&id)
                .bind(crate::sql::i64_of(seq as u64))
                .bind(&f.path)
                .bind(f.source.as_deref())
                .bind(f.content.as_deref())
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            self.ingest_job(&id)
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("ingest job {id}")))
        }
        .boxed()
    }

    fn ingest_job<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<IngestJob>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {JOB_COLUMNS} FROM knowledge_jobs j WHERE j.id = $1"
            )))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(job_from)
            .transpose()
        }
        .boxed()
    }

    fn ingest_jobs<'a>(
        &'a self,
        kb: &'a str,
        unfinished_only: bool,
    ) -> BoxFuture<'a, Result<Vec<IngestJob>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {JOB_COLUMNS} FROM knowledge_jobs j WHERE j.kb_id = $1 \
                 AND ($2 = 0 OR j.state <> 'done') ORDER BY j.id DESC"
            )))
            .bind(kb)
            .bind(i64::from(unfinished_only))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(job_from)
            .collect()
        }
        .boxed()
    }

    fn running_ingest_jobs<'a>(
        &'a self,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<IngestJob>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {JOB_COLUMNS} FROM knowledge_jobs j WHERE j.state = 'running' \
                 ORDER BY j.id LIMIT $1"
            )))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(job_from)
            .collect()
        }
        .boxed()
    }

    fn pending_job_files<'a>(
        &'a self,
        job: &'a str,
    ) -> BoxFuture<'a, Result<Vec<JobFile>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT seq, path, source, content, outcome FROM knowledge_job_files \
                 WHERE job_id = $1 AND outcome IS NULL ORDER BY seq",
            )
            .bind(job)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| file_from(r, true))
            .collect()
        }
        .boxed()
    }

    fn job_files<'a>(&'a self, job: &'a str) -> BoxFuture<'a, Result<Vec<JobFile>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT seq, path, source, outcome FROM knowledge_job_files \
                 WHERE job_id = $1 ORDER BY seq",
            )
            .bind(job)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| file_from(r, false))
            .collect()
        }
        .boxed()
    }

    fn finish_job_file<'a>(
        &'a self,
        job: &'a str,
        seq: u64,
        outcome: &'a FileOutcome,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            finish_file(&mut tx, job, seq, outcome).await?;
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn set_ingest_state<'a>(
        &'a self,
        job: &'a str,
        state: IngestState,
        error: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "UPDATE knowledge_jobs SET state = $1, error = $2, updated_at = $3 WHERE id = $4",
            )
            .bind(enum_str(&state))
            .bind(error)
            .bind(ts(Utc::now()))
            .bind(job)
            .execute(&mut *tx)
            .await?;
            if state == IngestState::Done {
                sqlx::query("UPDATE knowledge_job_files SET content = NULL WHERE job_id = $1")
                    .bind(job)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            if state == IngestState::Done
                && let Some(p) = &self.pgvector
            {
                p.refresh_statistics(&self.pool).await;
            }
            Ok(())
        }
        .boxed()
    }
}
