//! Questions through the API: an `ask_user` call waits for a person even in auto-run, is
//! answered once with the one decision shape, and a decision that does not fit it is refused
//! naming why.

use crate::common::{Api, eventually};
use rein_model::testing::Canned;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_a_question_once_with_the_one_decision_shape() {
    let question = json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    let e = Api::new(vec![
        Canned::openai_tools(&[("q1", "ask_user__ask", &question.to_string())]),
        Canned::openai_text("Holding the release."),
    ])
    .await;
    let alice = e.token("alice").await;
    let (status, created) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            // Auto-run approves calls by itself; a question still waits for a person.
            Some(json!({"input": "Ship it if I agree.", "approval": "auto-run"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    e.wait_status(&op, &alice, "waiting_for_human").await;
    let path = format!("/v1/operations/{op}/interventions");
    let (_, detail) = e
        .call("GET", &format!("/v1/operations/{op}"), Some(&alice), None)
        .await;
    assert_eq!(detail["pending"][0]["call"]["identifier"], "ask_user");

    // Decisions that do not fit the question: 422, naming why; nothing is decided.
    for (decision, why) in [
        (
            json!({"tool_call_id": "q1", "decision": "approve"}),
            "is a question",
        ),
        (
            json!({"tool_call_id": "q1", "decision": "select", "option": "maybe"}),
            "`maybe` is not one of the options: yes, no",
        ),
        (
            json!({"tool_call_id": "q1", "decision": "answer"}),
            "needs `text`",
        ),
    ] {
        let (status, body) = e
            .call(
                "POST",
                &path,
                Some(&alice),
                Some(json!({"decisions": [decision]})),
            )
            .await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "decision_does_not_fit");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{message}");
    }
    let answer =
        json!({"decisions": [{"tool_call_id": "q1", "decision": "select", "option": "no"}]});
    let (status, body) = e
        .call("POST", &path, Some(&alice), Some(answer.clone()))
        .await;
    assert_eq!(status, 202, "{body}");
    eventually("the answer recorded", || async {
        let (_, list) = e.call("GET", &path, Some(&alice), None).await;
        (list[0]["status"] == "answered").then_some(list)
    })
    .await;
    let (status, body) = e.call("POST", &path, Some(&alice), Some(answer)).await;
    assert_eq!(status, 409, "a question is answered once: {body}");
    assert_eq!(body["error"]["message"], "tool call q1 was already decided");
    eventually("the operation done", || async {
        let (_, detail) = e
            .call("GET", &format!("/v1/operations/{op}"), Some(&alice), None)
            .await;
        (detail["operation"]["status"] == "done").then_some(())
    })
    .await;
    let requests = e.model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].tool_result("q1"), "The user chose `no` (Wait).");
}
