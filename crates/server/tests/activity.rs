//! A running operation reads `running` and says what it is doing (waiting for the model,
//! backing off until when).

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_operation_reads_running_and_says_what_it_is_doing() {
    let mut limited = Canned::json(
        429,
        &json!({"error": {"message": "slow down", "type": "rate_limit"}}),
    );
    limited.headers.push(("retry-after".into(), "2".into()));
    let mut stalled = Canned::openai_text("thinking");
    stalled.stall_after = Some(40);
    let e = Api::new(vec![limited, stalled]).await;
    let alice = e.token("alice").await;
    let (status, created) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "go"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    // The first call is refused: it backs off, and says until when.
    let d = e
        .wait_detail(&op, &alice, "backing off", |d| {
            d["operation"]["activity"]["doing"] == "backing_off"
        })
        .await;
    assert_eq!(d["operation"]["status"], "running");
    assert_eq!(d["operation"]["activity"]["step"], 1);
    assert!(d["operation"]["activity"]["retry_at"].is_string(), "{d}");
    // Then it waits for the model, and reads `running` in listings too.
    let d = e
        .wait_detail(&op, &alice, "a model call", |d| {
            d["operation"]["activity"]["doing"] == "model_call"
        })
        .await;
    assert_eq!(d["operation"]["activity"]["model"], "openai/gpt-4o-mini");
    let (_, running) = e
        .call("GET", "/v1/operations?status=running", Some(&alice), None)
        .await;
    assert!(
        running.as_array().unwrap().iter().any(|o| o["id"] == op),
        "{running}"
    );
}
