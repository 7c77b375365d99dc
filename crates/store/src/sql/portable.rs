//! [`Portable`] in SQL on both backends. Which rows are a user's is one `WHERE` per table
//! ([`TABLES`]); rows are read column by column into JSON and written back with each value
//! bound as the loading database's column type says.

use super::SqlStore;
use crate::StoreError;
use crate::portable::*;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt};
use serde_json::{Map, Value};
use sqlx::any::AnyRow;
use sqlx::{Column, Row};

const OPS: &str = "operation_id IN (SELECT id FROM operations WHERE owner = $1)";
const TOPICS: &str = "topic_id IN (SELECT id FROM topics WHERE owner = $1)";
const BASES: &str = "kb_id IN (SELECT id FROM knowledge_bases WHERE owner = $1)";
const TASKS: &str = "task_id IN (SELECT id FROM tasks WHERE owner = $1)";

/// Each table of a user's data with the condition that picks their rows (`$1`: their id), in
/// the order an import loads them.
pub(crate) const TABLES: &[(&str, &str)] = &[
    ("agents", "owner = $1"),
    ("agent_versions", "owner = $1"),
    ("agent_groups", "owner = $1"),
    ("topics", "owner = $1"),
    ("messages", TOPICS),
    ("threads", TOPICS),
    ("operations", "owner = $1"),
    ("operation_setup", OPS),
    ("operation_steps", OPS),
    ("operation_events", OPS),
    ("operation_messages", OPS),
    ("tool_executions", OPS),
    ("interventions", OPS),
    ("memory_extractions", OPS),
    ("memories", "owner = $1"),
    ("memory_settings", "owner = $1"),
    (
        "documents",
        "(scope = 'user:' || $1 OR scope LIKE 'user:' || $1 || '/%')",
    ),
    ("knowledge_bases", "owner = $1"),
    ("knowledge_files", BASES),
    ("knowledge_chunks", BASES),
    ("knowledge_vectors", BASES),
    ("grants", "owner = $1"),
    ("tasks", "owner = $1"),
    ("task_runs", TASKS),
    ("task_deliveries", TASKS),
    ("briefs", "owner = $1"),
    ("brief_notices", "owner = $1"),
    ("brief_hooks", "owner = $1"),
    ("responses", "owner = $1"),
    ("a2a_push_configs", "owner = $1"),
    ("goals", "owner = $1"),
    (
        "goal_events",
        "goal_id IN (SELECT id FROM goals WHERE owner = $1)",
    ),
    ("files", "owner = $1"),
    ("file_blobs", "owner = $1"),
    ("artifacts", "owner = $1"),
    ("model_replays", "owner = $1"),
    ("eval_runs", "owner = $1"),
];

/// One operation's rows (`$1`: its id): its conversation (the topic and its own messages, not
/// its sub-agents' threads) and everything the operation recorded, in the order they load.
pub(crate) const OPERATION_TABLES: &[(&str, &str)] = &[
    (
        "topics",
        "id = (SELECT topic_id FROM operations WHERE id = $1)",
    ),
    (
        "messages",
        "thread_id IS NULL AND topic_id = (SELECT topic_id FROM operations WHERE id = $1)",
    ),
    ("operations", "id = $1"),
    ("operation_setup", "operation_id = $1"),
    ("operation_steps", "operation_id = $1"),
    ("operation_events", "operation_id = $1"),
    ("operation_messages", "operation_id = $1"),
    ("tool_executions", "operation_id = $1"),
    ("interventions", "operation_id = $1"),
];

/// Columns a database derives from others: never exported, made again where they load (an
/// operation's manifest set: its manifests are exported inline, see [`EXPORTED_AS`]).
const DERIVED: &[(&str, &str)] = &[
    ("knowledge_chunks", "tsv"),
    ("knowledge_chunks", "fts_rowid"),
    ("knowledge_vectors", "embedding"),
    ("knowledge_vectors", "dims"),
    ("operation_setup", "manifests_hash"),
];

