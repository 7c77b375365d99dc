//! Upgrading databases written by earlier builds, on SQLite and on PostgreSQL.
//!
//! Before migration 9 operations kept their message id list and tool manifests inside the
//! stored state and their spec in the operations row: opening it moves them out (the message
//! order into `operation_messages`, the spec and the manifests into `operation_setup`), and the
//! operation loads exactly as it was, with its spec, and keeps committing.
//!
//! Before migration 11 leases, recovery retries and task deliveries' due times were RFC 3339
//! text: opening converts them to integer microseconds, every instant read back as it was and
//! every lease still deciding at the same microsecond.

use crate::common;

use rein_core::testing::manifest;
use rein_core::*;
use rein_store::*;
use sqlx::Connection;
use std::sync::Arc;

fn spec() -> rein_core::spec::OperationSpec {
    rein_core::spec::OperationSpec {
        allowed_tools: Some(vec!["calculator".into()]),
        max_steps: Some(7),
        ..Default::default()
    }
}

async fn operation(store: &SqlStore) -> (OperationId, AgentState) {
    let state = AgentState::new(OperationId::new())
        .with_tool(manifest("calculator", &["evaluate"]))
        .with_tool(manifest("shell", &["run"]))
        .with_message(Message::system("Be brief."))
        .with_message(Message::user("What is 6*7?"));
    store
        .create_operation(&common::new_operation(&state, spec()))
        .await
        .unwrap();
    let mut after = state.clone();
    after.step_count = 1;
    after.push_message(Message::assistant("42."));
    common::commit_step(store, &state, &after, 1).await;
    (state.operation_id, after)
}

/// Rewrite the database to how a build before migration 9 left it.
async fn downgrade(url: &str, id: OperationId, state: &AgentState) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    let mut legacy = serde_json::to_value(state).unwrap();
    let obj = legacy.as_object_mut().unwrap();
    obj.remove("messages");
    let ids: Vec<String> = state.messages.iter().map(|m| m.id.to_string()).collect();
    obj.insert("message_ids".into(), serde_json::json!(ids));
    sqlx::query("UPDATE operations SET state = $1 WHERE id = $2")
        .bind(legacy.to_string())
        .bind(id.to_string())
        .execute(&mut conn)
        .await
        .unwrap();
    for stmt in [
        "UPDATE operations SET spec = (SELECT spec FROM operation_setup WHERE operation_setup.operation_id = operations.id)",
        "DROP TABLE operation_setup",
        "DROP TABLE operation_messages",
        "DELETE FROM rein_schema WHERE version = 9",
        // Migration 44 adds a column to the table migration 9 makes: both are applied again,
        // in order, as on a database that never had either.
        "DROP TABLE tool_manifest_sets",
        "DELETE FROM rein_schema WHERE version = 44",
    ] {
        sqlx::query(stmt).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();
}

async fn upgrade(url: &str, store_target: &str) {
    let store = SqlStore::open(store_target, Synchronous::Normal)
        .await
        .unwrap();
    let (id, state) = operation(&store).await;
    store.close().await;
    downgrade(url, id, &state).await;

    let store = SqlStore::open(store_target, Synchronous::Normal)
        .await
        .unwrap();
    let loaded = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(
        loaded.state, state,
        "the upgraded operation loads as it was"
    );
    assert_eq!(loaded.spec, spec(), "with the spec it started with");
    assert_eq!(loaded.state.tool_manifests.len(), 2);
    assert!(loaded.missing_messages.is_empty());

    // It keeps committing on the new layout.
    let mut next = state.clone();
    next.step_count = 2;
    next.push_message(Message::user("And 7*8?"));
    common::commit_step(&store, &state, &next, 2).await;
    let loaded = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(loaded.state, next);
    assert_eq!(
        loaded
            .state
            .messages
            .last()
            .map(Arc::clone)
            .unwrap()
            .text_content(),
        "And 7*8?"
    );
    store.close().await;
}

