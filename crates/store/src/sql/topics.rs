//! [`Topics`] in SQL on both backends: rows mapped to `crate::topics`'s records, and each
//! method one transaction.

use super::{SqlStore, enum_str, from_json, parse_ts, ts};
use crate::StoreError;
use crate::topics::*;
use chrono::{SubsecRound, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::{Message, MessageId};
use sqlx::Row;
use sqlx::any::AnyRow;
/// Statuses an operation can be deleted in (nothing will run it again).
const SETTLED: [&str; 3] = ["done", "error", "interrupted"];

const COLUMNS: &str = "id, agent, title, title_source, created_at";

fn topic_of(r: &AnyRow) -> Result<TopicRecord, StoreError> {
    Ok(TopicRecord {
        id: r.try_get("id")?,
        agent: r.try_get("agent")?,
        title: r.try_get("title")?,
        title_source: r
            .try_get::<Option<String>, _>("title_source")?
            .map(|s| crate::sql::enum_from(&s, "topic title_source"))
            .transpose()?
            .unwrap_or_default(),
        created_at: parse_ts(&r.try_get::<String, _>("created_at")?, "topic created_at")?,
    })
}

/// `text` as a `LIKE` pattern matching it anywhere in lower-cased JSON: escaped the way JSON
/// escapes it inside a string, then its `LIKE` wildcards escaped.
fn contains_pattern(text: &str) -> String {
    let json = serde_json::to_string(&text.to_lowercase()).unwrap_or_default();
    let inner = json
        .strip_prefix('"')
        .and_then(|j| j.strip_suffix('"'))
        .unwrap_or(&json);
    let mut out = String::from("%");
    for c in inner.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

impl Topics for SqlStore {
    fn create_topic<'a>(
        &'a self,
        topic: &'a NewTopic,
    ) -> BoxFuture<'a, Result<TopicRecord, StoreError>> {
        async move {
            let created_at = Utc::now().trunc_subsecs(6);
            let source = topic.title.as_ref().map(|_| enum_str(&TitleSource::User));
            let done = sqlx::query(
                "INSERT INTO topics (id, agent, title, title_source, created_at, owner) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
            )
            .bind(&topic.id)
            .bind(topic.agent.clone())
            .bind(topic.title.clone())
            .bind(source)
            .bind(ts(created_at))
            .bind(topic.owner.clone())
            .execute(&self.pool)
            .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::Conflict(format!("topic {}", topic.id)));
            }
            Ok(TopicRecord {
                id: topic.id.clone(),
                agent: topic.agent.clone(),
                title: topic.title.clone(),
                title_source: if topic.title.is_some() {
                    TitleSource::User
                } else {
                    TitleSource::Prompt
                },
                created_at,
            })
        }
        .boxed()
    }

    fn topic<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TopicRecord>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM topics WHERE id = $1"
            )))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(topic_of)
            .transpose()
        }
        .boxed()
    }

    fn list_topics<'a>(
        &'a self,
        filter: &'a TopicFilter,
    ) -> BoxFuture<'a, Result<Vec<TopicRecord>, StoreError>> {
        async move {
            let owner = if filter.owner.is_some() {
                "owner = $1"
            } else {
                "owner IS NULL AND $1 = ''"
            };
            // Keyset paging: strictly after the given topic in the listing's order; a row
            // value compared with a subquery that finds nothing compares as NULL, so an id not
            // listed (another user's, or none) ends the list.
            let after = |n: u8| {
                if filter.before.is_some() {
                    // `owner` is a condition on column `owner`: of the topics aliased `b`.
                    format!(
                        " AND (created_at, id) < (SELECT b.created_at, b.id FROM topics b WHERE b.id = ${n} AND b.{owner})"
                    )
                } else {
                    format!(" AND ${n} = ''")
                }
            };
            let before = filter.before.clone().unwrap_or_default();
            let Some(search) = filter.search.as_deref().filter(|s| !s.is_empty()) else {
                return sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {COLUMNS} FROM topics WHERE {owner}{} \
                     ORDER BY created_at DESC, id DESC LIMIT $2",
                    after(3)
                )))
                .bind(filter.owner.clone().unwrap_or_default())
                .bind(i64::from(filter.limit))
                .bind(&before)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(topic_of)
                .collect();
            };
            let needle = search.to_lowercase();
            let pattern = contains_pattern(search);
            // Candidates: by title, or by a message whose stored JSON contains the text. Then
            // the messages that might say it, parsed once: a candidate found only through its
            // JSON (a key such as `role`) is kept when a message's text says it.
            let owner_arg = filter.owner.clone().unwrap_or_default();
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM topics t WHERE {owner}{} \
                 AND (LOWER(COALESCE(title, '')) LIKE $2 ESCAPE '\\' \
                 OR EXISTS (SELECT 1 FROM messages m WHERE m.topic_id = t.id AND m.thread_id IS NULL \
                 AND LOWER(m.body) LIKE $2 ESCAPE '\\')) ORDER BY created_at DESC, id DESC",
                after(3)
            )))
            .bind(&owner_arg)
            .bind(&pattern)
            .bind(&before)
            .fetch_all(&self.pool)
            .await?;
            let bodies: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT m.topic_id, m.body FROM messages m JOIN topics t ON t.id = m.topic_id \
                 WHERE {owner} AND m.thread_id IS NULL AND LOWER(m.body) LIKE $2 ESCAPE '\\'"
            )))
            .bind(&owner_arg)
            .bind(&pattern)
            .fetch_all(&self.pool)
            .await?;
            let mut said = std::collections::HashSet::new();
            for (topic, body) in bodies {
                if !said.contains(&topic) {
                    let m: Message = from_json(&body, "message")?;
                    if m.text_content().to_lowercase().contains(&needle) {
                        said.insert(topic);
                    }
                }
            }
            let mut out = Vec::new();
            for r in &rows {
                if out.len() >= filter.limit as usize {
                    break;
                }
                let topic = topic_of(r)?;
                let by_title = topic
                    .title
                    .as_deref()
                    .is_some_and(|t| t.to_lowercase().contains(&needle));
                if by_title || said.contains(&topic.id) {
                    out.push(topic);
                }
            }
            Ok(out)
        }
        .boxed()
    }

    fn topic_owner<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Option<String>>, StoreError>> {
        async move {
            let row = sqlx::query("SELECT owner FROM topics WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
            row.map(|r| r.try_get::<Option<String>, _>("owner"))
                .transpose()
                .map_err(StoreError::from)
        }
        .boxed()
    }

    fn set_topic_title<'a>(
        &'a self,
        id: &'a str,
        title: &'a str,
        source: TitleSource,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let only = if source == TitleSource::Model {
                " AND COALESCE(title_source, 'prompt') = 'prompt'"
            } else {
                ""
            };
            let done = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE topics SET title = $1, title_source = $2 WHERE id = $3{only}"
            )))
            .bind(title)
            .bind(enum_str(&source))
            .bind(id)
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() > 0)
        }
        .boxed()
    }

    fn delete_topic<'a>(
        &'a self,
        id: &'a str,
        records: OperationRecords,
    ) -> BoxFuture<'a, Result<Option<DeletedTopic>, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let exists: Option<String> = sqlx::query_scalar("SELECT id FROM topics WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            if exists.is_none() {
                return Ok(None);
            }
            let operations: Vec<(String, String)> =
                sqlx::query_as("SELECT id, status FROM operations WHERE topic_id = $1 ORDER BY id")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
            let busy: Vec<String> = operations
                .iter()
                .filter(|(_, status)| !SETTLED.contains(&status.as_str()))
                .map(|(op, status)| format!("{op} ({status})"))
                .collect();
            if !busy.is_empty() {
                return Err(StoreError::InUse(format!(
                    "operations still running or waiting in topic {id}: {}; cancel them first",
                    busy.join(", ")
                )));
            }
            if records == OperationRecords::Delete {
                for table in [
                    "operation_steps",
                    "operation_events",
                    "tool_executions",
                    "interventions",
                    "operation_messages",
                    "operation_setup",
                ] {
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DELETE FROM {table} WHERE operation_id IN \
                         (SELECT id FROM operations WHERE topic_id = $1)"
                    )))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                }
                sqlx::query("DELETE FROM operations WHERE topic_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            // The conversation's artifacts go with it, and their bytes when nothing else of
            // their owner's refers to them.
            let gone: Vec<(String, String)> =
                sqlx::query_as("DELETE FROM artifacts WHERE topic_id = $1 RETURNING owner, sha256")
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
            for (owner, sha256) in gone {
                sqlx::query(
                    "DELETE FROM file_blobs WHERE owner = $1 AND sha256 = $2 AND NOT EXISTS \
                     (SELECT 1 FROM files WHERE owner = $1 AND sha256 = $2) AND NOT EXISTS \
                     (SELECT 1 FROM artifacts WHERE owner = $1 AND sha256 = $2)",
                )
                .bind(&owner)
                .bind(&sha256)
                .execute(&mut *tx)
                .await?;
            }
            let messages = sqlx::query("DELETE FROM messages WHERE topic_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            sqlx::query("DELETE FROM threads WHERE topic_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM topics WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(DeletedTopic {
                messages,
                operations: operations.len() as u64,
                operation_records: records,
            }))
        }
        .boxed()
    }

    fn conversation<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredConversation>, StoreError>> {
        async move {
            let Some(row) = sqlx::query("SELECT active_message FROM topics WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
            else {
                return Ok(None);
            };
            let active_message = row
                .try_get::<Option<String>, _>("active_message")?
                .map(|m| {
                    m.parse::<uuid::Uuid>()
                        .map(MessageId)
                        .map_err(|e| StoreError::corrupt("topic active_message", e))
                })
                .transpose()?;
            let messages = crate::Store::topic_messages(self, id).await?;
            Ok(Some(StoredConversation {
                messages,
                active_message,
            }))
        }
        .boxed()
    }

    fn set_active_message<'a>(
        &'a self,
        id: &'a str,
        message: MessageId,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let done = sqlx::query(
                "UPDATE topics SET active_message = $1 WHERE id = $2 AND EXISTS \
                 (SELECT 1 FROM messages WHERE id = $1 AND topic_id = $2 AND thread_id IS NULL)",
            )
            .bind(message.to_string())
            .bind(id)
            .execute(&self.pool)
            .await?;
            Ok(done.rows_affected() > 0)
        }
        .boxed()
    }
}
