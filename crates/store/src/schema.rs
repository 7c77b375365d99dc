//! The schema's migrations as this build knows them: the embedded SQL of each version, what
//! each backend does its own way, the data conversions that run in code, and which migrations
//! older binaries survive ([`Schema`]). The runner that applies them, one process at a time,
//! is [`crate::migrate`]. Embedded SQL instead of sqlx's `Migrator`, whose embedded form needs
//! its proc macro (and whose fields are not a stable API).

use crate::error::StoreError;

/// What a migration does differently per backend, after its shared SQL and in the same
/// transaction: `(version, SQLite's, PostgreSQL's)`.
const PER_BACKEND: &[(i64, &str, &str)] = &[
    (
        16,
        include_str!("../migrations/0016_knowledge_sqlite.sql"),
        include_str!("../migrations/0016_knowledge_postgres.sql"),
    ),
    (
        17,
        include_str!("../migrations/0017_knowledge_ingestion_sqlite.sql"),
        include_str!("../migrations/0017_knowledge_ingestion_postgres.sql"),
    ),
    (
        18,
        include_str!("../migrations/0018_memories_sqlite.sql"),
        include_str!("../migrations/0018_memories_postgres.sql"),
    ),
    (
        32,
        include_str!("../migrations/0032_files_sqlite.sql"),
        include_str!("../migrations/0032_files_postgres.sql"),
    ),
];

/// The end of migration 11, run after the instants are converted in code.
const INSTANTS_FINISH: &str = include_str!("../migrations/0011_instants_finish.sql");

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
    (
        9,
        "operation message order and tool manifests out of the state",
        include_str!("../migrations/0009_operation_messages.sql"),
    ),
    (
        10,
        "sub-agents (operation roots and depths, threads) and groups",
        include_str!("../migrations/0010_sub_agents.sql"),
    ),
    (
        11,
        "instants compared by statements as integer microseconds",
        include_str!("../migrations/0011_instants.sql"),
    ),
    (
        12,
        "briefs, brief hooks and their deliveries",
        include_str!("../migrations/0012_briefs.sql"),
    ),
    (
        13,
        "task run handoffs",
        include_str!("../migrations/0013_run_handoffs.sql"),
    ),
    (
        14,
        "topics' active branch and title source",
        include_str!("../migrations/0014_topic_tree.sql"),
    ),
    (
        15,
        "devices and device tokens",
        include_str!("../migrations/0015_devices.sql"),
    ),
    (
        16,
        "knowledge bases, their files and chunks",
        include_str!("../migrations/0016_knowledge.sql"),
    ),
    (
        17,
        "knowledge embeddings and ingestion jobs",
        include_str!("../migrations/0017_knowledge_ingestion.sql"),
    ),
    (
        18,
        "memories extracted from conversations",
        include_str!("../migrations/0018_memories.sql"),
    ),
    (
        19,
        "memories private to an agent",
        include_str!("../migrations/0019_agent_memories.sql"),
    ),
    (
        20,
        "grants, and why a pending call asks",
        include_str!("../migrations/0020_grants_and_reasons.sql"),
    ),
    (
        21,
        "one operation at a time per conversation: queued operations",
        include_str!("../migrations/0021_topic_queue.sql"),
    ),
    (
        22,
        "the start of what each operation was asked",
        include_str!("../migrations/0022_operation_prompt.sql"),
    ),
    (
        23,
        "sign-ins from another device (rein login)",
        include_str!("../migrations/0023_logins.sql"),
    ),
    (
        24,
        "roles, and disabled users",
        include_str!("../migrations/0024_roles.sql"),
    ),
    (
        25,
        "passwords, browser sessions, token expiry and scopes",
        include_str!("../migrations/0025_sessions.sql"),
    ),
    (
        26,
        "per-user caps over the server's defaults",
        include_str!("../migrations/0026_user_caps.sql"),
    ),
    (
        27,
        "providers users bring: their own base URLs and sealed API keys",
        include_str!("../migrations/0027_own_providers.sql"),
    ),
    (
        28,
        "users who sign in through an OpenID Connect provider",
        include_str!("../migrations/0028_oidc_subjects.sql"),
    ),
    (
        29,
        "the working directory each user chose",
        include_str!("../migrations/0029_user_workdirs.sql"),
    ),
    (
        30,
        "failed sign-ins, counted across servers",
        include_str!("../migrations/0030_sign_in_failures.sql"),
    ),
    (
        31,
        "MCP servers users define, their headers sealed",
        include_str!("../migrations/0031_own_mcp_servers.sql"),
    ),
    (
        32,
        "files users upload to send with a message",
        include_str!("../migrations/0032_files.sql"),
    ),
    (
        33,
        "what Responses API requests asked for",
        include_str!("../migrations/0033_responses.sql"),
    ),
    (
        34,
        "every version of an agent's configuration",
        include_str!("../migrations/0034_agent_versions.sql"),
    ),
    (
        35,
        "where A2A clients are told of their tasks' updates",
        include_str!("../migrations/0035_a2a_push.sql"),
    ),
    (
        36,
        "goals: graphs of works planned, run, verified and accepted",
        include_str!("../migrations/0036_goals.sql"),
    ),
    (
        37,
        "each step keeps what rebuilding the state after it needs",
        include_str!("../migrations/0037_step_checkpoints.sql"),
    ),
    (
        38,
        "what replayed model calls spent",
        include_str!("../migrations/0038_model_replays.sql"),
    ),
    (
        39,
        "evaluation runs",
        include_str!("../migrations/0039_eval_runs.sql"),
    ),
    (
        40,
        "files tool calls produced",
        include_str!("../migrations/0040_artifacts.sql"),
    ),
    (
        41,
        "the outside job a tool call waits for",
        include_str!("../migrations/0041_tool_jobs.sql"),
    ),
    (
        42,
        "MCP tool definitions pinned",
        include_str!("../migrations/0042_mcp_pins.sql"),
    ),
    (
        43,
        "an index for the live leases of an owner",
        include_str!("../migrations/0043_lease_by_owner.sql"),
    ),
    (
        44,
        "each distinct set of tool manifests stored once",
        include_str!("../migrations/0044_tool_manifest_sets.sql"),
    ),
];

