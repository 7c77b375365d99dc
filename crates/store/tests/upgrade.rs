//! Upgrading a database written before migration 9, whose operations kept their message id
//! list and tool manifests inside the stored state and their spec in the operations row:
//! opening it moves them out (the message order into `operation_messages`, the spec and the
//! manifests into `operation_setup`), and the operation loads exactly as it was, with its spec,
//! and keeps committing. On SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
