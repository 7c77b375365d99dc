//! [`Accounts`] in SQL on both backends: rows mapped to `crate::accounts`'s records, and each
//! method one transaction.

use super::{SqlStore, from_micros, micros, parse_ts, ts};
use crate::StoreError;
use crate::accounts::*;
use chrono::{DateTime, SubsecRound, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use sqlx::Row;
use sqlx::any::AnyRow;
/// Store a new token's hash (`device`: a device token for that device).
pub(crate) async fn insert_token(
    store: &SqlStore,
    user_id: &str,
    token_hash: &str,
    spec: &TokenSpec,
    device: Option<&str>,
) -> Result<ApiToken, StoreError> {
    let token = ApiToken {
        id: new_id("tok"),
        device: device.map(str::to_owned),
        user_id: user_id.to_owned(),
        label: spec.label.clone(),
        created_at: now(),
        last_used_at: None,
        revoked_at: None,
        expires_at: spec.expires_at.map(|t| t.trunc_subsecs(6)),
        scopes: spec.scopes.clone(),
    };
    sqlx::query(
        "INSERT INTO api_tokens (id, user_id, token_hash, label, created_at, device, expires_at, scopes) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&token.id)
    .bind(user_id)
    .bind(token_hash)
    .bind(token.label.clone())
    .bind(ts(token.created_at))
    .bind(device)
    .bind(token.expires_at.map(micros))
    .bind(token.scopes.as_deref().map(scopes_text))
    .execute(&store.pool)
    .await?;
    Ok(token)
}

/// Scopes as stored: their names, comma-separated.
fn scopes_text(scopes: &[TokenScope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn scopes_from(row: &AnyRow) -> Result<Option<Vec<TokenScope>>, StoreError> {
    row.try_get::<Option<String>, _>("scopes")?
        .map(|text| {
            text.split(',')
                .filter(|s| !s.is_empty())
                .map(|s| {
                    s.parse()
                        .map_err(|e| StoreError::corrupt("token scopes", e))
                })
                .collect()
        })
        .transpose()
}

fn opt_instant(row: &AnyRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    row.try_get::<Option<i64>, _>(col)?
        .map(|us| {
            DateTime::from_timestamp_micros(us)
                .ok_or_else(|| StoreError::corrupt(col, format!("{us} is out of range")))
        })
        .transpose()
}

/// How stale a token's recorded last use may get before a use writes it again: a request
/// authenticated by a token that was used within this is answered without a write (on SQLite
/// a write waits for any other writer, a compaction batch say).
const USE_RESOLUTION: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// Note that the token with this hash (its row's `last_used_at` as read: `row`) authenticated
/// something now, to the minute.
pub(crate) async fn record_use(
    store: &SqlStore,
    token_hash: &str,
    row: &AnyRow,
) -> Result<(), StoreError> {
    let now = Utc::now();
    if opt_ts(row, "last_used_at")?.is_some_and(|at| now - at < USE_RESOLUTION) {
        return Ok(());
    }
    sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE token_hash = $2")
        .bind(ts(now))
        .bind(token_hash)
        .execute(&store.pool)
        .await?;
    Ok(())
}

/// The columns of a user row as [`user_from`] reads them, from `users u`.
pub(crate) const USER_COLUMNS: &str = "u.id AS id, u.name AS name, u.created_at AS created_at, u.role AS role, u.disabled_at AS disabled_at, u.caps AS caps";

pub(crate) fn user_from(row: &AnyRow) -> Result<User, StoreError> {
    let role: String = row.try_get("role")?;
    Ok(User {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "user created_at")?,
        role: role
            .parse()
            .map_err(|e| StoreError::corrupt("user role", e))?,
        disabled_at: opt_ts(row, "disabled_at")?,
        caps: row
            .try_get::<Option<String>, _>("caps")?
            .map(|c| serde_json::from_str(&c).map_err(|e| StoreError::corrupt("user caps", e)))
            .transpose()?
            .unwrap_or_default(),
    })
}

fn opt_ts(row: &AnyRow, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
    row.try_get::<Option<String>, _>(col)?
        .map(|t| parse_ts(&t, col))
        .transpose()
}

fn token_from(row: &AnyRow) -> Result<ApiToken, StoreError> {
    Ok(ApiToken {
        id: row.try_get("id")?,
        device: row.try_get("device")?,
        user_id: row.try_get("user_id")?,
        label: row.try_get("label")?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "token created_at")?,
        last_used_at: opt_ts(row, "last_used_at")?,
        revoked_at: opt_ts(row, "revoked_at")?,
        expires_at: opt_instant(row, "expires_at")?,
        scopes: scopes_from(row)?,
    })
}

/// The per-owner, versioned JSON settings that share one shape: agents and groups.
#[derive(Clone, Copy)]
enum Named {
    Agents,
    Groups,
}

impl Named {
    fn table(self) -> &'static str {
        match self {
            Named::Agents => "agents",
            Named::Groups => "agent_groups",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Named::Agents => "agent config",
            Named::Groups => "group config",
        }
    }
}

/// A group as the row shape it shares with agents.
fn row_of(g: &GroupRecord) -> AgentRecord {
    AgentRecord {
        owner: g.owner.clone(),
        name: g.name.clone(),
        config: g.config.clone(),
        version: g.version,
        created_at: g.created_at,
        updated_at: g.updated_at,
    }
}

fn group_of(a: AgentRecord) -> GroupRecord {
    GroupRecord {
        owner: a.owner,
        name: a.name,
        config: a.config,
        version: a.version,
        created_at: a.created_at,
        updated_at: a.updated_at,
    }
}

impl SqlStore {
    /// Set one text column of a user (`None`: NULL); whether there is such a user.
    async fn set_user_text(
        &self,
        user_id: &str,
        column: &'static str,
        value: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE users SET {column} = $1 WHERE id = $2"
        )))
        .bind(value)
        .bind(user_id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(n > 0)
    }

    /// A new user; [`StoreError::Conflict`] when the name (or the OpenID Connect subject) is
    /// taken: either unique column taken inserts nothing, and the caller looks again or tries
    /// another name.
    async fn insert_user(
        &self,
        name: &str,
        role: UserRole,
        subject: Option<&str>,
    ) -> Result<User, StoreError> {
        let user = User {
            id: new_id("usr"),
            name: name.to_owned(),
            created_at: now(),
            role,
            disabled_at: None,
            caps: Caps::default(),
        };
        let inserted = sqlx::query(
            "INSERT INTO users (id, name, created_at, role, oidc_subject) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(&user.id)
        .bind(&user.name)
        .bind(ts(user.created_at))
        .bind(role.as_str())
        .bind(subject)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 0 {
            return Err(StoreError::Conflict(match subject {
                Some(_) => format!("user `{name}` or its sign-in subject"),
                None => format!("user `{name}`"),
            }));
        }
        Ok(user)
    }

    /// The user whose `column` (`id` or `name`, both unique) is `value`.
    async fn user_where(
        &self,
        column: &'static str,
        value: &str,
    ) -> Result<Option<User>, StoreError> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {USER_COLUMNS} FROM users u WHERE u.{column} = $1"
        )))
        .bind(value)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(user_from)
        .transpose()
    }

    /// Create or replace; the version after the write.
    async fn put_named(&self, kind: Named, r: &AgentRecord) -> Result<u64, StoreError> {
        let config =
            serde_json::to_string(&r.config).map_err(|e| StoreError::corrupt(kind.what(), e))?;
        let table = kind.table();
        let mut tx = self.begin_write().await?;
        let version: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {table} (owner, name, config, created_at, updated_at, version) VALUES ($1, $2, $3, $4, $5, 1) \
             ON CONFLICT (owner, name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at, \
             version = {table}.version + 1 RETURNING version"
        )))
        .bind(&r.owner)
        .bind(&r.name)
        .bind(&config)
        .bind(ts(r.created_at))
        .bind(ts(r.updated_at))
        .fetch_one(&mut *tx)
        .await?;
        match kind {
            Named::Agents => {
                sqlx::query(
                    "INSERT INTO agent_versions (owner, name, version, config, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(&r.owner)
                .bind(&r.name)
                .bind(version)
                .bind(&config)
                .bind(micros(r.updated_at))
                .execute(&mut *tx)
                .await?;
            }
            // A group's versions are counted, not kept.
            Named::Groups => {}
        }
        tx.commit().await?;
        Ok(u64::try_from(version).unwrap_or(0))
    }

    async fn get_named(
        &self,
        kind: Named,
        owner: &str,
        name: &str,
    ) -> Result<Option<AgentRecord>, StoreError> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT owner, name, config, created_at, updated_at, version FROM {} WHERE owner = $1 AND name = $2",
            kind.table()
        )))
        .bind(owner)
        .bind(name)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(|r| named_from(r, kind))
        .transpose()
    }

    async fn list_named(&self, kind: Named, owner: &str) -> Result<Vec<AgentRecord>, StoreError> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT owner, name, config, created_at, updated_at, version FROM {} WHERE owner = $1 ORDER BY name",
            kind.table()
        )))
        .bind(owner)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| named_from(r, kind))
        .collect()
    }

    async fn delete_named(&self, kind: Named, owner: &str, name: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let n = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM {} WHERE owner = $1 AND name = $2",
            kind.table()
        )))
        .bind(owner)
        .bind(name)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        match kind {
            // One made again under the name starts at version 1, with a history of its own.
            Named::Agents => {
                sqlx::query("DELETE FROM agent_versions WHERE owner = $1 AND name = $2")
                    .bind(owner)
                    .bind(name)
                    .execute(&mut *tx)
                    .await?;
            }
            Named::Groups => {}
        }
        tx.commit().await?;
        Ok(n > 0)
    }

    async fn versions_of(&self, owner: &str, name: &str) -> Result<Vec<AgentVersion>, StoreError> {
        let rows = sqlx::query(
            "SELECT version, config, created_at FROM agent_versions \
             WHERE owner = $1 AND name = $2 ORDER BY version DESC",
        )
        .bind(owner)
        .bind(name)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let config: String = row.try_get("config")?;
                Ok(AgentVersion {
                    version: u64::try_from(row.try_get::<i64, _>("version")?).unwrap_or(0),
                    config: serde_json::from_str(&config)
                        .map_err(|e| StoreError::corrupt("agent version", e))?,
                    created_at: from_micros(row.try_get("created_at")?, "created_at")?,
                })
            })
            .collect()
    }
}

