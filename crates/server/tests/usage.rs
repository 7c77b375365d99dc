//! Usage through the API: a user's operations summed by day or model equal the operation
//! records' own costs and tokens; `by=user` is everyone's, for admins only.

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_sums_the_operations_records_and_by_user_is_for_admins() {
    let e = Api::new(vec![
        Canned::openai_text("one"),
        Canned::openai_text("two"),
        Canned::openai_text("three"),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let root = e.admin_token("root").await;
    let mut ops = Vec::new();
    for (token, body) in [
        (&alice, serde_json::json!({"input": "a"})),
        (
            &alice,
            serde_json::json!({"input": "b", "model": "openai/gpt-4o"}),
        ),
        (&bob, serde_json::json!({"input": "c"})),
    ] {
        let op = e.create_operation(token, body).await;
        e.wait_status(&op, token, "done").await;
        ops.push(op);
    }
    let (_, listed) = e.call("GET", "/v1/operations", Some(&alice), None).await;
    let listed = listed.as_array().unwrap();
    let recorded: f64 = listed.iter().map(|o| o["cost"].as_f64().unwrap()).sum();
    let tokens_in: u64 = listed
        .iter()
        .map(|o| o["usage"]["input_tokens"].as_u64().unwrap_or_default())
        .sum();
    assert!(recorded > 0.0, "priced models: {listed:?}");

    let (status, by_model) = e
        .call("GET", "/v1/usage?by=model", Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{by_model}");
    let keys: Vec<&str> = by_model["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["openai/gpt-4o", "openai/gpt-4o-mini"]);
    let total = &by_model["total"];
    assert_eq!(total["operations"], 2, "alice's only");
    let cost = total["cost"].as_f64().unwrap();
    assert!((cost - recorded).abs() < 1e-9, "{cost} vs {recorded}");
    if tokens_in > 0 {
        assert_eq!(total["input_tokens"].as_u64(), Some(tokens_in));
    }
    let (_, by_day) = e.call("GET", "/v1/usage", Some(&alice), None).await;
    assert_eq!(by_day["by"], "day");
    assert_eq!(by_day["rows"].as_array().unwrap().len(), 1, "{by_day}");
    assert_eq!(by_day["rows"][0]["operations"], 2);
    let (_, later) = e
        .call("GET", "/v1/usage?since=2999-01-01", Some(&alice), None)
        .await;
    assert_eq!(later["rows"], Value::Array(vec![]));
    assert_eq!(later["total"]["operations"], 0);
    let (status, body) = e
        .call("GET", "/v1/usage?since=yesterday", Some(&alice), None)
        .await;
    assert_eq!(status, 400, "{body}");

    // By user: everyone's, for admins.
    let (status, _) = e.call("GET", "/v1/usage?by=user", Some(&alice), None).await;
    assert_eq!(status, 404);
    let (status, by_user) = e.call("GET", "/v1/usage?by=user", Some(&root), None).await;
    assert_eq!(status, 200);
    let rows: Vec<(&str, u64)> = by_user["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap(),
                r["operations"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [("alice", 2), ("bob", 1)]);
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}
