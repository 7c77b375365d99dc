//! [`Knowledge`] in SQL on both backends: rows mapped to `crate::knowledge`'s records.

use super::{SqlStore, parse_ts, ts};
use crate::knowledge::*;
use crate::{Dialect, StoreError};
use chrono::{SubsecRound, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;
/// The words of a query, as the full-text index sees them (at most 32).
fn terms(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .take(32)
        .collect()
}

fn kb_from(row: &AnyRow) -> Result<KnowledgeBase, StoreError> {
    Ok(KnowledgeBase {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        name: row.try_get("name")?,
        embed_model: row.try_get("embed_model")?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "kb created_at")?,
    })
}

fn file_from(row: &AnyRow) -> Result<KnowledgeFile, StoreError> {
    Ok(KnowledgeFile {
        path: row.try_get("path")?,
        content_hash: row.try_get("content_hash")?,
        chunks: u64::try_from(row.try_get::<i64, _>("chunks")?).unwrap_or_default(),
        skipped: row.try_get("skipped")?,
        updated_at: parse_ts(&row.try_get::<String, _>("updated_at")?, "file updated_at")?,
    })
}

pub(crate) fn hit_from(row: &AnyRow) -> Result<ChunkHit, StoreError> {
    let n = |col: &str| -> Result<u64, StoreError> {
        Ok(u64::try_from(row.try_get::<i64, _>(col)?).unwrap_or_default())
    };
    let headings: String = row.try_get("headings")?;
    Ok(ChunkHit {
        path: row.try_get("path")?,
        ordinal: n("ordinal")?,
        headings: serde_json::from_str(&headings)
            .map_err(|e| StoreError::corrupt("chunk headings", e))?,
        line_start: n("line_start")?,
        line_end: n("line_end")?,
        text: row.try_get("text")?,
        score: row.try_get("score")?,
    })
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Knowledge for SqlStore {
    fn create_knowledge_base<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<KnowledgeBase, StoreError>> {
        async move {
            if self.knowledge_base(owner, name).await?.is_some() {
                return Err(StoreError::Conflict(format!("knowledge base `{name}`")));
            }
            let kb = KnowledgeBase {
                id: format!("kb_{}", uuid::Uuid::now_v7().simple()),
                owner: owner.map(str::to_owned),
                name: name.to_owned(),
                embed_model: None,
                created_at: Utc::now().trunc_subsecs(6),
            };
            sqlx::query(
                "INSERT INTO knowledge_bases (id, owner, name, created_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(&kb.id)
            .bind(kb.owner.clone())
            .bind(&kb.name)
            .bind(ts(kb.created_at))
            .execute(&self.pool)
            .await
            .map_err(|e| match e {
                // Another writer took the name between the check and the insert.
                sqlx::Error::Database(d) if d.is_unique_violation() => {
                    StoreError::Conflict(format!("knowledge base `{name}`"))
                }
                e => e.into(),
            })?;
            Ok(kb)
        }
        .boxed()
    }

    fn knowledge_base<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<KnowledgeBase>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT id, owner, name, embed_model, created_at FROM knowledge_bases \
                 WHERE COALESCE(owner, '') = $1 AND name = $2",
            )
            .bind(owner.unwrap_or_default())
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(kb_from)
            .transpose()
        }
        .boxed()
    }

    fn knowledge_base_by_id<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<KnowledgeBase>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT id, owner, name, embed_model, created_at FROM knowledge_bases WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(kb_from)
            .transpose()
        }
        .boxed()
    }

    fn list_knowledge_bases<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<KnowledgeBase>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT id, owner, name, embed_model, created_at FROM knowledge_bases \
                 WHERE COALESCE(owner, '') = $1 ORDER BY name",
            )
            .bind(owner.unwrap_or_default())
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(kb_from)
            .collect()
        }
        .boxed()
    }

    fn delete_knowledge_base<'a>(&'a self, kb: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            match self.dialect() {
                // SQLite keeps the full text in a table of its own.
                Dialect::Sqlite => {
                    sqlx::query(
                        "DELETE FROM knowledge_fts WHERE rowid IN \
                         (SELECT fts_rowid FROM knowledge_chunks WHERE kb_id = $1)",
                    )
                    .bind(kb)
                    .execute(&mut *tx)
                    .await?;
                }
                Dialect::Postgres => {}
            }
            for stmt in [
                "DELETE FROM knowledge_vectors WHERE kb_id = $1",
                "DELETE FROM knowledge_chunks WHERE kb_id = $1",
                "DELETE FROM knowledge_files WHERE kb_id = $1",
                "DELETE FROM knowledge_job_files WHERE job_id IN \
                 (SELECT id FROM knowledge_jobs WHERE kb_id = $1)",
                "DELETE FROM knowledge_jobs WHERE kb_id = $1",
            ] {
                sqlx::query(stmt).bind(kb).execute(&mut *tx).await?;
            }
            let n = sqlx::query("DELETE FROM knowledge_bases WHERE id = $1")
                .bind(kb)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            self.vector_indexes.forget(kb);
            Ok(n > 0)
        }
        .boxed()
    }

    fn knowledge_file<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Option<KnowledgeFile>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT path, content_hash, chunks, skipped, updated_at FROM knowledge_files \
                 WHERE kb_id = $1 AND path = $2",
            )
            .bind(kb)
            .bind(path)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(file_from)
            .transpose()
        }
        .boxed()
    }

    fn knowledge_files<'a>(
        &'a self,
        kb: &'a str,
    ) -> BoxFuture<'a, Result<Vec<KnowledgeFile>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT path, content_hash, chunks, skipped, updated_at FROM knowledge_files \
                 WHERE kb_id = $1 ORDER BY path",
            )
            .bind(kb)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(file_from)
            .collect()
        }
        .boxed()
    }

    fn put_knowledge_file<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
        content_hash: &'a str,
        chunks: &'a [NewChunk],
        skipped: Option<&'a str>,
        job_file: Option<(&'a str, u64)>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            remove_chunks(&mut tx, self.dialect(), kb, path).await?;
            sqlx::query("DELETE FROM knowledge_files WHERE kb_id = $1 AND path = $2")
                .bind(kb)
                .bind(path)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO knowledge_files (kb_id, path, content_hash, chunks, skipped, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(kb)
            .bind(path)
            .bind(content_hash)
            .bind(int(chunks.len() as u64))
            .bind(skipped)
            .bind(ts(Utc::now()))
            .execute(&mut *tx)
            .await?;
            // Many rows per statement: a file's chunks are written in a few round trips. On
            // SQLite each chunk takes the next full-text rowids (the write lock is held);
            // PostgreSQL indexes the chunk's own text.
            let mut next_fts: Option<i64> = match self.dialect() {
                Dialect::Postgres => None,
                Dialect::Sqlite => Some(
                    sqlx::query_scalar::<_, i64>(
                        "SELECT COALESCE(MAX(rowid), 0) FROM knowledge_fts",
                    )
                    .fetch_one(&mut *tx)
                    .await?
                        + 1,
                ),
            };
            let per = crate::sql::ROWS_PER_STATEMENT / 2;
            for (batch_no, batch) in chunks.chunks(per).enumerate() {
                let first = batch_no * per;
                let columns = if next_fts.is_some() { 8 } else { 7 };
                let sql = format!(
                    "INSERT INTO knowledge_chunks (kb_id, path, ordinal, headings, line_start, \
                     line_end, text{}) VALUES {}",
                    if next_fts.is_some() { ", fts_rowid" } else { "" },
                    crate::sql::placeholders(batch.len(), columns)
                );
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
                for (i, c) in batch.iter().enumerate() {
                    let headings = serde_json::to_string(&c.headings)
                        .map_err(|e| StoreError::corrupt("chunk headings", e))?;
                    q = q
                        .bind(kb)
                        .bind(path)
                        .bind(int((first + i) as u64))
                        .bind(headings)
                        .bind(int(c.line_start))
                        .bind(int(c.line_end))
                        .bind(&c.text);
                    if let Some(fts) = next_fts {
                        q = q.bind(fts + i as i64);
                    }
                }
                q.execute(&mut *tx).await?;
                if let Some(fts) = next_fts {
                    let sql = format!(
                        "INSERT INTO knowledge_fts (rowid, text, kb_id, path, ordinal) VALUES {}",
                        crate::sql::placeholders(batch.len(), 5)
                    );
                    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
                    for (i, c) in batch.iter().enumerate() {
                        q = q
                            .bind(fts + i as i64)
                            .bind(&c.text)
                            .bind(kb)
                            .bind(path)
                            .bind(int((first + i) as u64));
                    }
                    q.execute(&mut *tx).await?;
                    next_fts = Some(fts + batch.len() as i64);
                }
            }
            if let Some((job, seq)) = job_file {
                let outcome = match skipped {
                    Some(why) => FileOutcome::Skipped(why.to_owned()),
                    None => FileOutcome::Indexed {
                        chunks: chunks.len() as u64,
                    },
                };
                super::knowledge_jobs::finish_file(&mut tx, job, seq, &outcome).await?;
            }
            bump(&mut tx, kb).await?;
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn remove_knowledge_file<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            remove_chunks(&mut tx, self.dialect(), kb, path).await?;
            let n = sqlx::query("DELETE FROM knowledge_files WHERE kb_id = $1 AND path = $2")
                .bind(kb)
                .bind(path)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            bump(&mut tx, kb).await?;
            tx.commit().await?;
            Ok(n > 0)
        }
        .boxed()
    }

    fn search_knowledge<'a>(
        &'a self,
        kb: &'a str,
        query: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ChunkHit>, StoreError>> {
        async move {
            let terms = terms(query);
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let rows = match self.dialect() {
                Dialect::Postgres => {
                    sqlx::query(
                        "SELECT path, ordinal, headings, line_start, line_end, text, \
                     CAST(ts_rank(tsv, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
                     FROM knowledge_chunks WHERE kb_id = $2 AND tsv @@ to_tsquery('simple', $1) \
                     ORDER BY score DESC, path, ordinal LIMIT $3",
                    )
                    .bind(terms.join(" | "))
                    .bind(kb)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?
                }
                Dialect::Sqlite => {
                    let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
                    sqlx::query(
                        "SELECT c.path AS path, c.ordinal AS ordinal, c.headings AS headings, \
                     c.line_start AS line_start, c.line_end AS line_end, c.text AS text, \
                     -bm25(knowledge_fts) AS score FROM knowledge_fts \
                     JOIN knowledge_chunks c ON c.kb_id = knowledge_fts.kb_id \
                     AND c.path = knowledge_fts.path AND c.ordinal = knowledge_fts.ordinal \
                     WHERE knowledge_fts MATCH $1 AND knowledge_fts.kb_id = $2 \
                     ORDER BY bm25(knowledge_fts), c.path, c.ordinal LIMIT $3",
                    )
                    .bind(quoted.join(" OR "))
                    .bind(kb)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?
                }
            };
            rows.iter().map(hit_from).collect()
        }
        .boxed()
    }

    fn chunk_at<'a>(
        &'a self,
        kb: &'a str,
        path: &'a str,
        line: u64,
    ) -> BoxFuture<'a, Result<Option<ChunkHit>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT path, ordinal, headings, line_start, line_end, text, \
                 CAST(0 AS DOUBLE PRECISION) AS score FROM knowledge_chunks \
                 WHERE kb_id = $1 AND path = $2 AND line_start <= $3 AND line_end >= $3 \
                 ORDER BY ordinal LIMIT 1",
            )
            .bind(kb)
            .bind(path)
            .bind(int(line))
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(hit_from)
            .transpose()
        }
        .boxed()
    }

    fn set_embed_model<'a>(
        &'a self,
        kb: &'a str,
        model: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let current: Option<Option<String>> =
                sqlx::query_scalar("SELECT embed_model FROM knowledge_bases WHERE id = $1")
                    .bind(kb)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(current) = current else {
                return Err(StoreError::NotFound(format!("knowledge base {kb}")));
            };
            if current.as_deref() == model {
                return Ok(());
            }
            sqlx::query("UPDATE knowledge_bases SET embed_model = $1 WHERE id = $2")
                .bind(model)
                .bind(kb)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM knowledge_vectors WHERE kb_id = $1")
                .bind(kb)
                .execute(&mut *tx)
                .await?;
            bump(&mut tx, kb).await?;
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn pending_embeddings<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
        after: Option<(&'a str, u64)>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<PendingChunk>, StoreError>> {
        async move {
            let (mut at_path, mut at_ordinal) =
                after.map_or((String::new(), -1), |(p, o)| (p.to_owned(), int(o)));
            // Two range scans of primary keys per window (the next chunks, and which of them
            // have a vector), not an anti-join: its plan rests on the statistics, which are
            // stale while a job fills the tables (PostgreSQL without autovacuum never refreshes
            // them), and the plan they gave probed every vector of the base for every chunk.
            let window = i64::from(limit.max(16)) * 4;
            let mut pending = Vec::new();
            while pending.len() < limit as usize {
                let rows = sqlx::query(
                    "SELECT c.path AS path, c.ordinal AS ordinal, f.content_hash AS content_hash, \
                     c.text AS text FROM knowledge_chunks c \
                     JOIN knowledge_files f ON f.kb_id = c.kb_id AND f.path = c.path \
                     WHERE c.kb_id = $1 AND (c.path, c.ordinal) > ($2, $3) \
                     ORDER BY c.path, c.ordinal LIMIT $4",
                )
                .bind(kb)
                .bind(&at_path)
                .bind(at_ordinal)
                .bind(window)
                .fetch_all(&self.pool)
                .await?;
                let chunks = rows
                    .iter()
                    .map(|row| {
                        Ok(PendingChunk {
                            path: row.try_get("path")?,
                            ordinal: u64::try_from(row.try_get::<i64, _>("ordinal")?)
                                .unwrap_or_default(),
                            content_hash: row.try_get("content_hash")?,
                            text: row.try_get("text")?,
                        })
                    })
                    .collect::<Result<Vec<_>, StoreError>>()?;
                let (Some(first), Some(last)) = (chunks.first(), chunks.last()) else {
                    break;
                };
                let embedded: std::collections::HashSet<(String, i64)> = sqlx::query_as(
                    "SELECT path, ordinal FROM knowledge_vectors WHERE kb_id = $1 \
                     AND (path, ordinal) >= ($2, $3) AND (path, ordinal) <= ($4, $5) \
                     AND model = $6",
                )
                .bind(kb)
                .bind(&first.path)
                .bind(int(first.ordinal))
                .bind(&last.path)
                .bind(int(last.ordinal))
                .bind(model)
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .collect();
                let full = chunks.len() as i64 == window;
                (at_path, at_ordinal) = (last.path.clone(), int(last.ordinal));
                pending.extend(
                    chunks
                        .into_iter()
                        .filter(|c| !embedded.contains(&(c.path.clone(), int(c.ordinal)))),
                );
                if !full {
                    break;
                }
            }
            pending.truncate(limit as usize);
            Ok(pending)
        }
        .boxed()
    }

    fn put_knowledge_vectors<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
        vectors: &'a [(PendingChunk, Vec<f32>)],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        async move {
            if let Some(p) = &self.pgvector {
                // Before the write transaction: creating an index waits for other writers.
                let dims: std::collections::BTreeSet<usize> =
                    vectors.iter().map(|(_, v)| v.len()).collect();
                for d in dims {
                    p.ensure_index(&self.pool, d).await?;
                }
            }
            let mut tx = self.begin_write().await?;
            // The base's model may have changed since the chunks were read.
            let current: Option<Option<String>> =
                sqlx::query_scalar("SELECT embed_model FROM knowledge_bases WHERE id = $1")
                    .bind(kb)
                    .fetch_optional(&mut *tx)
                    .await?;
            if current.flatten().as_deref() != Some(model) {
                return Ok(0);
            }
            let mut stored = 0;
            // With pgvector's columns the same row also carries the vector in its type.
            let upsert = match &self.pgvector {
                Some(p) => p.upsert_sql(),
                None => "INSERT INTO knowledge_vectors (kb_id, path, ordinal, model, vector) \
                         SELECT $1, $2, $3, $4, $5 FROM knowledge_files f \
                         WHERE f.kb_id = $1 AND f.path = $2 AND f.content_hash = $6 \
                         ON CONFLICT (kb_id, path, ordinal) DO UPDATE SET \
                         model = excluded.model, vector = excluded.vector"
                    .to_owned(),
            };
            for (chunk, vector) in vectors {
                let unit = index::unit(vector.clone());
                let mut q = sqlx::query(sqlx::AssertSqlSafe(upsert.as_str()))
                    .bind(kb)
                    .bind(&chunk.path)
                    .bind(int(chunk.ordinal))
                    .bind(model)
                    .bind(index::encode(&unit))
                    .bind(&chunk.content_hash);
                if self.pgvector.is_some() {
                    let (literal, dims) = pgvector::Pgvector::bind_values(&unit);
                    q = q.bind(literal).bind(dims);
                }
                stored += q.execute(&mut *tx).await?.rows_affected();
            }
            if stored > 0 {
                bump(&mut tx, kb).await?;
            }
            tx.commit().await?;
            Ok(stored)
        }
        .boxed()
    }

    fn embedding_counts<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
    ) -> BoxFuture<'a, Result<(u64, u64), StoreError>> {
        async move {
            let embedded: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM knowledge_vectors WHERE kb_id = $1 AND model = $2",
            )
            .bind(kb)
            .bind(model)
            .fetch_one(&self.pool)
            .await?;
            let all: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM knowledge_chunks WHERE kb_id = $1")
                    .bind(kb)
                    .fetch_one(&self.pool)
                    .await?;
            Ok((
                u64::try_from(embedded).unwrap_or_default(),
                u64::try_from(all).unwrap_or_default(),
            ))
        }
        .boxed()
    }

    fn search_knowledge_vectors<'a>(
        &'a self,
        kb: &'a str,
        model: &'a str,
        query: &'a [f32],
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ChunkHit>, StoreError>> {
        async move {
            if let Some(p) = self.pgvector.as_ref().filter(|p| p.search) {
                return p.search(&self.pool, kb, model, query, limit).await;
            }
            let generation: Option<i64> =
                sqlx::query_scalar("SELECT generation FROM knowledge_bases WHERE id = $1")
                    .bind(kb)
                    .fetch_optional(&self.pool)
                    .await?;
            let Some(generation) = generation else {
                return Ok(Vec::new());
            };
            let index = match self.vector_indexes.current(kb, generation, model) {
                Some(i) => i,
                None => {
                    // Read in one transaction with the generation, so the index is exactly
                    // that generation's (a write in between would bump it past).
                    let mut tx = self.pool.begin().await?;
                    let generation: i64 =
                        sqlx::query_scalar("SELECT generation FROM knowledge_bases WHERE id = $1")
                            .bind(kb)
                            .fetch_one(&mut *tx)
                            .await?;
                    let rows = sqlx::query(
                        "SELECT path, ordinal, vector FROM knowledge_vectors \
                         WHERE kb_id = $1 AND model = $2",
                    )
                    .bind(kb)
                    .bind(model)
                    .fetch_all(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    let mut keyed = Vec::with_capacity(rows.len());
                    for row in rows {
                        let ordinal: i64 = row.try_get("ordinal")?;
                        keyed.push((
                            (
                                row.try_get::<String, _>("path")?,
                                u64::try_from(ordinal).unwrap_or_default(),
                            ),
                            row.try_get::<Vec<u8>, _>("vector")?,
                        ));
                    }
                    let built = std::sync::Arc::new(index::FlatIndex::build(
                        generation,
                        model.to_owned(),
                        keyed,
                    ));
                    self.vector_indexes.keep(kb, std::sync::Arc::clone(&built));
                    built
                }
            };
            let found = index.search(
                query,
                (limit as usize).min(crate::sql::ROWS_PER_STATEMENT / 2),
            );
            if found.is_empty() {
                return Ok(Vec::new());
            }
            // One statement for every hit, by its primary key as a row value.
            let keys: Vec<String> = (0..found.len())
                .map(|i| format!("($1, ${}, ${})", 2 * i + 2, 2 * i + 3))
                .collect();
            let sql = format!(
                "SELECT path, ordinal, headings, line_start, line_end, text, \
                 CAST(0 AS DOUBLE PRECISION) AS score FROM knowledge_chunks \
                 WHERE (kb_id, path, ordinal) IN (VALUES {})",
                keys.join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(kb);
            for ((path, ordinal), _) in &found {
                q = q.bind(path).bind(int(*ordinal));
            }
            let mut rows: std::collections::HashMap<(String, u64), ChunkHit> = q
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|r| hit_from(r).map(|h| ((h.path.clone(), h.ordinal), h)))
                .collect::<Result<_, StoreError>>()?;
            // In the index's order; a chunk removed since the index was read is passed over.
            let hits = found
                .into_iter()
                .filter_map(|(key, score)| {
                    rows.remove(&key).map(|h| ChunkHit {
                        score: f64::from(score),
                        ..h
                    })
                })
                .collect();
            Ok(hits)
        }
        .boxed()
    }
}