fn named_from(row: &AnyRow, kind: Named) -> Result<AgentRecord, StoreError> {
    let config: String = row.try_get("config")?;
    Ok(AgentRecord {
        owner: row.try_get("owner")?,
        name: row.try_get("name")?,
        config: serde_json::from_str(&config).map_err(|e| StoreError::corrupt(kind.what(), e))?,
        created_at: parse_ts(&row.try_get::<String, _>("created_at")?, "created_at")?,
        updated_at: parse_ts(&row.try_get::<String, _>("updated_at")?, "updated_at")?,
        version: u64::try_from(row.try_get::<i64, _>("version")?).unwrap_or(0),
    })
}

/// Now, at the precision timestamps are stored with, so a returned record equals a reloaded one.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

impl Accounts for SqlStore {
    fn create_user<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<User, StoreError>> {
        self.insert_user(name, UserRole::Member, None).boxed()
    }

    fn create_oidc_user<'a>(
        &'a self,
        name: &'a str,
        subject: &'a str,
        role: UserRole,
    ) -> BoxFuture<'a, Result<User, StoreError>> {
        self.insert_user(name, role, Some(subject)).boxed()
    }

    fn user_by_oidc_subject<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, Result<Option<User>, StoreError>> {
        self.user_where("oidc_subject", subject).boxed()
    }

    fn user_by_name<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<User>, StoreError>> {
        self.user_where("name", name).boxed()
    }

    fn user_by_id<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<User>, StoreError>> {
        self.user_where("id", id).boxed()
    }

    fn set_caps<'a>(
        &'a self,
        user_id: &'a str,
        caps: &'a Caps,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let text = (*caps != Caps::default())
                .then(|| serde_json::to_string(caps))
                .transpose()
                .map_err(|e| StoreError::corrupt("user caps", e))?;
            self.set_user_text(user_id, "caps", text.as_deref()).await
        }
        .boxed()
    }

    fn set_working_directory<'a>(
        &'a self,
        user_id: &'a str,
        dir: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move { self.set_user_text(user_id, "working_directory", dir).await }.boxed()
    }

    fn working_directory<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        async move {
            let row = sqlx::query("SELECT working_directory FROM users WHERE id = $1")
                .bind(user_id)
                .fetch_optional(&self.pool)
                .await?;
            Ok(match row {
                Some(r) => r.try_get("working_directory")?,
                None => None,
            })
        }
        .boxed()
    }

    fn list_users<'a>(&'a self) -> BoxFuture<'a, Result<Vec<User>, StoreError>> {
        async move {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS} FROM users u ORDER BY u.name"
            )))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(user_from)
            .collect()
        }
        .boxed()
    }

    fn set_role<'a>(
        &'a self,
        user_id: &'a str,
        role: UserRole,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("UPDATE users SET role = $1 WHERE id = $2")
                .bind(role.as_str())
                .bind(user_id)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn set_disabled<'a>(
        &'a self,
        user_id: &'a str,
        disabled: bool,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query("UPDATE users SET disabled_at = $1 WHERE id = $2")
                .bind(disabled.then(|| ts(Utc::now())))
                .bind(user_id)
                .execute(&self.pool)
                .await?
                .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn add_token<'a>(
        &'a self,
        user_id: &'a str,
        token_hash: &'a str,
        spec: &'a TokenSpec,
    ) -> BoxFuture<'a, Result<ApiToken, StoreError>> {
        insert_token(self, user_id, token_hash, spec, None).boxed()
    }

    fn user_for_token<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, Result<Option<TokenHolder>, StoreError>> {
        async move {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS}, t.scopes AS scopes, t.last_used_at AS last_used_at \
                 FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND t.device IS NULL \
                 AND u.disabled_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $2)"
            )))
            .bind(token_hash)
            .bind(micros(Utc::now()))
            .fetch_optional(&self.pool)
            .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            record_use(self, token_hash, &row).await?;
            Ok(Some(TokenHolder {
                user: user_from(&row)?,
                scopes: scopes_from(&row)?,
            }))
        }
        .boxed()
    }

    fn set_password<'a>(
        &'a self,
        user_id: &'a str,
        password_hash: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            self.set_user_text(user_id, "password_hash", password_hash)
                .await
        }
        .boxed()
    }

    fn user_with_password<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<PasswordHolder>, StoreError>> {
        async move {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {USER_COLUMNS}, u.password_hash AS password_hash FROM users u WHERE u.name = $1"
            )))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
            row.map(|r| {
                Ok(PasswordHolder {
                    user: user_from(&r)?,
                    password_hash: r.try_get("password_hash")?,
                })
            })
            .transpose()
        }
        .boxed()
    }

    fn list_tokens<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ApiToken>, StoreError>> {
        async move {
            sqlx::query(
                "SELECT id, device, user_id, label, created_at, last_used_at, revoked_at, expires_at, scopes FROM api_tokens \
                 WHERE user_id = $1 ORDER BY created_at DESC, id DESC",
            )
            .bind(user_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(token_from)
            .collect()
        }
        .boxed()
    }

    fn revoke_token<'a>(
        &'a self,
        user_id: &'a str,
        token_id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL",
            )
            .bind(ts(Utc::now()))
            .bind(token_id)
            .bind(user_id)
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn revoke_token_hash<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        async move {
            let n = sqlx::query(
                "UPDATE api_tokens SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL",
            )
            .bind(ts(Utc::now()))
            .bind(token_hash)
            .execute(&self.pool)
            .await?
            .rows_affected();
            Ok(n > 0)
        }
        .boxed()
    }

    fn put_agent<'a>(&'a self, agent: &'a AgentRecord) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.put_named(Named::Agents, agent).boxed()
    }

    fn get_agent<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<AgentRecord>, StoreError>> {
        self.get_named(Named::Agents, owner, name).boxed()
    }

    fn list_agents<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AgentRecord>, StoreError>> {
        self.list_named(Named::Agents, owner).boxed()
    }

    fn delete_agent<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.delete_named(Named::Agents, owner, name).boxed()
    }

    fn agent_versions<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<AgentVersion>, StoreError>> {
        self.versions_of(owner, name).boxed()
    }

    fn put_group<'a>(&'a self, group: &'a GroupRecord) -> BoxFuture<'a, Result<u64, StoreError>> {
        async move { self.put_named(Named::Groups, &row_of(group)).await }.boxed()
    }

    fn get_group<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<GroupRecord>, StoreError>> {
        async move {
            Ok(self
                .get_named(Named::Groups, owner, name)
                .await?
                .map(group_of))
        }
        .boxed()
    }

    fn list_groups<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Vec<GroupRecord>, StoreError>> {
        async move {
            Ok(self
                .list_named(Named::Groups, owner)
                .await?
                .into_iter()
                .map(group_of)
                .collect())
        }
        .boxed()
    }

    fn delete_group<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.delete_named(Named::Groups, owner, name).boxed()
    }
}