/// Columns exported as an expression rather than as stored: an operation's tool manifests are
/// its set's, written inline, so an archive holds all an operation needs and an import never
/// writes a set (`manifest_sets.rs`).
const EXPORTED_AS: &[(&str, &str, &str)] = &[(
    "operation_setup",
    "tool_manifests",
    super::manifest_sets::EXPORTED_MANIFESTS,
)];

/// Columns an import clears: who held an operation or a delivery in the old database.
const CLEARED: &[(&str, &str)] = &[
    ("operations", "lease_owner"),
    ("operations", "lease_until"),
    ("task_deliveries", "claimed_by"),
    ("task_deliveries", "lease_until"),
];

fn value_of(row: &AnyRow, i: usize) -> Result<Value, StoreError> {
    if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
        return Ok(v.map_or(Value::Null, Value::from));
    }
    if let Ok(v) = row.try_get::<Option<f64>, _>(i) {
        return Ok(v.map_or(Value::Null, Value::from));
    }
    if let Ok(v) = row.try_get::<Option<String>, _>(i) {
        return Ok(v.map_or(Value::Null, Value::from));
    }
    let bytes: Option<Vec<u8>> = row.try_get(i)?;
    Ok(bytes.map_or(
        Value::Null,
        |b| serde_json::json!({ "base64": B64.encode(b) }),
    ))
}

/// How the loading database stores a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Bytes,
    Text,
}

fn kind_of(declared: &str) -> Kind {
    let d = declared.to_ascii_uppercase();
    if d.contains("INT") {
        Kind::Int
    } else if d.contains("BLOB") || d.contains("BYTEA") {
        Kind::Bytes
    } else if d.contains("DOUBLE")
        || d.contains("REAL")
        || d.contains("FLOAT")
        || d.contains("NUMERIC")
    {
        Kind::Float
    } else {
        Kind::Text
    }
}

impl SqlStore {
    /// The columns of `table` here with how each is stored (generated and derived ones left
    /// out).
    async fn columns_of(
        &self,
        tx: &mut sqlx::AnyConnection,
        table: &str,
    ) -> Result<Vec<(String, Kind)>, StoreError> {
        let rows = match self.dialect {
            crate::Dialect::Sqlite => {
                sqlx::query("SELECT name, type FROM pragma_table_info($1)")
                    .bind(table)
                    .fetch_all(&mut *tx)
                    .await?
            }
            crate::Dialect::Postgres => {
                sqlx::query(
                    "SELECT column_name::text AS name, data_type::text AS type \
                     FROM information_schema.columns \
                     WHERE table_name = $1 AND table_schema = current_schema() \
                     AND is_generated = 'NEVER' ORDER BY ordinal_position",
                )
                .bind(table)
                .fetch_all(&mut *tx)
                .await?
            }
        };
        let mut columns = Vec::with_capacity(rows.len());
        for r in &rows {
            let name: String = r.try_get("name")?;
            let declared: String = r.try_get("type")?;
            if !DERIVED.iter().any(|(t, c)| *t == table && *c == name) {
                columns.push((name, kind_of(&declared)));
            }
        }
        Ok(columns)
    }

    /// Give imported chunks their full-text rows (SQLite keeps them in `knowledge_fts`;
    /// PostgreSQL derives its column itself).
    async fn index_imported_chunks(
        &self,
        tx: &mut sqlx::AnyConnection,
        into_user: &str,
    ) -> Result<(), StoreError> {
        if self.dialect != crate::Dialect::Sqlite {
            return Ok(());
        }
        let next: i64 = sqlx::query("SELECT COALESCE(MAX(rowid), 0) AS n FROM knowledge_fts")
            .fetch_one(&mut *tx)
            .await?
            .try_get("n")?;
        sqlx::query(
            // Past every full-text row there is, one per chunk (rowids are unique).
            "UPDATE knowledge_chunks SET fts_rowid = $1 + rowid \
             WHERE fts_rowid IS NULL AND kb_id IN (SELECT id FROM knowledge_bases WHERE owner = $2)",
        )
        .bind(next)
        .bind(into_user)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO knowledge_fts (rowid, text, kb_id, path, ordinal) \
             SELECT c.fts_rowid, c.text, c.kb_id, c.path, c.ordinal FROM knowledge_chunks c \
             WHERE c.fts_rowid > $1 AND c.kb_id IN (SELECT id FROM knowledge_bases WHERE owner = $2)",
        )
        .bind(next)
        .bind(into_user)
        .execute(&mut *tx)
        .await?;
        Ok(())
    }
}

