//! Vector search inside PostgreSQL with the pgvector extension (0.8 or later: its iterative
//! index scans keep a filtered search from coming back short), when asked for
//! ([`crate::SqlStore::enable_pgvector`]; rein's `--vector-search pgvector`). It is not the
//! default: on the retrieval bench's 100k chunks its HNSW index found half the answers the
//! exact in-process [`super::index`] finds, seven times slower, and inserting into the graph cut
//! ingestion to a third (docs/performance.md).
//!
//! Enabling it creates the extension in `public` when it is missing (which needs a superuser),
//! then adds two derived columns to `knowledge_vectors`: `embedding`, the same unit vector as
//! the `vector` bytes in pgvector's type, and `dims`, its dimension; rows written before are
//! filled in then. From then on every store that opens the database fills them too, whether it
//! searches with pgvector or not, and a search first fills in what a store that opened before
//! wrote without them (found through a partial index of the unfilled rows). Each
//! dimension a model answers with gets a partial HNSW index over `embedding::vector(dims)` with
//! cosine distance (pgvector indexes at most 2,000 dimensions: larger vectors are compared
//! exactly). A search asks for the nearest rows of one base and model, and joins their chunks,
//! in one statement.
//!
//! Names from the extension's schema are written qualified (`"public".vector`,
//! `OPERATOR("public".<=>)`), so the store works whatever its connection's `search_path`.

use crate::StoreError;
use crate::knowledge::{ChunkHit, index};
use crate::sql::knowledge::hit_from;
use sqlx::AnyPool;
use std::collections::HashSet;
use std::sync::Mutex;

/// The oldest pgvector used: 0.8 added iterative index scans.
const MIN_VERSION: (u32, u32) = (0, 8);
/// The most dimensions pgvector's HNSW index takes for its `vector` type.
const MAX_INDEXED_DIMS: usize = 2_000;
/// Serialises creating the per-dimension indexes and the columns across processes.
const DDL_LOCK: i64 = 0x7265_696e_7665_6374; // "reinvect"
/// Rows filled in per transaction when existing vectors are copied into `embedding`.
const BACKFILL_BATCH: i64 = 256;

/// pgvector, found at open.
pub(crate) struct Pgvector {
    /// The extension's schema, quoted for SQL.
    schema: String,
    /// Its version, as the server reports it.
    pub version: String,
    /// Whether searches use it (they can be sent to the in-process index instead).
    pub search: bool,
    /// Dimensions whose index this process has made sure of.
    indexed: Mutex<HashSet<usize>>,
}

rein_core::named_enum! {
    /// Where knowledge vectors are asked to be searched (`--vector-search`): what
    /// [`VectorSearch`] reports once the store is open.
    #[derive(Default)]
    pub enum VectorIndex as "vector search" {
        /// In this process (exact).
        #[default]
        InProcess = "in-process",
        /// In PostgreSQL, by pgvector ([`crate::SqlStore::enable_pgvector`]).
        Pgvector = "pgvector",
    }
}

/// Where a store's knowledge vector searches run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VectorSearch {
    /// In this process: an exact int8 scan of every vector of the base (the default, on both
    /// backends).
    InProcess,
    /// In PostgreSQL, by pgvector's HNSW index (its version), after
    /// [`crate::SqlStore::enable_pgvector`].
    Pgvector(String),
}

/// `"name"`, quoted as an SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `(major, minor)` of a version such as `0.8.0`.
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// A vector as pgvector reads it: `[x,y,…]` (non-finite components, which it refuses, as 0).
fn literal(v: &[f32]) -> String {
    let mut out = String::with_capacity(v.len() * 12 + 2);
    out.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let x = if x.is_finite() { *x } else { 0.0 };
        out.push_str(&x.to_string());
    }
    out.push(']');
    out
}

/// A transaction holding the lock that serialises this module's schema changes across
/// processes (two `... IF NOT EXISTS` at once can still collide).
async fn ddl_transaction(
    pool: &AnyPool,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(DDL_LOCK)
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}

/// Whether `knowledge_vectors` has pgvector's columns.
async fn has_columns(pool: &AnyPool) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = 'knowledge_vectors' \
         AND column_name IN ('embedding', 'dims')",
    )
    .fetch_one(pool)
    .await?;
    Ok(n == 2)
}

/// The extension's schema and version, if it is installed.
async fn installed(pool: &AnyPool) -> Result<Option<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT n.nspname::text, e.extversion::text FROM pg_extension e \
         JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
    )
    .fetch_optional(pool)
    .await
}

impl Pgvector {
    /// pgvector as this database already has it: the extension (0.8+) and the columns a store
    /// that searched with it added. A store that does not search with pgvector still fills
    /// them, so the stores that do find every vector.
    pub async fn existing(pool: &AnyPool) -> Result<Option<Self>, StoreError> {
        let Some((schema, version)) = installed(pool).await? else {
            return Ok(None);
        };
        if major_minor(&version).is_none_or(|v| v < MIN_VERSION) || !has_columns(pool).await? {
            return Ok(None);
        }
        Ok(Some(Self {
            schema: quote(&schema),
            version,
            search: false,
            indexed: Mutex::new(HashSet::new()),
        }))
    }

