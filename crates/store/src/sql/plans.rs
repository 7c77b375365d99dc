//! Tests: the statements that run on every admission and every listing of a conversation read
//! the rows they answer with, not the table. Both grew with the database before (the soak's
//! latency rose with its size): the admission count read every operation of the owner, and a
//! conversation's list walked the owner's operations newest first.

use super::operations::list_statement;
use super::*;
use crate::Store;
use rein_core::state::AgentState;
use sqlx::Row;

/// What SQLite plans for `sql` with `binds`, one line per step (`EXPLAIN QUERY PLAN`).
async fn plan(store: &SqlStore, sql: &str, binds: &[&str]) -> Vec<String> {
    let explained = format!("EXPLAIN QUERY PLAN {sql}");
    let mut q = sqlx::query(sqlx::AssertSqlSafe(explained));
    for b in binds {
        q = q.bind((*b).to_owned());
    }
    q.fetch_all(&store.pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<String, _>("detail").unwrap())
        .collect()
}

fn operation(owner: &str, topic: &str) -> NewOperation {
    let state = AgentState::new(OperationId::new());
    NewOperation {
        prompt: None,
        next_context: Some(rein_core::engine::initial_context(&state)),
        state,
        topic_id: topic.to_owned(),
        agent: None,
        trigger: Trigger::Api,
        parent_operation: None,
        owner: Some(owner.to_owned()),
        spec: Default::default(),
        admission: None,
        thread: None,
        gate: None,
        response: None,
    }
}

#[tokio::test]
async fn admission_and_a_conversations_list_read_their_rows_not_the_owners() {
    let dir = std::env::temp_dir().join(format!("rein-plans-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rein.db");
    let path = path.to_str().unwrap();
    let store = SqlStore::open(path, Synchronous::Normal).await.unwrap();

    // Admission counts live leases from the index that holds them by owner, whatever the
    // statistics say (there are none yet).
    let counted = plan(&store, leases::RUNNING_FOR_OWNER, &["0", "x", "u1"]).await;
    assert_eq!(
        counted,
        ["SEARCH operations USING INDEX operations_by_owner_lease (owner=? AND lease_until>?)"]
    );

    // One owner, many conversations: what a single-user server holds.
    for i in 0..200 {
        store
            .create_operation(&operation("u1", &format!("t{i}")))
            .await
            .unwrap();
    }
    store.close().await;
    // The writer refreshes the statistics when it starts (and as the tables grow).
    let store = SqlStore::open(path, Synchronous::Normal).await.unwrap();
    let (sql, binds) = list_statement(&OperationFilter {
        owner: Some("u1".into()),
        topic: Some("t7".into()),
        top_level: true,
        ..Default::default()
    });
    let mut binds: Vec<&str> = binds.iter().map(String::as_str).collect();
    binds.push("100");
    let listed = plan(&store, &sql, &binds).await;
    assert!(
        listed[0]
            .starts_with("SEARCH operations USING INDEX operations_by_topic_status (topic_id=?"),
        "{listed:?}"
    );
    let found = store
        .list_operations(&OperationFilter {
            owner: Some("u1".into()),
            topic: Some("t7".into()),
            top_level: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn one_users_usage_reads_that_users_rows() {
    let dir = std::env::temp_dir().join(format!("rein-plans-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rein.db");
    let path = path.to_str().unwrap();
    let store = SqlStore::open(path, Synchronous::Normal).await.unwrap();
    // Many users, so reading everyone's operations of the period and reading one user's
    // differ.
    for i in 0..200 {
        store
            .create_operation(&operation(&format!("u{}", i % 20), &format!("t{i}")))
            .await
            .unwrap();
    }
    store.close().await;
    let store = SqlStore::open(path, Synchronous::Normal).await.unwrap();
    let since = "2026-12-01T00:00:00.000000Z";
    let (sql, owner) = super::usage::usage_statement(
        crate::usage::Whose::Owner(Some("u7")),
        crate::usage::UsageBy::Day,
    );
    assert_eq!(owner, Some("u7"));
    let planned = plan(&store, &sql, &[since, "u7"]).await;
    let reads = |index: &str| planned.iter().any(|l| l.contains(index));
    assert!(
        reads("USING INDEX operations_by_owner (owner=? AND created_at>?)"),
        "{planned:?}"
    );
    assert!(
        reads("USING INDEX model_replays_by_owner (owner=? AND created_at>?)"),
        "{planned:?}"
    );
    // And the sums are the user's own.
    let rows = crate::Usage::usage(
        &store,
        crate::usage::Whose::Owner(Some("u7")),
        chrono::DateTime::<chrono::Utc>::MIN_UTC,
        crate::usage::UsageBy::Day,
    )
    .await
    .unwrap();
    assert_eq!(rows.iter().map(|r| r.operations).sum::<u64>(), 10);
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
