//! Commit notices on PostgreSQL: a process listening hears of every step another process
//! commits (only once the commit is durable), never of its own nor of a deployment in another
//! schema of the same database; SQLite offers none.

use crate::common;

use rein_core::*;
use rein_store::*;
use std::time::Duration;

async fn operation(store: &SqlStore) -> AgentState {
    let state = AgentState::new(OperationId::new()).with_message(Message::user("hi"));
    store
        .create_operation(&common::new_operation(&state, Default::default()))
        .await
        .unwrap();
    state
}

async fn commit(store: &SqlStore, state: &AgentState) {
    let mut after = state.clone();
    after.push_message(Message::assistant("hello"));
    common::commit_step(store, state, &after, 1).await;
}

async fn wait(notices: &mut CommitNotices) -> Notice {
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

    // A deployment in another schema of the same database is not heard: its commit comes
    // first, yet B's next notice is A's.
    let other_schema =
        rein_testkit::postgres_scratch("postgres_commit_notices", "rein_notices_other")
            .await
            .expect("the same database");
    let c = SqlStore::open(&other_schema.url, Synchronous::Normal)
        .await
        .unwrap();
    let elsewhere = operation(&c).await;
    commit(&c, &elsewhere).await;

    // B's own commit is not reported to B; A's commits are, in order.
    let own = operation(&b).await;
    commit(&b, &own).await;
    let first = operation(&a).await;
    let second = operation(&a).await;
    commit(&a, &first).await;
    commit(&a, &second).await;
    assert_eq!(
        wait(&mut heard_by_b).await,
        Notice::Committed(first.operation_id)
    );
    assert_eq!(
        wait(&mut heard_by_b).await,
        Notice::Committed(second.operation_id)
    );

    // A commit that rolls back (a duplicate step) sends nothing: the next notice is the
    // commit after it.
    let third = operation(&a).await;
    commit(&a, &first).await; // duplicate of step 1: nothing written, nothing sent
    commit(&a, &third).await;
    assert_eq!(
        wait(&mut heard_by_b).await,
        Notice::Committed(third.operation_id)
    );

    // A process that stops hands a running operation over: its lease is free at once, and
    // the others hear of it.
    let now = chrono::Utc::now();
    let lease = |node: &str| Admission {
        node: node.into(),
        now,
        until: now + chrono::Duration::seconds(60),
        limits: Default::default(),
    };
    let id = third.operation_id;
    assert_eq!(
        a.claim_operation(id, &lease("a")).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        b.claim_operation(id, &lease("b")).await.unwrap(),
        Claim::Busy
    );
    a.hand_over(id, "a").await.unwrap();
    assert_eq!(wait(&mut heard_by_b).await, Notice::Released(id));
    assert_eq!(
        b.claim_operation(id, &lease("b")).await.unwrap(),
        Claim::Claimed
    );

    a.close().await;
    b.close().await;
    c.close().await;
    drop(heard_by_b);
    scratch.drop().await;
    other_schema.drop().await;
}

#[tokio::test]
async fn sqlite_offers_no_commit_notices() {
    let (store, dir) = common::sqlite_store("notices").await;
    assert!(store.commit_notices().await.unwrap().is_none());
    common::remove(store, dir).await;
}