/// A text value with every mention of one user id made another's.
fn moved(v: &Value, from: &str, into: &str) -> Value {
    match v {
        Value::String(s) if s.contains(from) => Value::String(s.replace(from, into)),
        other => other.clone(),
    }
}

impl SqlStore {
    /// Hand every row `tables`' conditions pick (`$1`: `key`) to `each`, table by table.
    async fn export_rows(
        &self,
        tables: &[(&str, &str)],
        key: &str,
        each: &mut (dyn FnMut(PortableRow) -> Result<(), StoreError> + Send),
    ) -> Result<(), StoreError> {
        let mut conn = self.pool.acquire().await?;
        for (table, condition) in tables {
            // Named columns: a derived one may be of a type the driver cannot read
            // (PostgreSQL's tsvector).
            let columns = self.columns_of(&mut conn, table).await?;
            let names: Vec<String> = columns
                .iter()
                .map(
                    |(n, _)| match EXPORTED_AS.iter().find(|(t, c, _)| t == table && c == n) {
                        Some((_, _, expr)) => format!("{expr} AS {n}"),
                        None => n.clone(),
                    },
                )
                .collect();
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {} FROM {table} WHERE {condition}",
                names.join(", ")
            )))
            .bind(key)
            .fetch(&mut *conn);
            while let Some(r) = rows.try_next().await? {
                let mut row = Map::new();
                for (i, c) in r.columns().iter().enumerate() {
                    row.insert(c.name().to_owned(), value_of(&r, i)?);
                }
                each(PortableRow {
                    table: (*table).to_owned(),
                    row,
                })?;
            }
        }
        Ok(())
    }

    /// Insert `rows` (any of `tables`, loaded in that order) in `tx`, each value passed
    /// through `value` (table, column, value) first; a row that is already here refuses it
    /// all, naming its table. How many rows of each table.
    async fn insert_rows(
        &self,
        tx: &mut sqlx::AnyConnection,
        tables: &[(&str, &str)],
        rows: &[PortableRow],
        value: &(dyn Fn(&str, &str, &Value) -> Value + Sync),
    ) -> Result<Imported, StoreError> {
        let mut imported = Imported::default();
        if let Some(t) = rows
            .iter()
            .find(|r| !tables.iter().any(|(n, _)| *n == r.table))
        {
            return Err(StoreError::InvalidArchive(format!(
                "the archive has rows of `{}`, which rein does not import",
                t.table
            )));
        }
        for (table, _) in tables {
            let mine: Vec<&PortableRow> = rows.iter().filter(|r| r.table == *table).collect();
            if mine.is_empty() {
                continue;
            }
            let here = self.columns_of(&mut *tx, table).await?;
            for r in &mine {
                let mut names = Vec::new();
                let mut values = Vec::new();
                for (name, kind) in &here {
                    let Some(v) = r.row.get(name) else { continue };
                    let v = if CLEARED.contains(&(table, name.as_str())) {
                        Value::Null
                    } else {
                        value(table, name, v)
                    };
                    names.push(name.as_str());
                    values.push((*kind, v));
                }
                if let Some(unknown) = r.row.keys().find(|k| !here.iter().any(|(n, _)| n == *k)) {
                    return Err(StoreError::InvalidArchive(format!(
                        "the archive's {table} rows have a column `{unknown}` this database does not: it comes from a newer rein"
                    )));
                }
                let marks: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
                let sql = format!(
                    "INSERT INTO {table} ({}) VALUES ({})",
                    names.join(", "),
                    marks.join(", ")
                );
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
                for (kind, v) in values {
                    q = bind(q, kind, v, table)?;
                }
                q.execute(&mut *tx).await.map_err(|e| match &e {
                    sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict(
                        format!("a {table} row of the archive (it was imported before?)"),
                    ),
                    // A row the schema refuses (a column missing, a check failed): the file's
                    // doing, named as such.
                    sqlx::Error::Database(d) => StoreError::InvalidArchive(format!(
                        "a {table} row of the archive cannot be loaded: {}",
                        d.message()
                    )),
                    _ => StoreError::from(e),
                })?;
            }
            imported
                .tables
                .push(((*table).to_owned(), mine.len() as u64));
        }
        Ok(imported)
    }
}