/// Tell every process's vector index of `kb` that it is stale.
async fn bump(tx: &mut sqlx::Transaction<'_, sqlx::Any>, kb: &str) -> Result<(), StoreError> {
    sqlx::query("UPDATE knowledge_bases SET generation = generation + 1 WHERE id = $1")
        .bind(kb)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Delete a file's chunks and their vectors (and, on SQLite, their full-text rows).
async fn remove_chunks(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    dialect: Dialect,
    kb: &str,
    path: &str,
) -> Result<(), StoreError> {
    match dialect {
        Dialect::Sqlite => {
            sqlx::query(
                "DELETE FROM knowledge_fts WHERE rowid IN (SELECT fts_rowid FROM knowledge_chunks \
                 WHERE kb_id = $1 AND path = $2)",
            )
            .bind(kb)
            .bind(path)
            .execute(&mut **tx)
            .await?;
        }
        Dialect::Postgres => {}
    }
    for stmt in [
        "DELETE FROM knowledge_vectors WHERE kb_id = $1 AND path = $2",
        "DELETE FROM knowledge_chunks WHERE kb_id = $1 AND path = $2",
    ] {
        sqlx::query(stmt)
            .bind(kb)
            .bind(path)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_query_becomes_its_words() {
        assert_eq!(
            super::terms("How do I \"install\" rein-cli? OR NOT*"),
            ["how", "do", "i", "install", "rein", "cli", "or", "not"]
        );
        assert!(super::terms("?!* ").is_empty());
    }
}