    /// pgvector ready to search `knowledge_vectors`: the extension created when missing (in
    /// `public`; that needs a superuser), the columns added, vectors written before filled in.
    /// Refused, saying why, when the server does not have pgvector 0.8 or later or this user
    /// may not create it.
    pub async fn enable(pool: &AnyPool) -> Result<Self, StoreError> {
        let mut found = installed(pool).await?;
        let mut refused = None;
        if found.is_none() {
            if let Err(e) = sqlx::query("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
                .execute(pool)
                .await
            {
                refused = Some(e.to_string());
            }
            // Another process may have created it meanwhile.
            found = installed(pool).await?;
        }
        let Some((schema, version)) = found else {
            return Err(StoreError::Pgvector(format!(
                "the server has no `vector` extension ({})",
                refused.unwrap_or_else(|| "CREATE EXTENSION did not create it".into())
            )));
        };
        if major_minor(&version).is_none_or(|v| v < MIN_VERSION) {
            return Err(StoreError::Pgvector(format!(
                "the server's pgvector is {version}; rein needs 0.8 or later"
            )));
        }
        let this = Self {
            schema: quote(&schema),
            version,
            search: true,
            indexed: Mutex::new(HashSet::new()),
        };
        this.add_columns(pool).await?;
        this.backfill(pool, None).await?;
        tracing::info!(version = %this.version, "knowledge vectors are searched by pgvector");
        Ok(this)
    }

    /// Add `embedding` and `dims` to `knowledge_vectors` unless they are there (looked up
    /// first: `ALTER TABLE` would lock the table on every open).
    async fn add_columns(&self, pool: &AnyPool) -> Result<(), StoreError> {
        if has_columns(pool).await? {
            return Ok(());
        }
        let mut tx = ddl_transaction(pool).await?;
        // Kept in the row (`MAIN`: out of line only when a row could not fit otherwise), the
        // `vector` bytes beside it going out of line first: a search that had to fetch every
        // candidate's vector from the TOAST table was seven times slower.
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "ALTER TABLE knowledge_vectors ADD COLUMN IF NOT EXISTS embedding {}.vector, \
             ADD COLUMN IF NOT EXISTS dims INTEGER, ALTER COLUMN embedding SET STORAGE MAIN",
            self.schema
        )))
        .execute(&mut *tx)
        .await?;
        // Rows a store that opened before these columns existed writes without them.
        sqlx::query(
            "CREATE INDEX IF NOT EXISTS knowledge_vectors_unfilled \
             ON knowledge_vectors (kb_id, path, ordinal) WHERE embedding IS NULL",
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Copy the vectors (of base `kb`, or all) that have no `embedding` yet into it, a batch
    /// per transaction; found through a partial index, so finding none is cheap.
    async fn backfill(&self, pool: &AnyPool, kb: Option<&str>) -> Result<(), StoreError> {
        let mut after = (kb.unwrap_or_default().to_owned(), String::new(), -1i64);
        loop {
            let rows: Vec<(String, String, i64, Vec<u8>)> = sqlx::query_as(
                "SELECT kb_id, path, ordinal, vector FROM knowledge_vectors \
                 WHERE embedding IS NULL AND (kb_id, path, ordinal) > ($1, $2, $3) \
                 AND ($5 = '' OR kb_id = $5) \
                 ORDER BY kb_id, path, ordinal LIMIT $4",
            )
            .bind(&after.0)
            .bind(&after.1)
            .bind(after.2)
            .bind(BACKFILL_BATCH)
            .bind(kb.unwrap_or_default())
            .fetch_all(pool)
            .await?;
            let Some(last) = rows.last() else {
                return Ok(());
            };
            after = (last.0.clone(), last.1.clone(), last.2);
            let mut dims_seen = HashSet::new();
            let mut tx = pool.begin().await?;
            for (kb, path, ordinal, bytes) in &rows {
                let v = index::decode(bytes);
                if v.is_empty() {
                    continue;
                }
                dims_seen.insert(v.len());
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "UPDATE knowledge_vectors SET embedding = CAST($1 AS {}.vector), dims = $2 \
                     WHERE kb_id = $3 AND path = $4 AND ordinal = $5",
                    self.schema
                )))
                .bind(literal(&v))
                .bind(i32::try_from(v.len()).unwrap_or(i32::MAX))
                .bind(kb)
                .bind(path)
                .bind(ordinal)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            for dims in dims_seen {
                self.ensure_index(pool, dims).await?;
            }
        }
    }

    /// Make sure vectors of `dims` dimensions have their HNSW index (once per process and
    /// dimension; a no-op past what pgvector can index).
    pub async fn ensure_index(&self, pool: &AnyPool, dims: usize) -> Result<(), StoreError> {
        if dims == 0 || dims > MAX_INDEXED_DIMS {
            return Ok(());
        }
        if self
            .indexed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&dims)
        {
            return Ok(());
        }
        let mut tx = ddl_transaction(pool).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE INDEX IF NOT EXISTS knowledge_vectors_hnsw_{dims} ON knowledge_vectors \
             USING hnsw ((embedding::{s}.vector({dims})) {s}.vector_cosine_ops) \
             WHERE dims = {dims}",
            s = self.schema
        )))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.indexed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(dims);
        Ok(())
    }

    /// Refresh the planner's statistics of the vectors and chunks after an ingestion job
    /// (what it knows of each base's size decides between the index and an exact scan);
    /// autovacuum would do it too, up to a minute later. Best effort: a failure is logged.
    pub async fn refresh_statistics(&self, pool: &AnyPool) {
        if let Err(e) = sqlx::query("ANALYZE knowledge_vectors, knowledge_chunks")
            .execute(pool)
            .await
        {
            tracing::warn!(error = %e, "the knowledge tables' statistics were not refreshed");
        }
    }

    /// The SQL that writes a vector's row: `$1`…`$6` as without pgvector (base, path,
    /// ordinal, model, bytes, the file's content hash), `$7` the vector's literal and `$8` its
    /// dimension.
    pub fn upsert_sql(&self) -> String {
        format!(
            "INSERT INTO knowledge_vectors (kb_id, path, ordinal, model, vector, embedding, dims) \
             SELECT $1, $2, $3, $4, $5, CAST($7 AS {s}.vector), $8 FROM knowledge_files f \
             WHERE f.kb_id = $1 AND f.path = $2 AND f.content_hash = $6 \
             ON CONFLICT (kb_id, path, ordinal) DO UPDATE SET model = excluded.model, \
             vector = excluded.vector, embedding = excluded.embedding, dims = excluded.dims",
            s = self.schema
        )
    }

    /// The literal and dimension bound as `$7` and `$8` of [`Self::upsert_sql`].
    pub fn bind_values(v: &[f32]) -> (String, i32) {
        (literal(v), i32::try_from(v.len()).unwrap_or(i32::MAX))
    }

    /// The `limit` chunks of `kb` whose `model` vectors are nearest `query` by cosine, best
    /// first, with their similarity as score.
    pub async fn search(
        &self,
        pool: &AnyPool,
        kb: &str,
        model: &str,
        query: &[f32],
        limit: u32,
    ) -> Result<Vec<ChunkHit>, StoreError> {
        let query = index::unit(query.to_vec());
        let dims = query.len();
        if dims == 0 || limit == 0 {
            return Ok(Vec::new());
        }
        // What a store that opened before pgvector's columns existed wrote without them.
        self.backfill(pool, Some(kb)).await?;
        let mut tx = pool.begin().await?;
        // Planned for this base, not generically: with its row count from the statistics the
        // planner picks the HNSW index for a large base and an exact scan of a small one's
        // rows (which the index, shared by every base of this dimension, would have to wade
        // through other bases' rows to find).
        // The index's candidate list must hold at least `limit` rows, and a scan that finds
        // too few rows of this base and model keeps going (in roughly best-first order; the
        // rows are sorted again below). All three settings last for this transaction only, set
        // in one round trip.
        sqlx::query(
            "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), \
             set_config('hnsw.iterative_scan', 'relaxed_order', true), \
             set_config('hnsw.ef_search', $1, true)",
        )
        .bind(limit.saturating_mul(5).clamp(200, 1_000).to_string())
        .execute(&mut *tx)
        .await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT c.path AS path, c.ordinal AS ordinal, c.headings AS headings, \
             c.line_start AS line_start, c.line_end AS line_end, c.text AS text, \
             CAST(1 - d.distance AS DOUBLE PRECISION) AS score FROM ( \
               SELECT path, ordinal, embedding::{s}.vector({dims}) OPERATOR({s}.<=>) \
               CAST($3 AS {s}.vector({dims})) AS distance FROM knowledge_vectors \
               WHERE dims = {dims} AND kb_id = $1 AND model = $2 \
               ORDER BY embedding::{s}.vector({dims}) OPERATOR({s}.<=>) \
               CAST($3 AS {s}.vector({dims})) LIMIT $4 \
             ) d JOIN knowledge_chunks c \
             ON c.kb_id = $1 AND c.path = d.path AND c.ordinal = d.ordinal",
            s = self.schema
        )))
        .bind(kb)
        .bind(model)
        .bind(literal(&query))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut hits = rows.iter().map(hit_from).collect::<Result<Vec<_>, _>>()?;
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.path.cmp(&b.path))
                .then(a.ordinal.cmp(&b.ordinal))
        });
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_versions_and_names() {
        assert_eq!(literal(&[0.5, -1.0, f32::NAN]), "[0.5,-1,0]");
        assert_eq!(major_minor("0.8.0"), Some((0, 8)));
        assert!(major_minor("0.7.4").is_some_and(|v| v < MIN_VERSION));
        assert!(major_minor("1.0").is_some_and(|v| v >= MIN_VERSION));
        assert_eq!(major_minor("x"), None);
        assert_eq!(quote("pub\"lic"), "\"pub\"\"lic\"");
    }
}