/// The migration after whose SQL [`split_states`] runs, in the same transaction.
const SPLIT_STATES: i64 = 9;

/// The migration after whose SQL [`convert_instants`] runs, in the same transaction.
const INSTANTS: i64 = 11;

/// Convert migration 11's instants from RFC 3339 text into integer microseconds, then finish
/// the migration (drop the text columns, rename the new ones). A value that does not parse
/// fails the migration, naming the row, and nothing is changed.
async fn convert_instants(tx: &mut sqlx::AnyConnection) -> Result<(), StoreError> {
    use sqlx::Row;
    let fail = |what: String| StoreError::Migration {
        version: INSTANTS,
        message: what,
    };
    let micros = |text: Option<String>, what: &str| -> Result<Option<i64>, StoreError> {
        text.map(|t| {
            chrono::DateTime::parse_from_rfc3339(&t)
                .map(|t| t.timestamp_micros())
                .map_err(|e| fail(format!("{what} {t:?}: {e}")))
        })
        .transpose()
    };
    let mut after = String::new();
    loop {
        let rows: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT id, lease_until, recovery_retry_at FROM operations \
             WHERE id > $1 AND (lease_until IS NOT NULL OR recovery_retry_at IS NOT NULL) \
             ORDER BY id LIMIT 200",
        )
        .bind(&after)
        .fetch_all(&mut *tx)
        .await?;
        let Some((last, _, _)) = rows.last() else {
            break;
        };
        after = last.clone();
        for (id, lease, retry) in rows {
            sqlx::query(
                "UPDATE operations SET lease_until_us = $1, recovery_retry_at_us = $2 WHERE id = $3",
            )
            .bind(micros(lease, &format!("operation {id} lease_until"))?)
            .bind(micros(retry, &format!("operation {id} recovery_retry_at"))?)
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        }
    }
    let mut offset = 0_i64;
    loop {
        let rows = sqlx::query(
            "SELECT task_id, due_at, kind, generation, status, claimed_by, lease_until, reason, \
             operation_id, created_at FROM task_deliveries ORDER BY task_id, due_at, kind \
             LIMIT 200 OFFSET $1",
        )
        .bind(offset)
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() {
            break;
        }
        offset += i64::try_from(rows.len()).unwrap_or(i64::MAX);
        for row in rows {
            let task: String = row.try_get("task_id")?;
            let due = micros(
                row.try_get("due_at")?,
                &format!("task {task} delivery due_at"),
            )?;
            let lease = micros(
                row.try_get("lease_until")?,
                &format!("task {task} delivery lease_until"),
            )?;
            sqlx::query(
                "INSERT INTO task_deliveries_v11 (task_id, due_at, kind, generation, status, \
                 claimed_by, lease_until, reason, operation_id, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(&task)
            .bind(due)
            .bind(row.try_get::<String, _>("kind")?)
            .bind(row.try_get::<String, _>("generation")?)
            .bind(row.try_get::<String, _>("status")?)
            .bind(row.try_get::<Option<String>, _>("claimed_by")?)
            .bind(lease)
            .bind(row.try_get::<Option<String>, _>("reason")?)
            .bind(row.try_get::<Option<String>, _>("operation_id")?)
            .bind(row.try_get::<String, _>("created_at")?)
            .execute(&mut *tx)
            .await?;
        }
    }
    for stmt in statements(INSTANTS_FINISH) {
        sqlx::query(sqlx::AssertSqlSafe(stmt))
            .execute(&mut *tx)
            .await
            .map_err(|e| fail(e.to_string()))?;
    }
    Ok(())
}