#[tokio::test]
async fn sqlite_databases_from_before_migration_9_upgrade_in_place() {
    let dir = std::env::temp_dir().join(format!("rein-upgrade-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rein.db");
    let path = path.to_str().unwrap();
    upgrade(&format!("sqlite://{path}"), path).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn postgres_databases_from_before_migration_9_upgrade_in_place() {
    let Some(scratch) = rein_testkit::postgres_scratch("postgres_upgrade", "rein_upgrade").await
    else {
        return;
    };
    upgrade(&scratch.url, &scratch.url).await;
    scratch.drop().await;
}

/// The pre-11 layout: instants as RFC 3339 text (migrations 5, 6 and 8 as they were).
const BEFORE_11: &[&str] = &[
    // Indexes on the columns rewritten, including those of later migrations (43's).
    "DROP INDEX IF EXISTS operations_by_owner_lease",
    "DROP INDEX IF EXISTS operations_by_lease",
    "ALTER TABLE operations DROP COLUMN lease_until",
    "ALTER TABLE operations DROP COLUMN recovery_retry_at",
    "ALTER TABLE operations ADD COLUMN lease_until TEXT",
    "ALTER TABLE operations ADD COLUMN recovery_retry_at TEXT",
    "CREATE INDEX operations_by_lease ON operations (lease_until)",
    "DROP TABLE task_deliveries",
    "CREATE TABLE task_deliveries (task_id TEXT NOT NULL, due_at TEXT NOT NULL, kind TEXT NOT NULL, \
     generation TEXT NOT NULL, status TEXT NOT NULL, claimed_by TEXT, lease_until TEXT, reason TEXT, \
     operation_id TEXT, created_at TEXT NOT NULL, PRIMARY KEY (task_id, due_at, kind))",
    "CREATE INDEX task_deliveries_due ON task_deliveries (status, due_at)",
    "DELETE FROM rein_schema WHERE version = 11",
];

fn text(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

async fn upgrade_instants(url: &str, store_target: &str) {
    use chrono::TimeZone;
    let us = chrono::Duration::microseconds(1);
    let lease = chrono::Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap() + us * 250_001;
    let retry = lease + chrono::Duration::seconds(90);
    let due = chrono::Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap() + us * 7;
    let created = chrono::Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap();

    let store = SqlStore::open(store_target, Synchronous::Normal)
        .await
        .unwrap();
    let (id, _) = operation(&store).await;
    store.close().await;

    // Write the instants as the earlier build did: text.
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    for stmt in BEFORE_11 {
        sqlx::query(*stmt).execute(&mut conn).await.unwrap();
    }
    sqlx::query(
        "UPDATE operations SET lease_owner = 'node-a', lease_until = $1, recovery_error = 'no key', \
         recovery_attempts = 2, recovery_retry_at = $2 WHERE id = $3",
    )
    .bind(text(lease))
    .bind(text(retry))
    .bind(id.to_string())
    .execute(&mut conn)
    .await
    .unwrap();
    for (kind, status, owner, until) in [
        ("schedule", "pending", None, None),
        ("heartbeat", "claimed", Some("node-a"), Some(text(lease))),
    ] {
        sqlx::query(
            "INSERT INTO task_deliveries (task_id, due_at, kind, generation, status, claimed_by, \
             lease_until, reason, operation_id, created_at) VALUES ('t1', $1, $2, 'g1', $3, $4, $5, NULL, NULL, $6)",
        )
        .bind(text(due))
        .bind(kind)
        .bind(status)
        .bind(owner)
        .bind(until)
        .bind(text(created))
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let store = SqlStore::open(store_target, Synchronous::Normal)
        .await
        .unwrap();
    let record = store.operation(id).await.unwrap().unwrap();
    let note = record.recovery.expect("the recovery note survives");
    assert_eq!(
        note.retry_at,
        Some(retry),
        "the retry instant converts exactly"
    );
    assert_eq!(note.attempts, 2);
    // node-a's lease still decides at the same microsecond.
    for (now, takes) in [(lease, false), (lease + us, true)] {
        assert_eq!(
            store
                .lease_operation(id, "node-b", lease + chrono::Duration::seconds(30), now)
                .await
                .unwrap(),
            takes,
            "node-b at {now} against the converted lease until {lease}"
        );
    }
    let mut deliveries = store.deliveries("t1", 10).await.unwrap();
    deliveries.sort_by_key(|d| d.kind.as_str());
    assert_eq!(deliveries.len(), 2);
    assert_eq!(deliveries[0].kind, rein_store::RunTrigger::Heartbeat);
    assert_eq!(deliveries[0].lease_until, Some(lease));
    assert!(
        deliveries
            .iter()
            .all(|d| d.due_at == due && d.created_at == created)
    );
    // Claims compare the converted due time and lease as instants.
    assert!(
        store
            .claim_deliveries(due - us, "node-b", retry, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let claimed = store
        .claim_deliveries(due, "node-b", retry, 10)
        .await
        .unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "the pending delivery is due at exactly its instant"
    );
    assert_eq!(claimed[0].kind, rein_store::RunTrigger::Schedule);
    let claimed = store
        .claim_deliveries(lease + us, "node-c", retry, 10)
        .await
        .unwrap();
    assert_eq!(
        claimed.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(),
        ["heartbeat"],
        "node-a's claim is taken over a microsecond after its converted lease"
    );
    store.close().await;
}

#[tokio::test]
async fn sqlite_databases_from_before_migration_11_convert_their_instants() {
    let dir = std::env::temp_dir().join(format!("rein-upgrade-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rein.db");
    let path = path.to_str().unwrap();
    upgrade_instants(&format!("sqlite://{path}"), path).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn postgres_databases_from_before_migration_11_convert_their_instants() {
    let Some(scratch) =
        rein_testkit::postgres_scratch("postgres_upgrade_instants", "rein_upgrade_instants").await
    else {
        return;
    };
    upgrade_instants(&scratch.url, &scratch.url).await;
    scratch.drop().await;
}
