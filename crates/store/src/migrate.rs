//! Bringing a database's schema up to date, safely when several processes start at once.
//!
//! Any process may be the one that migrates (`rein serve`, `rein worker`, any CLI command):
//! the run holds the schema's lock for its whole length (PostgreSQL: a transaction-scoped
//! advisory lock on the schema's name; SQLite: one `BEGIN IMMEDIATE` transaction, waited for
//! under the busy timeout), so the others wait, then find the schema current and go on. Each
//! applied migration is recorded in `rein_schema` with the checksum of its statements and the
//! oldest binary that may still run against it; every start checks the record against what
//! this build knows, before writing anything:
//! - an applied migration whose statements differ from this build's is refused
//!   ([`StoreError::MigrationChanged`]), and so is one this build does not know that is
//!   older than its newest ([`StoreError::UnknownMigration`]);
//! - a database migrated past what this build knows is refused, naming both versions
//!   ([`StoreError::SchemaTooNew`]), unless every newer migration is an expansion this build
//!   survives (see [`crate::Schema`]): then it runs, and says so in the log.
//!
//! A start that finds the schema current reads `rein_schema` and takes no lock.

use crate::error::StoreError;
use crate::schema::{Migration, Schema};
use sqlx::{AnyPool, Row};
use std::time::{Duration, Instant};

/// What `rein_schema` says of one applied migration.
#[derive(Debug)]
struct Applied {
    version: i64,
    description: String,
    /// Missing on rows written before checksums were recorded (filled in on the next run).
    checksum: Option<String>,
    oldest_binary: Option<i64>,
}

/// How long a process waits for another's migration run on SQLite before it gives up (a
/// PostgreSQL advisory lock is waited for as long as it is held).
const SQLITE_WAIT: Duration = Duration::from_secs(600);

