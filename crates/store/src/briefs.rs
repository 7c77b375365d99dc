//! Briefs: durable reports that ask a person for attention, with the actions they offer and
//! their read and resolved state; each user's hook for urgent briefs; and the outbox of hook
//! deliveries (claimed with a lease, so several servers deliver each once, retried until
//! delivered). Resolving is single-use: the `resolved_at IS NULL` update decides a race.

use crate::StoreError;
use crate::sql::{SqlStore, from_json, micros, parse_ts, to_json, ts};
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;

/// What every brief id looks like: `brief-` and a UUID (a run's brief carries its
/// operation's, so each run gives at most one).
pub const BRIEF_ID_PATTERN: &str =
    "^brief-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// Whether `id` is a brief id ([`BRIEF_ID_PATTERN`]).
pub fn valid_brief_id(id: &str) -> bool {
    id.strip_prefix("brief-").is_some_and(|u| {
        u.len() == 36 && uuid::Uuid::try_parse(u).is_ok() && u == u.to_ascii_lowercase()
    })
}

/// A fresh brief id (one an agent or a person raises).
pub fn new_brief_id() -> String {
    format!("brief-{}", uuid::Uuid::now_v7())
}

rein_core::named_enum! {
    /// What a brief reports.
    pub enum BriefKind as "kind" {
        /// What a run produced.
        Result = "result",
        /// Something only a person can decide.
        Decision = "decision",
        /// Something worth knowing.
        Insight = "insight",
        /// A run failed.
        Error = "error",
    }
}

rein_core::named_enum! {
    /// How much a brief asks for attention.
    pub enum BriefPriority as "priority" {
        /// Now (urgent briefs go to the owner's hook; an unresolved urgent decision holds the
        /// task's next runs).
        Urgent = "urgent",
        /// Soon.
        Normal = "normal",
        /// For the record.
        Info = "info",
    }
}

/// Something a brief points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Artifact {
    /// `operation`, `document` or `file`.
    pub kind: String,
    /// Its id or path.
    pub reference: String,
    /// What to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// An action a brief offers: `approve`, `retry`, `feedback`, `acknowledge`, or one of the
/// agent's own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BriefAction {
    /// What resolving names.
    pub key: String,
    /// What a person reads.
    pub label: String,
}

/// How a brief was resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resolution {
    /// The action taken (one the brief offers).
    pub action: String,
    /// What the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// A durable report that asks a person for attention.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Brief {
    /// Its id.
    pub id: String,
    /// The user it is for.
    pub owner: String,
    /// The task whose run it reports on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The operation it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The agent that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// What it reports.
    pub kind: BriefKind,
    /// How much it asks for attention.
    pub priority: BriefPriority,
    /// One line.
    pub title: String,
    /// A few sentences.
    pub summary: String,
    /// What it points at.
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// What a person can do about it.
    #[serde(default)]
    pub actions: Vec<BriefAction>,
    /// When its owner first opened it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<DateTime<Utc>>,
    /// How it was resolved; `None` while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl Brief {
    /// Whether it still asks for a decision that holds its task: urgent, unresolved, and not
    /// an error (an error asks for a retry; the task's schedule carries on).
    pub fn holds_task(&self) -> bool {
        self.priority == BriefPriority::Urgent
            && self.kind != BriefKind::Error
            && self.resolution.is_none()
    }
}

/// Which briefs to list (newest first).
#[derive(Clone, Debug, Default)]
pub struct BriefFilter {
    /// One user's.
    pub owner: Option<String>,
    /// One task's.
    pub task_id: Option<String>,
    /// Only unresolved ones.
    pub unresolved: bool,
    /// At most this many (0: 100).
    pub limit: u32,
}

/// A user's hook for urgent briefs: a URL that receives each as a signed JSON POST.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefHook {
    /// The user.
    pub owner: String,
    /// Where to POST.
    pub url: String,
    /// The HMAC-SHA256 key of the signature header.
    pub secret: String,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

/// One hook delivery of a brief, claimed for an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BriefNotice {
    /// The brief.
    pub brief_id: String,
    /// Its owner (whose hook).
    pub owner: String,
    /// Attempts so far, this one included.
    pub attempts: u32,
}

