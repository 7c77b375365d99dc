//! [`Sessions`] in SQL on both backends: instants as microseconds, each method one statement
//! (a use is noted by a second one, at most once a minute, so requests do not each write).

use super::accounts::{USER_COLUMNS, user_from};
use super::{SqlStore, micros};
use crate::StoreError;
use crate::accounts::User;
use crate::sessions::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;

/// How stale a session's `last_used_at` may get before a use rewrites it.
const USE_GRANULARITY_US: i64 = 60_000_000;

const COLUMNS: &str = "s.id AS s_id, s.user_id AS s_user_id, s.client AS s_client, \
    s.created_at AS s_created_at, s.expires_at AS s_expires_at, s.last_used_at AS s_last_used_at, \
    s.revoked_at AS s_revoked_at";

fn instant(us: i64, what: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| StoreError::corrupt(what, format!("{us} is out of range")))
}

fn opt_instant(row: &AnyRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    row.try_get::<Option<i64>, _>(col)?
        .map(|us| instant(us, col))
        .transpose()
}

fn session_from(row: &AnyRow) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id: row.try_get("s_id")?,
        user_id: row.try_get("s_user_id")?,
        client: row.try_get("s_client")?,
        created_at: instant(row.try_get("s_created_at")?, "session created_at")?,
        expires_at: instant(row.try_get("s_expires_at")?, "session expires_at")?,
        last_used_at: opt_instant(row, "s_last_used_at")?,
        revoked_at: opt_instant(row, "s_revoked_at")?,
    })
}

impl Sessions for SqlStore {
    fn create_session<'a>(
        &'a self,
        session: &'a SessionRecord,
        secret_hash: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query(
                "INSERT INTO sessions (id, user_id, secret_hash, client, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&session.id)
            .bind(&session.user_id)
            .bind(secret_hash)
            .bind(session.client.clone())
            .bind(micros(session.created_at))
            .bind(micros(session.expires_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn user_for_session<'a>(
        &'a self,
        secret_hash: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<(User, SessionRecord)>, StoreError>> {
        async move {
            let now_us = micros(now);
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS}, {COLUMNS} FROM sessions s JOIN users u ON u.id = s.user_id \
                 WHERE s.secret_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 \
                 AND u.disabled_at IS NULL"
            )))
            .bind(secret_hash)
            .bind(now_us)
            .fetch_optional(&self.pool)
            .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            let (user, mut session) = (user_from(&row)?, session_from(&row)?);
            let stale = session
                .last_used_at
                .is_none_or(|t| now_us - micros(t) >= USE_GRANULARITY_US);
            if stale {
                sqlx::query("UPDATE sessions SET last_used_at = $1 WHERE secret_hash = $2")
                    .bind(now_us)
                    .bind(secret_hash)
                    .execute(&self.pool)
                    .await?;
                session.last_used_at = Some(now);
            }
            Ok(Some((user, session)))
        }
        .boxed()
    }

    fn end_session<'a>(
        &'a self,
        secret_hash: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move { Ok(self.end_where("secret_hash", secret_hash, now).await? > 0) }.boxed()
    }

    fn list_sessions<'a>(
        &'a self,
        user_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Vec<SessionRecord>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM sessions s WHERE s.user_id = $1 AND s.revoked_at IS NULL \
                 AND s.expires_at > $2 ORDER BY s.created_at DESC, s.id DESC"
            )))
            .bind(user_id)
            .bind(micros(now))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(session_from)
            .collect()
        }
        .boxed()
    }

    fn end_sessions<'a>(
        &'a self,
        user_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.end_where("user_id", user_id, now).boxed()
    }

    fn sign_in_failures<'a>(
        &'a self,
        name: &'a str,
        since: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Failures, StoreError>> {
        async move {
            let row = sqlx::query(
                "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM sign_in_failures \
                 WHERE name = $1 AND at >= $2",
            )
            .bind(name)
            .bind(micros(since))
            .fetch_one(&self.pool)
            .await?;
            let n: i64 = row.try_get("n")?;
            Ok(Failures {
                count: u64::try_from(n).unwrap_or(0),
                oldest: opt_instant(&row, "oldest")?,
            })
        }
        .boxed()
    }

    fn record_sign_in_failure<'a>(
        &'a self,
        name: &'a str,
        at: DateTime<Utc>,
        forget_before: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            sqlx::query("DELETE FROM sign_in_failures WHERE at < $1")
                .bind(micros(forget_before))
                .execute(&mut *tx)
                .await?;
            sqlx::query("INSERT INTO sign_in_failures (name, at) VALUES ($1, $2)")
                .bind(name)
                .bind(micros(at))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        }
        .boxed()
    }

    fn clear_sign_in_failures<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            sqlx::query("DELETE FROM sign_in_failures WHERE name = $1")
                .bind(name)
                .execute(&self.pool)
                .await?;
            Ok(())
        }
        .boxed()
    }
}

impl SqlStore {
    /// End the live sessions whose `column` (`secret_hash` or `user_id`) is `value`; how many.
    async fn end_where(
        &self,
        column: &'static str,
        value: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        Ok(sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE sessions SET revoked_at = $1 WHERE {column} = $2 \
             AND revoked_at IS NULL AND expires_at > $1"
        )))
        .bind(micros(now))
        .bind(value)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }
}
