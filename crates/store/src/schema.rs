//! Schema migrations, embedded and applied in order inside transactions. A small runner over
//! embedded SQL instead of sqlx's `Migrator`, whose embedded form needs its proc macro (and
//! whose fields are not a stable API).

use crate::error::StoreError;
use sqlx::AnyPool;

/// `(version, description, sql)`, applied in order.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial", include_str!("../migrations/0001_initial.sql")),
    (
        2,
        "documents",
        include_str!("../migrations/0002_documents.sql"),
    ),
    (
        3,
        "document embeddings",
        include_str!("../migrations/0003_document_embeddings.sql"),
    ),
    (
        4,
        "accounts",
        include_str!("../migrations/0004_accounts.sql"),
    ),
    (5, "tasks", include_str!("../migrations/0005_tasks.sql")),
    (
        6,
        "operation leases",
        include_str!("../migrations/0006_operation_leases.sql"),
    ),
    (
        7,
        "operation spec and agent versions",
        include_str!("../migrations/0007_operation_spec.sql"),
    ),
    (
        8,
        "recovery notes and admission",
        include_str!("../migrations/0008_recovery_and_admission.sql"),
    ),
];

/// Statements of a migration (split on `;` at line ends; the files hold no procedural code).
fn statements(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.split(";\n")
        .map(|s| {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|s| !s.trim().is_empty())
}

/// Bring the schema up to date.
pub async fn migrate(pool: &AnyPool) -> Result<(), StoreError> {
    sqlx::query("CREATE TABLE IF NOT EXISTS rein_schema (version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)")
        .execute(pool)
        .await?;
    for (version, description, sql) in MIGRATIONS {
        let mut tx = pool.begin().await?;
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT version FROM rein_schema WHERE version = $1")
                .bind(*version)
                .fetch_optional(&mut *tx)
                .await?;
        if applied.is_some() {
            continue;
        }
        for stmt in statements(sql) {
            sqlx::query(sqlx::AssertSqlSafe(stmt))
                .execute(&mut *tx)
                .await
                .map_err(|e| StoreError::Migration {
                    version: *version,
                    message: e.to_string(),
                })?;
        }
        sqlx::query(
            "INSERT INTO rein_schema (version, description, applied_at) VALUES ($1, $2, $3)",
        )
        .bind(*version)
        .bind(*description)
        .bind(chrono::Utc::now().to_rfc3339())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }
    Ok(())
}
