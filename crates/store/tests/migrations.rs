//! The migration run as several processes and several builds meet it, on SQLite and on
//! PostgreSQL: stores opened at the same instant on an empty database migrate it once; a
//! database migrated past what a build knows is refused with both versions named and nothing
//! written, unless the newer migrations are expansions that build survives; a changed or
//! unknown applied migration is refused; a database from a build before checksums gets them.

use rein_core::OperationId;
use rein_store::*;
use sqlx::Connection;

/// A database for one scenario: its target for [`SqlStore::open`], and a direct URL.
struct Db {
    target: String,
    url: String,
    postgres: bool,
    scratch: Option<rein_testkit::Scratch>,
    dir: Option<std::path::PathBuf>,
}

impl Db {
    async fn sqlite(name: &str) -> Db {
        let dir = std::env::temp_dir().join(format!("rein-{name}-{}", OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rein.db").to_str().unwrap().to_owned();
        Db {
            url: format!("sqlite://{path}"),
            target: path,
            postgres: false,
            scratch: None,
            dir: Some(dir),
        }
    }

    async fn postgres(test: &str) -> Option<Db> {
        let scratch = rein_testkit::postgres_scratch(test, "rein_migrations").await?;
        Some(Db {
            target: scratch.url.clone(),
            url: scratch.url.clone(),
            postgres: true,
            scratch: Some(scratch),
            dir: None,
        })
    }

    /// Both backends (PostgreSQL when the test database is there).
    async fn both(test: &str) -> Vec<Db> {
        let mut out = vec![Db::sqlite(test).await];
        out.extend(Db::postgres(test).await);
        out
    }

    fn schema(&self) -> Schema {
        Schema::current(if self.postgres {
            rein_store::Dialect::Postgres
        } else {
            rein_store::Dialect::Sqlite
        })
    }

    async fn open(&self, schema: &Schema) -> Result<SqlStore, StoreError> {
        SqlStore::open_with_schema(&self.target, Synchronous::Normal, schema).await
    }

    async fn sql(&self, statements: &[&str]) {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(&self.url).await.unwrap();
        for s in statements {
            sqlx::query(sqlx::AssertSqlSafe(s.to_string()))
                .execute(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
        conn.close().await.unwrap();
    }

    /// `rein_schema` as rows of text, and the tables there are: what "nothing written"
    /// compares.
    async fn snapshot(&self) -> (Vec<String>, Vec<String>) {
        sqlx::any::install_default_drivers();
        let mut conn = sqlx::AnyConnection::connect(&self.url).await.unwrap();
        let rows: Vec<(i64, String, Option<String>, Option<i64>)> = sqlx::query_as(
            "SELECT version, applied_at, checksum, oldest_binary FROM rein_schema ORDER BY version",
        )
        .fetch_all(&mut conn)
        .await
        .unwrap();
        let tables: Vec<String> = if self.postgres {
            sqlx::query_scalar(
                "SELECT table_name::TEXT FROM information_schema.tables \
                 WHERE table_schema = current_schema() ORDER BY 1",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap()
        } else {
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")
                .fetch_all(&mut conn)
                .await
                .unwrap()
        };
        conn.close().await.unwrap();
        (rows.iter().map(|r| format!("{r:?}")).collect(), tables)
    }

    async fn remove(self) {
        if let Some(s) = self.scratch {
            s.drop().await;
        }
        if let Some(d) = self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[tokio::test]
async fn stores_opened_at_once_on_an_empty_database_all_open_and_migrate_it_once() {
    let test = "stores_opened_at_once_migrate_once";
    for postgres in [false, true] {
        // Ten rounds of eight stores, each with its own pool, on a new database each round.
        for round in 0..10 {
            let db = if postgres {
                match Db::postgres(test).await {
                    Some(db) => db,
                    None => break,
                }
            } else {
                Db::sqlite(test).await
            };
            let opens: Vec<_> = (0..8)
                .map(|_| {
                    let target = db.target.clone();
                    tokio::spawn(async move { SqlStore::open(&target, Synchronous::Normal).await })
                })
                .collect();
            let mut stores = Vec::new();
            for o in opens {
                stores.push(
                    o.await
                        .unwrap()
                        .unwrap_or_else(|e| panic!("round {round} (postgres: {postgres}): {e}")),
                );
            }
            let (rows, _) = db.snapshot().await;
            assert_eq!(
                rows.len() as i64,
                db.schema().latest(),
                "round {round}: every migration applied once: {rows:?}"
            );
            for s in stores {
                s.close().await;
            }
            db.remove().await;
        }
    }
}

#[tokio::test]
async fn a_database_past_what_a_build_knows_is_refused_naming_both_versions_and_left_unchanged() {
    for db in Db::both("a_database_past_what_a_build_knows_is_refused").await {
        let latest = db.schema().latest();
        // A newer build whose migration drops what this one reads (a contraction).
        let newer = db.schema().and_then(
            "a contraction",
            "CREATE TABLE future_things (id TEXT PRIMARY KEY)",
            false,
        );
        db.open(&newer).await.unwrap().close().await;
        let before = db.snapshot().await;
        let Err(e) = db.open(&db.schema()).await else {
            panic!("this build opened a database it does not know");
        };
        assert!(
            matches!(e, StoreError::SchemaTooNew { database, binary, needs }
                if database == latest + 1 && binary == latest && needs == latest + 1),
            "{e:?}"
        );
        let said = e.to_string();
        assert!(
            said.contains(&format!("version {}", latest + 1))
                && said.contains(&format!("({latest})"))
                && said.contains("Upgrade rein"),
            "{said}"
        );
        assert_eq!(db.snapshot().await, before, "nothing was written");

        // The previous build against this build's schema: its last migration predates the
        // compatibility check, so it is a contraction and the previous build refuses too.
        let previous = db.schema().up_to(latest - 1);
        let Err(e) = db.open(&previous).await else {
            panic!("the previous build opened a contracted database");
        };
        assert!(
            matches!(e, StoreError::SchemaTooNew { database, binary, .. }
                if database == latest + 1 && binary == latest - 1),
            "{e:?}"
        );
        db.remove().await;
    }
}

#[tokio::test]
async fn a_build_runs_against_newer_migrations_that_only_expand_and_sees_their_tables() {
    for db in Db::both("a_build_runs_against_newer_expansions").await {
        let newer = db.schema().and_then(
            "an expansion",
            "CREATE TABLE future_things (id TEXT PRIMARY KEY)",
            true,
        );
        db.open(&newer).await.unwrap().close().await;
        // This build (the older one now) runs, and works: it writes and reads an operation.
        let store = db.open(&db.schema()).await.unwrap();
        let state = rein_core::AgentState::new(OperationId::new())
            .with_message(rein_core::Message::user("hi"));
        store
            .create_operation(&NewOperation {
                prompt: None,
                state: state.clone(),
                topic_id: "t".into(),
                agent: None,
                trigger: Trigger::Cli,
                parent_operation: None,
                next_context: None,
                owner: None,
                spec: Default::default(),
                admission: None,
                thread: None,
                gate: None,
                response: None,
            })
            .await
            .unwrap();
        assert!(store.operation(state.operation_id).await.unwrap().is_some());
        store.close().await;
        // A contraction after the expansion makes it refuse again.
        let newest = newer.and_then(
            "a contraction",
            "CREATE TABLE more_things (id TEXT PRIMARY KEY)",
            false,
        );
        db.open(&newest).await.unwrap().close().await;
        let latest = db.schema().latest();
        assert!(matches!(
            db.open(&db.schema()).await,
            Err(StoreError::SchemaTooNew { database, needs, .. })
                if database == latest + 2 && needs == latest + 2
        ));
        db.remove().await;
    }
}

#[tokio::test]
async fn a_changed_or_unknown_applied_migration_is_refused_and_nothing_is_written() {
    for db in Db::both("a_changed_or_unknown_migration_is_refused").await {
        db.open(&db.schema()).await.unwrap().close().await;
        db.sql(&["UPDATE rein_schema SET checksum = 'edited' WHERE version = 5"])
            .await;
        let before = db.snapshot().await;
        assert!(matches!(
            db.open(&db.schema()).await,
            Err(StoreError::MigrationChanged { version: 5, ref description }) if description == "tasks"
        ));
        assert_eq!(db.snapshot().await, before);
        db.sql(&[
            "UPDATE rein_schema SET checksum = NULL WHERE version = 5",
            "INSERT INTO rein_schema (version, description, applied_at) VALUES (0, 'a branch''s', 'x')",
        ])
        .await;
        let e = db.open(&db.schema()).await.err().expect("refused");
        assert!(
            matches!(e, StoreError::UnknownMigration { version: 0, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("a branch's"), "{e}");
        db.remove().await;
    }
}

#[tokio::test]
async fn a_database_from_a_build_before_checksums_gets_them_and_opens() {
    for db in Db::both("a_database_before_checksums_gets_them").await {
        db.open(&db.schema()).await.unwrap().close().await;
        // How builds before the check left `rein_schema`.
        db.sql(&[
            "ALTER TABLE rein_schema DROP COLUMN checksum",
            "ALTER TABLE rein_schema DROP COLUMN oldest_binary",
        ])
        .await;
        db.open(&db.schema()).await.unwrap().close().await;
        let (rows, _) = db.snapshot().await;
        let schema = db.schema();
        assert_eq!(rows.len() as i64, schema.latest());
        for (row, m) in rows.iter().zip(schema.migrations()) {
            assert!(
                row.contains(&format!("Some(\"{}\")", m.checksum())),
                "{row}"
            );
        }
        db.remove().await;
    }
}