/// Move each operation's message id list (`message_ids`) and tool manifests out of its stored
/// state into `operation_messages` and `operation_setup` (migration 9). Rows are
/// read in pages so a large database is not held in memory at once.
async fn split_states(tx: &mut sqlx::AnyConnection) -> Result<(), StoreError> {
    let fail = |e: &dyn std::fmt::Display| StoreError::Migration {
        version: SPLIT_STATES,
        message: e.to_string(),
    };
    let mut after = String::new();
    loop {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, state FROM operations WHERE id > $1 ORDER BY id LIMIT 200")
                .bind(&after)
                .fetch_all(&mut *tx)
                .await?;
        let Some((last, _)) = rows.last() else {
            return Ok(());
        };
        after = last.clone();
        for (id, text) in rows {
            let mut state: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| fail(&format!("operation {id}: {e}")))?;
            let Some(obj) = state.as_object_mut() else {
                continue;
            };
            let ids = obj.remove("message_ids");
            let manifests = obj.remove("tool_manifests");
            if let Some(serde_json::Value::Array(ids)) = ids {
                for (ordinal, m) in ids.iter().enumerate() {
                    sqlx::query("INSERT INTO operation_messages (operation_id, ordinal, message_id) VALUES ($1, $2, $3) ON CONFLICT (operation_id, ordinal) DO NOTHING")
                        .bind(&id)
                        .bind(i64::try_from(ordinal).unwrap_or(i64::MAX))
                        .bind(m.as_str().unwrap_or_default().to_owned())
                        .execute(&mut *tx)
                        .await?;
                }
            }
            sqlx::query("UPDATE operations SET state = $1 WHERE id = $2")
                .bind(state.to_string())
                .bind(&id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE operation_setup SET tool_manifests = $1 WHERE operation_id = $2")
                .bind(manifests.map(|m| m.to_string()))
                .bind(&id)
                .execute(&mut *tx)
                .await?;
        }
    }
}

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

/// Migrations whose changes binaries that predate them ignore (new tables, new nullable
/// columns, new indexes): a binary that knows the migration before one of these keeps running
/// against a database that has it, which is what lets old and new replicas share a database
/// during a rolling upgrade (see `docs/deploy.md`). Every other migration is a contraction:
/// binaries that predate it refuse the database. Migrations 1 to 21 predate the check and
/// count as contractions.
const EXPANSIONS: &[i64] = &[22, 43];

/// One migration as this build applies it on one backend.
#[derive(Clone, Debug)]
pub struct Migration {
    /// Its version: migrations apply in this order.
    pub version: i64,
    /// What it changes, in a few words.
    pub description: &'static str,
    /// Its statements, in order: the shared ones, then this backend's own.
    statements: Vec<String>,
    /// Whether binaries that predate it keep working on a database that has it.
    pub expands: bool,
}

