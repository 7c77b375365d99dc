//! `POST …/resume` continues an interrupted operation and refuses a finished one.

use crate::common::{Api, calc, eventually};
use rein_model::testing::Canned;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_resume_continues_an_interrupted_operation_and_refuses_a_finished_one() {
    // 120 tokens per call against a limit of 100 with policy `interrupt`: each model call
    // interrupts the operation, resumably.
    let e = Api::new(vec![calc("c1", "6*7"), Canned::openai_text("42.")]).await;
    let alice = e.token("alice").await;
    let op = e
        .create_operation(
            &alice,
            json!({"input": "6*7?", "token_limit": 100, "budget_policy": "interrupt"}),
        )
        .await;
    e.wait_status(&op, &alice, "interrupted").await;
    assert_eq!(e.model.requests().len(), 1);
    let bob = e.token("bob").await;
    let (status, _) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/resume"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404, "another user cannot resume it");
    let (status, body) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/resume"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 202, "{body}");
    // One more model call, then the budget interrupts it again. The call the budget stopped
    // before it ran is settled, not run behind the user's back: the model reads that it was
    // interrupted.
    eventually("the resumed operation's second model call", || async {
        (e.model.requests().len() == 2).then_some(())
    })
    .await;
    let detail = e.wait_status(&op, &alice, "interrupted").await;
    let result = e.model.requests()[1].tool_result("c1");
    assert!(result.contains("interrupted"), "{result}");
    assert_eq!(detail["operation"]["total_tokens"], 240, "{detail:#}");
    // Cancelled, it can no longer be resumed.
    let (status, _) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/cancel"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 202);
    e.wait_detail(&op, &alice, "a terminal status", |d| {
        d["operation"]["status"] != "interrupted" || d["operation"]["finish_reason"].is_string()
    })
    .await;
    let (status, body) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/resume"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 409, "{body}");
}

/// A server whose operation (alice's) waits for her approval of a shell call (`c1`, manual
/// mode), then answers `42.`.
async fn parked_on_the_shell() -> (Api, String, String) {
    let e = Api::with_workdir(vec![
        Canned::openai_tools(&[(
            "c1",
            "shell__run",
            &json!({"command": "echo 42"}).to_string(),
        )]),
        Canned::openai_text("42."),
    ])
    .await;
    let alice = e.token("alice").await;
    let op = e
        .create_operation(&alice, json!({"input": "6*7?", "approval": "manual"}))
        .await;
    e.wait_status(&op, &alice, "waiting_for_human").await;
    (e, alice, op)
}

/// A decision recorded just before the process stopped (its step never committed) is not lost
/// and does not lock the operation: the decision cannot be made a second time (409), but a
/// resume carries it out. Without one, a parked operation is not resumed (409).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_resume_carries_out_a_decision_recorded_before_a_stop() {
    use rein_store::{InterventionStatus, Store};
    let (e, alice, op) = parked_on_the_shell().await;
    let resume = format!("/v1/operations/{op}/resume");
    let (status, body) = e.call("POST", &resume, Some(&alice), None).await;
    assert_eq!(status, 409, "nothing decided yet: {body}");
    // The approval as a process records it before the step it allows, with no step after it.
    let id: rein_core::OperationId = op.parse().unwrap();
    e.app
        .store
        .decide_intervention(id, "c1", InterventionStatus::Approved, Some("alice"), None)
        .await
        .unwrap();
    let (status, body) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            Some(json!({"decisions": [{"tool_call_id": "c1", "decision": "approve"}]})),
        )
        .await;
    assert_eq!(status, 409, "decided once only: {body}");
    assert_eq!(e.model.requests().len(), 1);
    let (status, body) = e.call("POST", &resume, Some(&alice), None).await;
    assert_eq!(status, 202, "{body}");
    let detail = e.wait_status(&op, &alice, "done").await;
    let result = e.model.requests()[1].tool_result("c1");
    assert!(result.contains("42"), "{result} {detail:#}");
}

/// The recovery sweep finds such an operation by itself: parked on a person, with a decision
/// recorded after its last commit and no process carrying it out. One merely waiting is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recovery_sweep_carries_out_a_decision_recorded_before_a_stop() {
    use rein_store::{InterventionStatus, Store};
    let (e, alice, op) = parked_on_the_shell().await;
    let id: rein_core::OperationId = op.parse().unwrap();
    let node = e.app.runner.node.clone();
    let parked = |ops: Vec<rein_store::OperationRecord>| ops.iter().any(|o| o.id == id);
    assert!(
        !parked(
            e.app
                .store
                .decided_while_parked("another node")
                .await
                .unwrap()
        ),
        "nothing decided yet"
    );
    e.app.runner.recover().await.unwrap();
    e.wait_status(&op, &alice, "waiting_for_human").await;
    assert_eq!(
        e.model.requests().len(),
        1,
        "a parked operation is not resumed"
    );
    e.app
        .store
        .decide_intervention(id, "c1", InterventionStatus::Approved, Some("alice"), None)
        .await
        .unwrap();
    assert!(parked(
        e.app
            .store
            .decided_while_parked("another node")
            .await
            .unwrap()
    ));
    assert!(parked(
        e.app.store.decided_while_parked(&node).await.unwrap()
    ));
    let n = e.app.runner.recover().await.unwrap();
    assert!(n >= 1, "the sweep started it");
    let detail = e.wait_status(&op, &alice, "done").await;
    let result = e.model.requests()[1].tool_result("c1");
    assert!(result.contains("42"), "{result} {detail:#}");
    assert!(
        !parked(
            e.app
                .store
                .decided_while_parked("another node")
                .await
                .unwrap()
        ),
        "its step committed"
    );
}