/// Bring the schema up to `schema` on a `dialect` database.
pub(crate) async fn migrate(
    pool: &AnyPool,
    dialect: crate::Dialect,
    schema: &Schema,
) -> Result<(), StoreError> {
    // The common case: the schema is current and nothing needs the lock.
    if let Some(applied) = read_applied(pool, dialect).await?
        && pending(schema, &applied)?.is_empty()
    {
        return Ok(());
    }
    let mut tx = begin_locked(pool, dialect).await?;
    bookkeeping(&mut tx, dialect, schema).await?;
    let applied = read_applied_in(&mut tx).await?;
    // Checked again under the lock: another process may have migrated meanwhile.
    for m in pending(schema, &applied)? {
        tracing::info!(
            version = m.version,
            description = m.description,
            "applying migration"
        );
        for stmt in Schema::statements_of(m) {
            sqlx::query(sqlx::AssertSqlSafe(stmt.clone()))
                .execute(&mut *tx)
                .await
                .map_err(|e| StoreError::Migration {
                    version: m.version,
                    message: e.to_string(),
                })?;
        }
        Schema::after(m.version, &mut tx).await?;
        sqlx::query(
            "INSERT INTO rein_schema (version, description, applied_at, checksum, oldest_binary) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(m.version)
        .bind(m.description)
        .bind(chrono::Utc::now().to_rfc3339())
        .bind(m.checksum())
        .bind(schema.oldest_binary(m.version))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The migrations of `schema` not yet applied, after checking what was applied against it.
fn pending<'s>(schema: &'s Schema, applied: &[Applied]) -> Result<Vec<&'s Migration>, StoreError> {
    let latest = schema.latest();
    let mut newer: Option<(i64, i64)> = None;
    for a in applied {
        match schema.migrations.iter().find(|m| m.version == a.version) {
            Some(m) => {
                if let Some(stored) = &a.checksum
                    && *stored != m.checksum()
                {
                    return Err(StoreError::MigrationChanged {
                        version: a.version,
                        description: a.description.clone(),
                    });
                }
            }
            None if a.version > latest => {
                let needs = a.oldest_binary.unwrap_or(a.version);
                let (top, most) = newer.unwrap_or((0, 0));
                newer = Some((top.max(a.version), most.max(needs)));
            }
            None => {
                return Err(StoreError::UnknownMigration {
                    version: a.version,
                    description: a.description.clone(),
                });
            }
        }
    }
    if let Some((database, needs)) = newer {
        if needs > latest {
            return Err(StoreError::SchemaTooNew {
                database,
                binary: latest,
                needs,
            });
        }
        tracing::warn!(
            database,
            binary = latest,
            "the database's schema is newer than this rein knows; its newer migrations only \
             add what this rein ignores, so it runs: upgrade it to the release that migrated"
        );
    }
    Ok(schema
        .migrations
        .iter()
        .filter(|m| !applied.iter().any(|a| a.version == m.version))
        .collect())
}

/// `rein_schema` without taking a lock, or `None` when it is missing or predates checksums
/// (a migration run under the lock then creates or completes it).
async fn read_applied(
    pool: &AnyPool,
    dialect: crate::Dialect,
) -> Result<Option<Vec<Applied>>, StoreError> {
    let mut conn = pool.acquire().await?;
    let columns = schema_columns(&mut conn, dialect).await?;
    if !["checksum", "oldest_binary"]
        .iter()
        .all(|c| columns.iter().any(|have| have == c))
    {
        return Ok(None);
    }
    read_applied_in(&mut conn).await.map(Some)
}

/// The columns `rein_schema` has (none when it is missing).
async fn schema_columns(
    conn: &mut sqlx::AnyConnection,
    dialect: crate::Dialect,
) -> Result<Vec<String>, StoreError> {
    let sql = match dialect {
        crate::Dialect::Postgres => {
            "SELECT column_name::TEXT FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = 'rein_schema'"
        }
        crate::Dialect::Sqlite => "SELECT name FROM pragma_table_info('rein_schema')",
    };
    Ok(sqlx::query_scalar(sql).fetch_all(&mut *conn).await?)
}

async fn read_applied_in(conn: &mut sqlx::AnyConnection) -> Result<Vec<Applied>, StoreError> {
    let rows = sqlx::query(
        "SELECT version, description, checksum, oldest_binary FROM rein_schema ORDER BY version",
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Applied {
                version: r.try_get("version")?,
                description: r.try_get("description")?,
                checksum: r.try_get("checksum")?,
                oldest_binary: r.try_get("oldest_binary")?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(StoreError::from)
}

/// A transaction that holds the schema's lock until it ends.
async fn begin_locked(
    pool: &AnyPool,
    dialect: crate::Dialect,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
    match dialect {
        crate::Dialect::Postgres => {
            let mut tx = pool.begin().await?;
            // One lock per schema: deployments in other schemas of the database do not wait.
            sqlx::query(
                "SELECT pg_advisory_xact_lock(hashtext('rein_schema ' || current_schema()))",
            )
            .execute(&mut *tx)
            .await?;
            return Ok(tx);
        }
        // Below: the file's write lock, waited for.
        crate::Dialect::Sqlite => {}
    }
    let started = Instant::now();
    loop {
        match pool.begin_with("BEGIN IMMEDIATE").await {
            Ok(tx) => return Ok(tx),
            // Another process's migration run holds the write lock past the busy timeout.
            Err(e) if busy(&e) && started.elapsed() < SQLITE_WAIT => {
                tracing::info!("waiting for another process to finish migrating the database");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// SQLite's "the database is busy" or "locked".
fn busy(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| matches!(c.as_ref(), "5" | "6" | "261" | "262" | "517"))
}

/// Create `rein_schema` if missing, add the columns builds before checksums lacked, and fill
/// them in for the migrations this build knows (what an older build recorded is taken as
/// what this one carries).
async fn bookkeeping(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    dialect: crate::Dialect,
    schema: &Schema,
) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS rein_schema (version BIGINT PRIMARY KEY, \
         description TEXT NOT NULL, applied_at TEXT NOT NULL, checksum TEXT, oldest_binary BIGINT)",
    )
    .execute(&mut **tx)
    .await?;
    let columns = schema_columns(tx, dialect).await?;
    for (column, ty) in [("checksum", "TEXT"), ("oldest_binary", "BIGINT")] {
        if !columns.iter().any(|c| c == column) {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE rein_schema ADD COLUMN {column} {ty}"
            )))
            .execute(&mut **tx)
            .await?;
        }
    }
    for m in &schema.migrations {
        sqlx::query(
            "UPDATE rein_schema SET checksum = $1, oldest_binary = $2 \
             WHERE version = $3 AND checksum IS NULL",
        )
        .bind(m.checksum())
        .bind(schema.oldest_binary(m.version))
        .bind(m.version)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// A migration applied to the database, as `rein_schema` records it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AppliedMigration {
    /// Its version.
    pub version: i64,
    /// What it changed.
    pub description: String,
    /// When (RFC 3339).
    pub applied_at: String,
}

impl crate::SqlStore {
    /// The migrations applied to this database, oldest first (the schema's newest version is
    /// the last one's); what a build knows is [`Schema::latest`].
    pub async fn migrations_applied(&self) -> Result<Vec<AppliedMigration>, StoreError> {
        let rows = sqlx::query(
            "SELECT version, description, applied_at FROM rein_schema ORDER BY version",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(AppliedMigration {
                    version: r.try_get("version")?,
                    description: r.try_get("description")?,
                    applied_at: r.try_get("applied_at")?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(StoreError::from)
    }
}
