//! [`Memories`] in SQL on both backends: rows mapped to `crate::memories`'s records, and each
//! method one transaction.

use super::{SqlStore, from_json, parse_ts, to_json, ts};
use crate::StoreError;
use crate::memories::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::document::Embedding;
use sqlx::Row;
use sqlx::any::AnyRow;
/// A subject as compared: lowercase, single spaces.
fn subject_key(subject: &str) -> String {
    subject
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

impl<'a> MemoryPool<'a> {
    /// Bound as `($all = 1 OR COALESCE(private_to, '') IN ($a, $b))`.
    pub(crate) fn binds(self) -> (i64, &'a str, &'a str) {
        match self {
            Self::All => (1, "", ""),
            Self::Shared => (0, "", ""),
            Self::PrivateTo(agent) => (0, agent, agent),
            Self::SharedAnd(agent) => (0, "", agent),
        }
    }
}

const COLUMNS: &str = "id, owner, agent, private_to, category, subject, text, source_operation, \
     source_message, embedding, created_at, updated_at, superseded_by";

fn memory_from(row: &AnyRow) -> Result<MemoryRecord, StoreError> {
    let embedding: Option<String> = row.try_get("embedding")?;
    Ok(MemoryRecord {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        agent: row.try_get("agent")?,
        private_to: row.try_get("private_to")?,
        category: crate::sql::enum_from(&row.try_get::<String, _>("category")?, "memory category")?,
        subject: row.try_get("subject")?,
        text: row.try_get("text")?,
        source_operation: row.try_get("source_operation")?,
        source_message: row.try_get("source_message")?,
        embedding: embedding
            .map(|e| from_json(&e, "memory embedding"))
            .transpose()?,
        created_at: parse_ts(
            &row.try_get::<String, _>("created_at")?,
            "memory created_at",
        )?,
        updated_at: parse_ts(
            &row.try_get::<String, _>("updated_at")?,
            "memory updated_at",
        )?,
        superseded_by: row.try_get("superseded_by")?,
    })
}

impl Memories for SqlStore {
    fn pending_extractions<'a>(
        &'a self,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<ExtractionTask>, StoreError>> {
        async move {
            let rows = sqlx::query(
                "SELECT o.id AS id, o.owner AS owner, o.agent AS agent, \
                 COALESCE(m.attempts, 0) AS attempts FROM operations o \
                 LEFT JOIN memory_extractions m ON m.operation_id = o.id \
                 LEFT JOIN memory_settings s ON s.owner = COALESCE(o.owner, '') \
                 WHERE o.status = 'done' AND o.parent_operation IS NULL \
                 AND o.trigger_kind IN ('cli', 'api') \
                 AND NOT EXISTS (SELECT 1 FROM task_runs r WHERE r.operation_id = o.id) \
                 AND o.finished_at >= (SELECT since FROM memory_epoch WHERE id = 1) \
                 AND (s.extraction IS NULL OR s.extraction = 1) \
                 AND (m.operation_id IS NULL OR (m.state = 'pending' AND m.retry_at <= $1)) \
                 ORDER BY o.finished_at, o.id LIMIT $2",
            )
            .bind(ts(Utc::now()))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok(ExtractionTask {
                        operation_id: r.try_get("id")?,
                        owner: r.try_get("owner")?,
                        agent: r.try_get("agent")?,
                        attempts: crate::sql::u64_of(r.try_get("attempts")?),
                    })
                })
                .collect()
        }
        .boxed()
    }

    fn import_memories<'a>(
        &'a self,
        owner: Option<&'a str>,
        private_to: &'a str,
        memories: &'a [NewMemory],
    ) -> BoxFuture<'a, Result<Applied, StoreError>> {
        async move {
            let now = ts(Utc::now());
            let mut tx = self.begin_write().await?;
            let applied = write_memories(
                &mut tx,
                owner,
                Some(private_to),
                None,
                Some(private_to),
                memories,
                &now,
            )
            .await?;
            tx.commit().await?;
            Ok(applied)
        }
        .boxed()
    }

    fn apply_memories<'a>(
        &'a self,
        task: &'a ExtractionTask,
        private_to: Option<&'a str>,
        proposals: &'a [NewMemory],
    ) -> BoxFuture<'a, Result<Applied, StoreError>> {
        async move {
            let now = ts(Utc::now());
            let mut tx = self.begin_write().await?;
            let applied = write_memories(
                &mut tx,
                task.owner.as_deref(),
                task.agent.as_deref(),
                Some(&task.operation_id),
                private_to,
                proposals,
                &now,
            )
            .await?;
            sqlx::query(
                "INSERT INTO memory_extractions (operation_id, state, attempts, error, retry_at, \
                 updated_at) VALUES ($1, 'done', $2, NULL, $3, $3) ON CONFLICT (operation_id) \
                 DO UPDATE SET state = 'done', error = NULL, updated_at = excluded.updated_at",
            )
            .bind(&task.operation_id)
            .bind(crate::sql::i64_of(task.attempts + 1))
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(applied)
        }
        .boxed()
    }

    fn extraction_failed<'a>(
        &'a self,
        task: &'a ExtractionTask,
        error: &'a str,
        retry_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let now = Utc::now();
            let (state, at) = match retry_at {
                Some(t) => ("pending", t),
                None => ("failed", now),
            };
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO memory_extractions (operation_id, state, attempts, error, retry_at, \
                 updated_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (operation_id) \
                 DO UPDATE SET state = excluded.state, attempts = excluded.attempts, \
                 error = excluded.error, retry_at = excluded.retry_at, \
                 updated_at = excluded.updated_at",
            )
            .bind(&task.operation_id)
            .bind(state)
            .bind(crate::sql::i64_of(task.attempts + 1))
            .bind(error)
            .bind(ts(at))
            .bind(ts(now))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn memory_extraction<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let on: Option<i64> =
                sqlx::query_scalar("SELECT extraction FROM memory_settings WHERE owner = $1")
                    .bind(owner.unwrap_or_default())
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(on.is_none_or(|v| v != 0))
        }
        .boxed()
    }

    fn set_memory_extraction<'a>(
        &'a self,
        owner: Option<&'a str>,
        on: bool,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "INSERT INTO memory_settings (owner, extraction) VALUES ($1, $2) \
                 ON CONFLICT (owner) DO UPDATE SET extraction = excluded.extraction",
            )
            .bind(owner.unwrap_or_default())
            .bind(i64::from(on))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn list_memories<'a>(
        &'a self,
        owner: Option<&'a str>,
        pool: MemoryPool<'a>,
        history: bool,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, StoreError>> {
        async move {
            let (all, a, b) = pool.binds();
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM memories WHERE COALESCE(owner, '') = $1 AND forgotten = 0 \
                 AND ($2 = 1 OR superseded_by IS NULL) \
                 AND ($3 = 1 OR COALESCE(private_to, '') IN ($4, $5)) \
                 ORDER BY updated_at DESC, id DESC"
            )))
            .bind(owner.unwrap_or_default())
            .bind(i64::from(history))
            .bind(all)
            .bind(a)
            .bind(b)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(memory_from)
            .collect()
        }
        .boxed()
    }

    fn memory<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<MemoryWithHistory>, StoreError>> {
        async move {
            let one = |id: String| {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {COLUMNS} FROM memories WHERE COALESCE(owner, '') = $1 AND id = $2 \
                     AND forgotten = 0"
                )))
                .bind(owner.unwrap_or_default())
                .bind(id)
            };
            let Some(row) = one(id.to_owned()).fetch_optional(&self.pool).await? else {
                return Ok(None);
            };
            let memory = memory_from(&row)?;
            let mut history = Vec::new();
            let mut at = memory.id.clone();
            // Each memory replaces at most one per extraction; follow the chain back.
            while history.len() < 100 {
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {COLUMNS} FROM memories WHERE COALESCE(owner, '') = $1 \
                     AND superseded_by = $2 AND forgotten = 0 ORDER BY updated_at DESC"
                )))
                .bind(owner.unwrap_or_default())
                .bind(&at)
                .fetch_all(&self.pool)
                .await?;
                let Some(first) = rows.first() else { break };
                for r in &rows {
                    history.push(memory_from(r)?);
                }
                at = first.try_get("id")?;
            }
            Ok(Some((memory, history)))
        }
        .boxed()
    }

    fn edit_memory<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
        text: &'a str,
        embedding: Option<&'a Embedding>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let embedding = embedding
                .map(|e| to_json(e, "memory embedding"))
                .transpose()?;
            let mut tx = self.begin_write().await?;
            let n = sqlx::query(
                "UPDATE memories SET text = $1, text_key = $2, embedding = $3, updated_at = $4 \
                 WHERE COALESCE(owner, '') = $5 AND id = $6 AND forgotten = 0 \
                 AND superseded_by IS NULL",
            )
            .bind(text.trim())
            .bind(text_key(text))
            .bind(embedding)
            .bind(ts(Utc::now()))
            .bind(owner.unwrap_or_default())
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(n > 0)
        }
        .boxed()
    }

    fn forget_memory<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            // One write transaction: an extraction cannot add to the chain while it is erased.
            let mut tx = self.begin_write().await?;
            let mut at: Vec<String> = sqlx::query_scalar(
                "SELECT id FROM memories WHERE COALESCE(owner, '') = $1 AND id = $2 \
                 AND forgotten = 0",
            )
            .bind(owner.unwrap_or_default())
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
            if at.is_empty() {
                return Ok(false);
            }
            let now = ts(Utc::now());
            // The memory, then the ones it replaced, back along the chain.
            let mut seen = 0;
            while let Some(m) = at.pop() {
                seen += 1;
                if seen > 1000 {
                    break;
                }
                sqlx::query(
                    "UPDATE memories SET forgotten = 1, text = '', subject = '', embedding = NULL, \
                     source_message = NULL, updated_at = $1 WHERE id = $2",
                )
                .bind(&now)
                .bind(&m)
                .execute(&mut *tx)
                .await?;
                let older: Vec<String> = sqlx::query_scalar(
                    "SELECT id FROM memories WHERE superseded_by = $1 AND forgotten = 0",
                )
                .bind(&m)
                .fetch_all(&mut *tx)
                .await?;
                at.extend(older);
            }
            tx.commit().await?;
            Ok(true)
        }
        .boxed()
    }
}

