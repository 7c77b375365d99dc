//! [`Logins`] in SQL on both backends: instants as microseconds, and each change one
//! conditional statement (approving and claiming race safely across processes).

use super::{SqlStore, micros};
use crate::StoreError;
use crate::logins::*;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;

fn instant(us: i64, what: &str) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| StoreError::corrupt(what, format!("{us} is out of range")))
}

impl Logins for SqlStore {
    fn create_login<'a>(
        &'a self,
        login: &'a LoginRecord,
        max_pending: u64,
    ) -> BoxFuture<'a, Result<Option<()>, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let now = micros(login.created_at);
            // Expired logins go as new ones come: the table holds at most what is live.
            sqlx::query("DELETE FROM logins WHERE expires_at < $1")
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let pending: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM logins WHERE approved_by IS NULL")
                    .fetch_one(&mut *tx)
                    .await?;
            if u64::try_from(pending).unwrap_or(u64::MAX) >= max_pending {
                return Ok(None);
            }
            sqlx::query(
                "INSERT INTO logins (id, user_code, client, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&login.id)
            .bind(&login.user_code)
            .bind(&login.client)
            .bind(now)
            .bind(micros(login.expires_at))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(()))
        }
        .boxed()
    }

    fn pending_login<'a>(
        &'a self,
        user_code: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Option<LoginRecord>, StoreError>> {
        async move {
            let row = sqlx::query(
                "SELECT id, user_code, client, created_at, expires_at FROM logins \
                 WHERE user_code = $1 AND approved_by IS NULL AND expires_at >= $2",
            )
            .bind(user_code)
            .bind(micros(now))
            .fetch_optional(&self.pool)
            .await?;
            row.map(|r| {
                Ok(LoginRecord {
                    id: r.try_get("id")?,
                    user_code: r.try_get("user_code")?,
                    client: r.try_get("client")?,
                    created_at: instant(r.try_get("created_at")?, "login created_at")?,
                    expires_at: instant(r.try_get("expires_at")?, "login expires_at")?,
                    approved_by: None,
                    claimed_at: None,
                })
            })
            .transpose()
        }
        .boxed()
    }

    fn approve_login<'a>(
        &'a self,
        user_code: &'a str,
        user_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let changed = sqlx::query(
                "UPDATE logins SET approved_by = $1 \
                 WHERE user_code = $2 AND approved_by IS NULL AND expires_at >= $3",
            )
            .bind(user_id)
            .bind(user_code)
            .bind(micros(now))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(changed == 1)
        }
        .boxed()
    }

    fn claim_login<'a>(
        &'a self,
        id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<LoginClaim, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let claimed = sqlx::query(
                "UPDATE logins SET claimed_at = $1 WHERE id = $2 AND approved_by IS NOT NULL \
                 AND claimed_at IS NULL AND expires_at >= $1",
            )
            .bind(micros(now))
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let row = sqlx::query(
                "SELECT client, approved_by, claimed_at, expires_at FROM logins WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            let Some(row) = row else {
                return Ok(LoginClaim::Gone);
            };
            let approved_by: Option<String> = row.try_get("approved_by")?;
            let expires_at: i64 = row.try_get("expires_at")?;
            Ok(match approved_by {
                Some(user_id) if claimed == 1 => LoginClaim::Approved {
                    user_id,
                    client: row.try_get("client")?,
                },
                None if expires_at >= micros(now) => LoginClaim::Pending,
                Some(_) | None => LoginClaim::Gone,
            })
        }
        .boxed()
    }
}
