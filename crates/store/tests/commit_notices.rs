//! Commit notices on PostgreSQL: a process listening hears of every step another process
//! commits (only once the commit is durable), never of its own; SQLite offers none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rein_core::engine::initial_context;
use rein_core::*;
use rein_store::*;
use std::time::Duration;

async fn operation(store: &SqlStore) -> (OperationId, String, AgentState) {
    let state = AgentState::new(OperationId::new()).with_message(Message::user("hi"));
    let id = state.operation_id;
    let topic = format!("topic_{id}");
    store
        .create_operation(&NewOperation {
            state: state.clone(),
            topic_id: topic.clone(),
            agent: None,
            trigger: Trigger::Api,
            parent_operation: None,
            next_context: Some(initial_context(&state)),
            owner: None,
            spec: Default::default(),
            admission: None,
        })
        .await
        .unwrap();
    (id, topic, state)
}

async fn commit(store: &SqlStore, (id, topic, state): &(OperationId, String, AgentState)) {
    let mut after = state.clone();
    after.push_message(Message::assistant("hello"));
    store
        .commit_step(&StepCommit {
            operation_id: *id,
            step_index: 1,
            topic_id: topic.clone(),
            changes: StateChanges::between(state, &after),
            state: after,
            next_context: None,
            instructions: vec!["call_llm".into()],
            events: Vec::new(),
            tool_executions: Vec::new(),
            interventions: Vec::new(),
        })
        .await
        .unwrap();
}

async fn wait(notices: &mut CommitNotices) -> OperationId {
    tokio::time::timeout(Duration::from_secs(30), notices.next())
        .await
        .expect("a notice arrives")
        .unwrap()
}

#[tokio::test]
async fn other_processes_hear_of_each_commit_and_not_of_their_own() {
    let Some(scratch) =
        rein_testkit::postgres_scratch("postgres_commit_notices", "rein_notices").await
    else {
        return;
    };
    let a = SqlStore::open(&scratch.url, Synchronous::Normal)
        .await
        .unwrap();
    let b = SqlStore::open(&scratch.url, Synchronous::Normal)
        .await
        .unwrap();
    let mut heard_by_b = b
        .commit_notices()
        .await
        .unwrap()
        .expect("PostgreSQL listens");

    // B's own commit is not reported to B; A's commits are, in order.
    let own = operation(&b).await;
    commit(&b, &own).await;
    let first = operation(&a).await;
    let second = operation(&a).await;
    commit(&a, &first).await;
    commit(&a, &second).await;
    assert_eq!(wait(&mut heard_by_b).await, first.0);
    assert_eq!(wait(&mut heard_by_b).await, second.0);

    // A commit that rolls back (a duplicate step) sends nothing: the next notice is the
    // commit after it.
    let third = operation(&a).await;
    commit(&a, &first).await; // duplicate of step 1: nothing written, nothing sent
    commit(&a, &third).await;
    assert_eq!(wait(&mut heard_by_b).await, third.0);

    a.close().await;
    b.close().await;
    drop(heard_by_b);
    scratch.drop().await;
}

#[tokio::test]
async fn sqlite_offers_no_commit_notices() {
    let dir = std::env::temp_dir().join(format!("rein-notices-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
        .await
        .unwrap();
    assert!(store.commit_notices().await.unwrap().is_none());
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