impl Migration {
    /// The SHA-256 of its statements as they run (comments excluded, so a reworded comment
    /// is not a changed migration), in hex.
    pub fn checksum(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for s in &self.statements {
            h.update(s.as_bytes());
            h.update(b"\n;\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The migrations a build knows, in order: what [`crate::SqlStore::open`] brings a database
/// up to, and what it checks a database's applied migrations against.
#[derive(Clone, Debug)]
pub struct Schema {
    pub(crate) migrations: Vec<Migration>,
}

impl Schema {
    /// This build's migrations for one database.
    pub fn current(dialect: crate::Dialect) -> Self {
        let migrations = MIGRATIONS
            .iter()
            .map(|(version, description, sql)| {
                let own =
                    PER_BACKEND
                        .iter()
                        .filter(|(v, ..)| v == version)
                        .map(|(_, sqlite, pg)| match dialect {
                            crate::Dialect::Postgres => *pg,
                            crate::Dialect::Sqlite => *sqlite,
                        });
                Migration {
                    version: *version,
                    description,
                    statements: statements(sql).chain(own.flat_map(statements)).collect(),
                    expands: EXPANSIONS.contains(version),
                }
            })
            .collect();
        Self { migrations }
    }

    /// Its migrations, in order.
    pub fn migrations(&self) -> &[Migration] {
        &self.migrations
    }

    /// The newest version this build knows.
    pub fn latest(&self) -> i64 {
        self.migrations.last().map_or(0, |m| m.version)
    }

    /// The migrations as a build that stopped at `version` knew them (tests play an older
    /// build with it).
    #[doc(hidden)]
    pub fn up_to(mut self, version: i64) -> Self {
        self.migrations.retain(|m| m.version <= version);
        self
    }

    /// These migrations and one more after them (tests play a newer build with it).
    #[doc(hidden)]
    pub fn and_then(mut self, description: &'static str, sql: &str, expands: bool) -> Self {
        let version = self.latest() + 1;
        self.migrations.push(Migration {
            version,
            description,
            statements: statements(sql).collect(),
            expands,
        });
        self
    }

    /// The oldest schema version a binary must know to run against a database whose
    /// migrations end with `version`: a contraction raises it to itself, an expansion keeps
    /// what the migration before it needed.
    pub(crate) fn oldest_binary(&self, version: i64) -> i64 {
        let mut oldest = 0;
        for m in self.migrations.iter().take_while(|m| m.version <= version) {
            if !m.expands {
                oldest = m.version;
            }
        }
        oldest
    }

    /// What runs after migration `version`'s statements, in the same transaction.
    pub(crate) async fn after(
        version: i64,
        conn: &mut sqlx::AnyConnection,
    ) -> Result<(), StoreError> {
        match version {
            SPLIT_STATES => split_states(conn).await,
            INSTANTS => convert_instants(conn).await,
            _ => Ok(()),
        }
    }

    /// Its statements, for the runner.
    pub(crate) fn statements_of(m: &Migration) -> &[String] {
        &m.statements
    }
}

#[cfg(test)]
mod tests {
    use super::{INSTANTS, INSTANTS_FINISH, MIGRATIONS, PER_BACKEND};

    /// A migration file nobody registered would never run: every file under `migrations/` is
    /// embedded in [`MIGRATIONS`] or [`PER_BACKEND`], under the version its name starts with.
    #[test]
    fn every_migration_file_is_registered_under_its_version() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("migrations/") {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).expect("a migration file");
            let version: i64 = name
                .split('_')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name}: name it NNNN_what.sql"));
            let shared = MIGRATIONS
                .iter()
                .any(|(v, _, sql)| *v == version && *sql == text);
            let per_backend = PER_BACKEND
                .iter()
                .any(|(v, sqlite, pg)| *v == version && (*sqlite == text || *pg == text));
            let finishing = version == INSTANTS && text == INSTANTS_FINISH;
            assert!(
                shared || per_backend || finishing,
                "{name} is not registered in crates/store/src/schema.rs under version {version}"
            );
            files += 1;
        }
        let embedded = MIGRATIONS.len() + 2 * PER_BACKEND.len() + 1;
        assert_eq!(
            files, embedded,
            "every embedded migration is a file of its own"
        );
    }
}