impl Portable for SqlStore {
    fn export_user<'a>(
        &'a self,
        user_id: &'a str,
        each: &'a mut (dyn FnMut(PortableRow) -> Result<(), StoreError> + Send),
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.export_rows(TABLES, user_id, each).boxed()
    }

    fn export_operation<'a>(
        &'a self,
        id: rein_core::OperationId,
        each: &'a mut (dyn FnMut(PortableRow) -> Result<(), StoreError> + Send),
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let key = id.to_string();
            self.export_rows(OPERATION_TABLES, &key, each).await
        }
        .boxed()
    }

    fn import_operation<'a>(
        &'a self,
        rows: &'a [PortableRow],
        value: &'a (dyn Fn(&str, &str, &Value) -> Value + Sync),
    ) -> BoxFuture<'a, Result<Imported, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let imported = self
                .insert_rows(&mut tx, OPERATION_TABLES, rows, value)
                .await?;
            tx.commit().await?;
            Ok(imported)
        }
        .boxed()
    }

    fn import_user<'a>(
        &'a self,
        from_user: &'a str,
        into_user: &'a str,
        rows: &'a [PortableRow],
    ) -> BoxFuture<'a, Result<Imported, StoreError>> {
        async move {
            let mut tx = self.begin_write().await?;
            let imported = self
                .insert_rows(&mut tx, TABLES, rows, &|_, _, v| {
                    moved(v, from_user, into_user)
                })
                .await?;
            self.index_imported_chunks(&mut tx, into_user).await?;
            tx.commit().await?;
            Ok(imported)
        }
        .boxed()
    }
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>;

fn bind<'q>(q: Query<'q>, kind: Kind, v: Value, table: &str) -> Result<Query<'q>, StoreError> {
    let wrong =
        |what: &str| StoreError::InvalidArchive(format!("a {table} value is not {what}: {v}"));
    Ok(match (kind, &v) {
        (Kind::Int, Value::Null) => q.bind(None::<i64>),
        (Kind::Int, Value::Number(n)) => q.bind(n.as_i64().ok_or_else(|| wrong("an integer"))?),
        (Kind::Float, Value::Null) => q.bind(None::<f64>),
        (Kind::Float, Value::Number(n)) => q.bind(n.as_f64().ok_or_else(|| wrong("a number"))?),
        (Kind::Bytes, Value::Null) => q.bind(None::<Vec<u8>>),
        (Kind::Bytes, Value::Object(o)) => {
            let b = o
                .get("base64")
                .and_then(Value::as_str)
                .and_then(|s| B64.decode(s).ok())
                .ok_or_else(|| wrong("bytes"))?;
            q.bind(b)
        }
        (Kind::Text, Value::Null) => q.bind(None::<String>),
        (Kind::Text, Value::String(s)) => q.bind(s.clone()),
        // SQLite keeps what it is given: an integer in a TEXT column comes back as one.
        (Kind::Text, Value::Number(n)) => q.bind(n.to_string()),
        _ => return Err(wrong("what the column holds")),
    })
}