/// Write `proposals` as `owner`'s memories (of `agent`'s conversations, from
/// `source_operation`), shared or private to `private_to`: a text forgotten before is not
/// written again, the same text in the same pool is only touched, and a memory of the pool
/// about the same subject becomes history.
#[allow(clippy::too_many_arguments)]
async fn write_memories(
    tx: &mut sqlx::AnyConnection,
    owner_id: Option<&str>,
    agent: Option<&str>,
    source_operation: Option<&str>,
    private_to: Option<&str>,
    proposals: &[NewMemory],
    now: &str,
) -> Result<Applied, StoreError> {
    let owner = owner_id.unwrap_or_default();
    let pool = private_to.unwrap_or_default();
    let mut applied = Applied::default();
    for p in proposals {
        let key = text_key(&p.text);
        let same: Vec<(String, i64, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT id, forgotten, superseded_by, private_to FROM memories \
                     WHERE COALESCE(owner, '') = $1 AND text_key = $2",
        )
        .bind(owner)
        .bind(&key)
        .fetch_all(&mut *tx)
        .await?;
        // Forgotten anywhere is forgotten everywhere.
        if same.iter().any(|(_, f, ..)| *f != 0) {
            applied.forgotten += 1;
            continue;
        }
        if let Some((id, ..)) = same
            .iter()
            .find(|(_, _, by, to)| by.is_none() && to.as_deref().unwrap_or_default() == pool)
        {
            sqlx::query("UPDATE memories SET updated_at = $1 WHERE id = $2")
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            applied.merged += 1;
            continue;
        }
        let id = format!("mem_{}", uuid::Uuid::now_v7().simple());
        let subject = subject_key(&p.subject);
        let embedding = p
            .embedding
            .as_ref()
            .map(|e| to_json(e, "memory embedding"))
            .transpose()?;
        sqlx::query(
            "INSERT INTO memories (id, owner, agent, category, subject, text, text_key, \
                     source_operation, source_message, embedding, created_at, updated_at, \
                     superseded_by, forgotten, private_to) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, NULL, 0, $12)",
        )
        .bind(&id)
        .bind(owner_id)
        .bind(agent)
        .bind(crate::sql::enum_str(&p.category))
        .bind(&subject)
        .bind(p.text.trim())
        .bind(&key)
        .bind(source_operation)
        .bind(p.source_message.as_deref())
        .bind(embedding)
        .bind(now)
        .bind(private_to)
        .execute(&mut *tx)
        .await?;
        // A current memory of the pool about the same subject is contradicted: it
        // becomes history.
        let replaced = sqlx::query(
            "UPDATE memories SET superseded_by = $1, updated_at = $2 \
                     WHERE COALESCE(owner, '') = $3 AND subject = $4 AND id <> $1 \
                     AND COALESCE(private_to, '') = $5 \
                     AND superseded_by IS NULL AND forgotten = 0",
        )
        .bind(&id)
        .bind(now)
        .bind(owner)
        .bind(&subject)
        .bind(pool)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if replaced > 0 {
            applied.replaced += replaced;
        } else {
            applied.added += 1;
        }
    }
    Ok(applied)
}