/// Briefs in a store.
pub trait Briefs: Send + Sync {
    /// Store a new brief; with `notify_at`, also queue its hook delivery (same transaction).
    fn add_brief<'a>(
        &'a self,
        brief: &'a Brief,
        notify_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// One brief.
    fn get_brief<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Brief>, StoreError>>;
    /// Briefs, newest first.
    fn list_briefs<'a>(
        &'a self,
        filter: &'a BriefFilter,
    ) -> BoxFuture<'a, Result<Vec<Brief>, StoreError>>;
    /// Mark it read (the first time only); whether it exists.
    fn mark_brief_read<'a>(
        &'a self,
        id: &'a str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Resolve it, once: `false` when it was already resolved (or does not exist).
    fn resolve_brief<'a>(
        &'a self,
        id: &'a str,
        resolution: &'a Resolution,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Set (or replace) a user's hook.
    fn set_brief_hook<'a>(&'a self, hook: &'a BriefHook) -> BoxFuture<'a, Result<(), StoreError>>;
    /// A user's hook.
    fn brief_hook<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<BriefHook>, StoreError>>;
    /// The task whose run `operation_id` is, if it is one.
    fn task_of_run<'a>(
        &'a self,
        operation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
    /// Remove a user's hook; whether there was one.
    fn delete_brief_hook<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Claim hook deliveries due by `now` (undelivered, next attempt reached) until `until`:
    /// another process claims them only after that.
    fn claim_brief_notices<'a>(
        &'a self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<BriefNotice>, StoreError>>;
    /// Record an attempt: delivered at `delivered`, or failed with `error` and tried again at
    /// `retry_at` (`None`: given up).
    fn settle_brief_notice<'a>(
        &'a self,
        brief_id: &'a str,
        delivered: Option<DateTime<Utc>>,
        error: Option<&'a str>,
        retry_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// What is stored in a brief's `body` column.
#[derive(Serialize, Deserialize)]
struct Body {
    #[serde(default)]
    artifacts: Vec<Artifact>,
    #[serde(default)]
    actions: Vec<BriefAction>,
}

const COLUMNS: &str = "id, owner, task_id, operation_id, agent, kind, priority, title, summary, body, read_at, resolution, created_at";

fn brief_from(row: &AnyRow) -> Result<Brief, StoreError> {
    let body: Body = from_json(&row.try_get::<String, _>("body")?, "brief body")?;
    let word = |col: &str| -> Result<String, StoreError> { Ok(row.try_get::<String, _>(col)?) };
    Ok(Brief {
        id: row.try_get("id")?,
        owner: row.try_get("owner")?,
        task_id: row.try_get("task_id")?,
        operation_id: row.try_get("operation_id")?,
        agent: row.try_get("agent")?,
        kind: crate::sql::enum_from(&word("kind")?, "brief kind")?,
        priority: crate::sql::enum_from(&word("priority")?, "brief priority")?,
        title: row.try_get("title")?,
        summary: row.try_get("summary")?,
        artifacts: body.artifacts,
        actions: body.actions,
        read_at: row
            .try_get::<Option<String>, _>("read_at")?
            .map(|t| parse_ts(&t, "brief read_at"))
            .transpose()?,
        resolution: row
            .try_get::<Option<String>, _>("resolution")?
            .map(|t| from_json(&t, "brief resolution"))
            .transpose()?,
        created_at: parse_ts(&word("created_at")?, "brief created_at")?,
    })
}

