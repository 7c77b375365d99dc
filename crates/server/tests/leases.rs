//! Two server processes (two runners on one store) finding the same orphaned operation: only
//! one resumes it; the other refuses while the lease is live.

use rein_core::OperationId;
use rein_operation::StartOptions;
use rein_server::Hub;
use rein_server::runner::Job;
use rein_store::{SqlStore, Synchronous, Trigger};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphaned_operation_is_resumed_by_one_of_two_runners_sharing_a_database() {
    let dir = std::env::temp_dir().join(format!("rein-lease-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    // A model that takes the request and never answers: the winner's run stays in flight.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model = silent.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = silent.accept().await {
            held.push(sock);
        }
    });
    // Two processes: each its own hub.
    let base = format!("http://{model}");
    let (a, b) = (
        crate::common::runner(&store, &Arc::new(Hub::default()), &base, None),
        crate::common::runner(&store, &Arc::new(Hub::default()), &base, None),
    );
    assert_ne!(a.node, b.node);
    // Accepted by the API, never started: what a crash right after the 202 leaves.
    let driver = a.driver();
    let id = driver
        .start(
            "hello",
            &StartOptions {
                spec: rein_operation::OperationSpec {
                    owner: Some("u".into()),
                    ..Default::default()
                },
                trigger: Some(Trigger::Api),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (ra, rb) = tokio::join!(a.recover(), b.recover());
    assert_eq!(ra.unwrap() + rb.unwrap(), 1, "exactly one process took it");
    // While the winner holds the lease, the other cannot start it either.
    let (loser, winner) = if a.is_running(id) { (&b, &a) } else { (&a, &b) };
    assert!(winner.is_running(id));
    let err = loser
        .spawn(id, "u".into(), loser.driver(), Job::Resume)
        .await
        .unwrap_err();
    // Busy, not a conflict: the same request may succeed once the lease is let go or runs
    // out, and the answer says when to try again.
    assert_eq!(err.code, rein_server::error::ApiErrorCode::OperationBusy);
    assert!(err.message.contains("another process"), "{}", err.message);
    assert_eq!(err.retry_after, Some(loser.lease.as_secs()));
    // A second sweep by the loser changes nothing while the lease is live.
    assert_eq!(loser.recover().await.unwrap(), 0);
}
