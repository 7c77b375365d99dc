//! [`Devices`] in SQL on both backends: rows mapped to `crate::devices`'s records, and each
//! method one transaction.

use super::{SqlStore, parse_ts, ts};
use crate::StoreError;
use crate::accounts::{ApiToken, TokenSpec, User};
use crate::devices::*;
use crate::sql::accounts::{insert_token, record_use, user_from};
use chrono::Utc;
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;
fn device_from(row: &AnyRow) -> Result<DeviceRecord, StoreError> {
    let tools: String = row.try_get("tools")?;
    Ok(DeviceRecord {
        owner: row.try_get("owner")?,
        name: row.try_get("name")?,
        tools: serde_json::from_str(&tools).map_err(|e| StoreError::corrupt("device tools", e))?,
        workdir: row.try_get("workdir")?,
        platform: row.try_get("platform")?,
        last_seen: parse_ts(&row.try_get::<String, _>("last_seen")?, "device last_seen")?,
        created_at: parse_ts(
            &row.try_get::<String, _>("created_at")?,
            "device created_at",
        )?,
    })
}

/// The columns of a device row, in [`device_from`]'s order.
macro_rules! columns {
    () => {
        "owner, name, tools, workdir, platform, last_seen, created_at"
    };
}

impl Devices for SqlStore {
    fn add_device_token<'a>(
        &'a self,
        user_id: &'a str,
        token_hash: &'a str,
        device: &'a str,
    ) -> BoxFuture<'a, Result<ApiToken, StoreError>> {
        async move {
            let spec = TokenSpec {
                label: Some(format!("device {device}")),
                ..TokenSpec::default()
            };
            insert_token(self, user_id, token_hash, &spec, Some(device)).await
        }
        .boxed()
    }

    fn device_for_token<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, Result<Option<(User, String)>, StoreError>> {
        async move {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {}, t.device AS device, t.last_used_at AS last_used_at \
                 FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND t.device IS NOT NULL \
                 AND u.disabled_at IS NULL",
                super::accounts::USER_COLUMNS
            )))
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            record_use(self, token_hash, &row).await?;
            Ok(Some((user_from(&row)?, row.try_get("device")?)))
        }
        .boxed()
    }

    fn put_device<'a>(&'a self, d: &'a DeviceRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let tools = serde_json::to_string(&d.tools)
                .map_err(|e| StoreError::corrupt("device tools", e))?;
            sqlx::query(concat!(
                "INSERT INTO devices (",
                columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner, name) DO UPDATE SET \
                 tools = excluded.tools, workdir = excluded.workdir, \
                 platform = excluded.platform, last_seen = excluded.last_seen"
            ))
            .bind(&d.owner)
            .bind(&d.name)
            .bind(tools)
            .bind(d.workdir.clone())
            .bind(d.platform.clone())
            .bind(ts(d.last_seen))
            .bind(ts(d.created_at))
            .execute(&self.pool)
            .await?;
            Ok(())
        }
        .boxed()
    }

    fn device<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<DeviceRecord>, StoreError>> {
        async move {
            sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM devices WHERE owner = $1 AND name = $2"
            ))
            .bind(owner)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(device_from)
            .transpose()
        }
        .boxed()
    }

    fn list_devices<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Vec<DeviceRecord>, StoreError>> {
        async move {
            sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM devices WHERE owner = $1 ORDER BY name"
            ))
            .bind(owner)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(device_from)
            .collect()
        }
        .boxed()
    }

    fn revoke_device<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let mut tx = self.pool.begin().await?;
            let revoked = sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1 WHERE user_id = $2 AND device = $3 \
                 AND revoked_at IS NULL",
            )
            .bind(ts(Utc::now()))
            .bind(owner)
            .bind(name)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let forgotten = sqlx::query("DELETE FROM devices WHERE owner = $1 AND name = $2")
                .bind(owner)
                .bind(name)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(revoked + forgotten > 0)
        }
        .boxed()
    }
}
