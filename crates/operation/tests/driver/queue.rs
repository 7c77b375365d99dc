//! One operation at a time per conversation, through the driver: a second operation of a
//! topic whose first one is parked on an approval is queued (enqueue), refused (reject) or
//! starts once the first is ended for it (interrupt: its waiting call rejected, "the person
//! moved on"); a queued one starts when the one before it ends, its prompt placed after what
//! the conversation says then, so the active path holds every exchange in order; a queued one
//! can be cancelled before it starts.

use super::*;
use rein_core::spec::{OperationSpec, WhenBusy};
use rein_operation::{DriverError, MOVED_ON};
use rein_store::{StoreError, Topics};

fn in_topic(topic: &str, when_busy: WhenBusy) -> StartOptions {
    StartOptions {
        topic_id: Some(topic.into()),
        spec: OperationSpec {
            when_busy,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The texts of the topic's active path, in order.
async fn active_path(store: &SqlStore, topic: &str) -> Vec<String> {
    let stored = store.conversation(topic).await.unwrap().unwrap();
    let conv = rein_core::conversation::Conversation::new(stored.messages);
    conv.active_path(stored.active_message)
        .iter()
        .map(|m| format!("{:?}: {}", m.role, m.text_content()))
        .collect()
}

#[tokio::test]
async fn a_second_operation_waits_for_a_parked_one_and_both_exchanges_stay_in_order() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("Released."),
        Canned::openai_text("Second answer."),
    ])
    .await;
    let d = driver(&e, false);
    let a = d
        .start("ship", &in_topic("t-q", WhenBusy::Enqueue))
        .await
        .unwrap();
    assert!(matches!(
        d.run(a).await.unwrap(),
        RunEnd::WaitingForHuman { .. }
    ));
    let b = d
        .begin("and then?", &in_topic("t-q", WhenBusy::Enqueue))
        .await
        .unwrap();
    assert_eq!(b.queued_behind, Some(a));
    assert_eq!(
        d.run(b.id).await.unwrap(),
        RunEnd::Queued,
        "not while the first waits"
    );
    assert_eq!(d.promote("t-q").await.unwrap(), None);
    assert_eq!(
        e.server.requests().len(),
        1,
        "the second one asked no model"
    );
    // The first ends: the second starts, after it.
    let end = d.decide(a, None, Decision::Approve, None).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    assert_eq!(d.promote_after(a, |_| true).await.unwrap(), Some(b.id));
    assert!(matches!(d.run(b.id).await.unwrap(), RunEnd::Done { .. }));
    assert_eq!(
        active_path(&e.store, "t-q").await,
        [
            "User: ship",
            "Assistant: ",
            "Tool: released 1.2.0",
            "Assistant: Released.",
            "User: and then?",
            "Assistant: Second answer."
        ]
    );
    // The second operation's model saw the first exchange.
    let last = e.server.requests().last().unwrap().body["messages"].clone();
    assert!(last.to_string().contains("Released."), "{last}");
}

#[tokio::test]
async fn reject_refuses_naming_the_operation_in_the_way_and_writes_nothing() {
    let e = env(vec![tools(&[deploy("d1")])]).await;
    let d = driver(&e, false);
    let a = d
        .start("ship", &in_topic("t-r", WhenBusy::Enqueue))
        .await
        .unwrap();
    d.run(a).await.unwrap();
    let refused = d.start("again", &in_topic("t-r", WhenBusy::Reject)).await;
    match refused {
        Err(DriverError::Store(StoreError::TopicBusy {
            operation, status, ..
        })) => {
            assert_eq!(
                (operation, status.as_str()),
                (a.to_string(), "waiting_for_human")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.store
            .list_operations(&rein_store::OperationFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn interrupt_rejects_the_parked_call_and_the_new_operation_follows_it() {
    let e = env(vec![
        tools(&[deploy("d1")]),
        Canned::openai_text("Never mind, then."),
    ])
    .await;
    let d = driver(&e, false);
    let a = d
        .start("ship", &in_topic("t-i", WhenBusy::Enqueue))
        .await
        .unwrap();
    d.run(a).await.unwrap();
    let b = d
        .begin("never mind", &in_topic("t-i", WhenBusy::Interrupt))
        .await
        .unwrap();
    assert_eq!(
        b.queued_behind, None,
        "the parked one ended at once: its turn came"
    );
    // The first ended for it, its call rejected and never run.
    let first = e.store.load_operation(a).await.unwrap().unwrap();
    assert!(
        first.record.status.is_terminal(),
        "{:?}",
        first.record.status
    );
    assert_eq!(
        first.record.finish_detail.as_deref(),
        Some(MOVED_ON),
        "{:?}",
        first.record
    );
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
    let iv = e.store.interventions(a).await.unwrap();
    assert_eq!(iv[0].status, InterventionStatus::Rejected);
    assert_eq!(iv[0].outcome.as_deref(), Some(MOVED_ON));
    assert!(matches!(d.run(b.id).await.unwrap(), RunEnd::Done { .. }));
    let path = active_path(&e.store, "t-i").await;
    assert_eq!(path.first().map(String::as_str), Some("User: ship"));
    assert!(
        path.iter()
            .any(|m| m == &format!("Tool: The user rejected this tool call. Reason: {MOVED_ON}")),
        "{path:?}"
    );
    assert_eq!(
        &path[path.len() - 2..],
        ["User: never mind", "Assistant: Never mind, then."]
    );
}

#[tokio::test]
async fn a_queued_operation_can_be_cancelled_before_it_starts() {
    let e = env(vec![tools(&[deploy("d1")])]).await;
    let d = driver(&e, false);
    let a = d
        .start("ship", &in_topic("t-c", WhenBusy::Enqueue))
        .await
        .unwrap();
    d.run(a).await.unwrap();
    let b = d
        .start("later", &in_topic("t-c", WhenBusy::Enqueue))
        .await
        .unwrap();
    let end = d.cancel(b).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Interrupted {
                can_resume: false,
                ..
            }
        ),
        "{end:?}"
    );
    d.cancel(a).await.unwrap();
    assert_eq!(
        d.promote("t-c").await.unwrap(),
        None,
        "nothing left to start"
    );
    assert_eq!(
        e.store.operation_status(b).await.unwrap(),
        Some(Status::Interrupted)
    );
    assert_eq!(e.server.requests().len(), 1);
}
