//! Budgets through the API: a cost limit with a model nothing prices is a 422 naming the model
//! and how to price it, and nothing is written; the same request with `prices` runs.

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_limit_with_an_unpriced_model_is_422_and_prices_on_the_request_make_it_run() {
    let e = Api::new(vec![Canned::openai_text("priced now")]).await;
    let alice = e.token("alice").await;
    let body = json!({
        "input": "hello",
        "model": "openai/some-unknown-model",
        "cost_limit": 0.01
    });
    let (status, refused) = e
        .call("POST", "/v1/operations", Some(&alice), Some(body.clone()))
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "model_unpriced");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("openai/some-unknown-model") && message.contains("prices"),
        "{message}"
    );
    let (_, listed) = e.call("GET", "/v1/operations", Some(&alice), None).await;
    assert_eq!(listed, json!([]), "nothing was written");
    // Bad prices are the request's fault.
    let mut bad = body.clone();
    bad["prices"] = json!({"openai/some-unknown-model": {"input": -1, "output": 1}});
    let (status, _) = e
        .call("POST", "/v1/operations", Some(&alice), Some(bad))
        .await;
    assert!(status == 400 || status == 422, "{status}");
    let mut priced = body;
    priced["prices"] = json!({"openai/some-unknown-model": {"input": 1.0, "output": 2.0}});
    let op = e.create_operation(&alice, priced).await;
    let detail = e.wait_status(&op, &alice, "done").await;
    assert_eq!(
        detail["spec"]["prices"]["openai/some-unknown-model"],
        json!({"input": 1.0, "output": 2.0})
    );
    // 100 input and 20 output tokens at $1 and $2 per million.
    assert_eq!(detail["operation"]["cost"], json!(0.00014));
}