impl Briefs for SqlStore {
    fn add_brief<'a>(
        &'a self,
        b: &'a Brief,
        notify_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let body = to_json(
                &Body {
                    artifacts: b.artifacts.clone(),
                    actions: b.actions.clone(),
                },
                "brief body",
            )?;
            let resolution = b
                .resolution
                .as_ref()
                .map(|r| to_json(r, "brief resolution"))
                .transpose()?;
            let mut tx = self.begin_write().await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO briefs ({COLUMNS}, resolved_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            )))
            .bind(&b.id)
            .bind(&b.owner)
            .bind(b.task_id.clone())
            .bind(b.operation_id.clone())
            .bind(b.agent.clone())
            .bind(crate::sql::enum_str(&b.kind))
            .bind(crate::sql::enum_str(&b.priority))
            .bind(&b.title)
            .bind(&b.summary)
            .bind(body)
            .bind(b.read_at.map(ts))
            .bind(resolution)
            .bind(ts(b.created_at))
            .bind(b.resolution.as_ref().map(|r| ts(r.at)))
            .execute(&mut *tx)
            .await
            .map_err(|e| match e {
                sqlx::Error::Database(d) if d.is_unique_violation() => {
                    StoreError::Conflict(format!("brief {}", b.id))
                }
                other => other.into(),
            })?;
            if let Some(at) = notify_at {
                sqlx::query(
                    "INSERT INTO brief_notices (brief_id, owner, attempts, next_at) VALUES ($1, $2, 0, $3)",
                )
                .bind(&b.id)
                .bind(&b.owner)
                .bind(micros(at))
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn get_brief<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Brief>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM briefs WHERE id = $1"
            )))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(brief_from)
            .transpose()
        }
        .boxed()
    }

    fn list_briefs<'a>(
        &'a self,
        f: &'a BriefFilter,
    ) -> BoxFuture<'a, Result<Vec<Brief>, StoreError>> {
        async move {
            // `$1 IS NULL OR …` keeps one statement for every filter.
            let sql = format!(
                "SELECT {COLUMNS} FROM briefs \
                 WHERE ($1 IS NULL OR owner = $1) AND ($2 IS NULL OR task_id = $2) \
                 AND ($3 = 0 OR resolved_at IS NULL) \
                 ORDER BY created_at DESC, id DESC LIMIT $4"
            );
            let limit = if f.limit == 0 { 100 } else { f.limit };
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(f.owner.clone())
                .bind(f.task_id.clone())
                .bind(i64::from(f.unresolved))
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(brief_from)
                .collect()
        }
        .boxed()
    }

    fn mark_brief_read<'a>(
        &'a self,
        id: &'a str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            sqlx::query("UPDATE briefs SET read_at = $1 WHERE id = $2 AND read_at IS NULL")
                .bind(ts(at))
                .bind(id)
                .execute(&self.pool)
                .await?;
            let exists: Option<String> = sqlx::query_scalar("SELECT id FROM briefs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
            Ok(exists.is_some())
        }
        .boxed()
    }

    fn resolve_brief<'a>(
        &'a self,
        id: &'a str,
        r: &'a Resolution,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE briefs SET resolved_at = $1, resolution = $2, read_at = COALESCE(read_at, $1) \
                 WHERE id = $3 AND resolved_at IS NULL",
            )
            .bind(ts(r.at))
            .bind(to_json(r, "brief resolution")?)
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn set_brief_hook<'a>(&'a self, h: &'a BriefHook) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO brief_hooks (owner, url, secret, created_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (owner) DO UPDATE SET url = excluded.url, secret = excluded.secret, \
                 created_at = excluded.created_at",
            )
            .bind(&h.owner)
            .bind(&h.url)
            .bind(&h.secret)
            .bind(ts(h.created_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn brief_hook<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<BriefHook>, StoreError>> {
        async move {
            let row: Option<(String, String, String, String)> = sqlx::query_as(
                "SELECT owner, url, secret, created_at FROM brief_hooks WHERE owner = $1",
            )
            .bind(owner)
            .fetch_optional(&self.pool)
            .await?;
            row.map(|(owner, url, secret, at)| {
                Ok(BriefHook {
                    owner,
                    url,
                    secret,
                    created_at: parse_ts(&at, "brief hook created_at")?,
                })
            })
            .transpose()
        }
        .boxed()
    }

    fn task_of_run<'a>(
        &'a self,
        operation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        async move {
            Ok(
                sqlx::query_scalar("SELECT task_id FROM task_runs WHERE operation_id = $1")
                    .bind(operation_id)
                    .fetch_optional(&self.pool)
                    .await?,
            )
        }
        .boxed()
    }

    fn delete_brief_hook<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("DELETE FROM brief_hooks WHERE owner = $1")
                .bind(owner)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn claim_brief_notices<'a>(
        &'a self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<BriefNotice>, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            // Rows another server is claiming are skipped, not waited for.
            let lock = self.dialect().claim_rows();
            let rows: Vec<(String, String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT brief_id, owner, attempts FROM brief_notices \
                 WHERE delivered_at IS NULL AND next_at <= $1 ORDER BY next_at, brief_id LIMIT $2{lock}"
            )))
            .bind(micros(now))
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await?;
            let mut claimed = Vec::with_capacity(rows.len());
            for (brief_id, owner, attempts) in rows {
                sqlx::query(
                    "UPDATE brief_notices SET attempts = attempts + 1, next_at = $1 WHERE brief_id = $2",
                )
                .bind(micros(until))
                .bind(&brief_id)
                .execute(&mut *tx)
                .await?;
                claimed.push(BriefNotice {
                    brief_id,
                    owner,
                    attempts: u32::try_from(attempts + 1).unwrap_or(u32::MAX),
                });
            }
            tx.commit().await?;
            Ok(claimed)
        }
        .boxed()
    }

    fn settle_brief_notice<'a>(
        &'a self,
        brief_id: &'a str,
        delivered: Option<DateTime<Utc>>,
        error: Option<&'a str>,
        retry_at: Option<DateTime<Utc>>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            // Given up: parked far in the future, with the last error kept.
            let next = retry_at.map_or(i64::MAX, micros);
            sqlx::query(
                "UPDATE brief_notices SET delivered_at = $1, last_error = $2, next_at = $3 WHERE brief_id = $4",
            )
            .bind(delivered.map(ts))
            .bind(error)
            .bind(next)
            .bind(brief_id)
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }
}
