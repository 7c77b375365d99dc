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

use crate::StoreError;
use crate::sql::{SqlStore, from_json, parse_ts, to_json, ts};
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::document::Embedding;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

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

    /// Bound as `($all = 1 OR COALESCE(private_to, '') IN ($a, $b))`.
    fn binds(self) -> (i64, &'a str, &'a str) {
        match self {
            Self::All => (1, "", ""),
            Self::Shared => (0, "", ""),
            Self::PrivateTo(agent) => (0, agent, agent),
            Self::SharedAnd(agent) => (0, "", agent),
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

/// A subject as compared: lowercase, single spaces.
fn subject_key(subject: &str) -> String {
    subject
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
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

    fn apply_memories<'a>(
        &'a self,
        task: &'a ExtractionTask,
        private_to: Option<&'a str>,
        proposals: &'a [NewMemory],
    ) -> BoxFuture<'a, Result<Applied, StoreError>> {
        async move {
            let owner = task.owner.as_deref().unwrap_or_default();
            let pool = private_to.unwrap_or_default();
            let now = ts(Utc::now());
            let mut applied = Applied::default();
            let mut tx = self.begin_write().await?;
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
                if let Some((id, ..)) = same.iter().find(|(_, _, by, to)| {
                    by.is_none() && to.as_deref().unwrap_or_default() == pool
                }) {
                    sqlx::query("UPDATE memories SET updated_at = $1 WHERE id = $2")
                        .bind(&now)
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
                .bind(task.owner.as_deref())
                .bind(task.agent.as_deref())
                .bind(crate::sql::enum_str(&p.category))
                .bind(&subject)
                .bind(p.text.trim())
                .bind(&key)
                .bind(&task.operation_id)
                .bind(p.source_message.as_deref())
                .bind(embedding)
                .bind(&now)
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
                .bind(&now)
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
