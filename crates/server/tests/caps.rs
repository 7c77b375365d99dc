//! Spending caps: a user's operations are admitted while their daily cap is not spent, each
//! with a cost limit of what is left; the one that crosses the cap stops as its budget policy
//! says; the next is a 429 naming the cap and when it resets; another user is not held back.

use crate::common::Api;
use rein_core::usage::Usd;
use rein_model::testing::Canned;
use rein_server::ServerConfig;
use rein_server::caps::SpendCaps;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_daily_cap_is_a_429_and_the_run_that_crosses_it_stops() {
    // A gateway that prices each call itself: 40 cents.
    let e = Api::with_config(
        vec![
            Canned::openai_text_costing("one", 0.40),
            Canned::openai_text_costing("two", 0.40),
            Canned::openai_text_costing("three", 0.40),
            Canned::openai_text_costing("bob's", 0.40),
        ],
        ServerConfig {
            caps: SpendCaps {
                daily: Some(Usd::from_dollars(1.0)),
                monthly: Some(Usd::from_dollars(50.0)),
            },
            ..Default::default()
        },
    )
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let mut ends = Vec::new();
    for input in ["one", "two", "three"] {
        let op = e.create_operation(&alice, json!({"input": input})).await;
        let detail = e.wait_status(&op, &alice, "done").await;
        ends.push(detail);
    }
    // The third was admitted with 20 cents left: its 40-cent call crossed that limit.
    assert_eq!(ends[0]["operation"]["finish_reason"], "completed");
    assert_eq!(ends[1]["operation"]["finish_reason"], "completed");
    assert_eq!(
        ends[2]["operation"]["finish_reason"], "cost_limit_exceeded",
        "{}",
        ends[2]
    );
    let limit = ends[2]["spec"]["budget"]["max_cost"].as_f64().unwrap();
    assert!((limit - 0.20).abs() < 1e-9, "what the cap left: {limit}");

    // The fourth is refused, naming the cap and when it resets.
    let (status, refused) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "four"})),
        )
        .await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["code"], "spend_cap_reached");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("daily cost cap of $1"), "{message}");
    assert_eq!(refused["error"]["details"]["cap"], "daily");
    let resets: chrono::DateTime<chrono::Utc> = refused["error"]["details"]["resets_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let tomorrow = chrono::Utc::now().date_naive().succ_opt().unwrap();
    assert_eq!(resets.date_naive(), tomorrow);
    let (_, listed) = e.call("GET", "/v1/operations", Some(&alice), None).await;
    assert_eq!(listed.as_array().unwrap().len(), 3, "nothing was written");

    // What usage says is what the records cost: 1.20.
    let (_, usage) = e.call("GET", "/v1/usage", Some(&alice), None).await;
    let spent = usage["total"]["cost"].as_f64().unwrap();
    assert!((spent - 1.20).abs() < 1e-9, "{usage}");

    // A task run of hers is held to the same cap: refused, saying why.
    let (status, task) = e
        .call(
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "Daily", "instruction": "Summarize."})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    let id = task["id"].as_str().unwrap();
    let (status, refused) = e
        .call("POST", &format!("/v1/tasks/{id}/run"), Some(&alice), None)
        .await;
    assert!((400..500).contains(&status), "{status} {refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("daily cost cap"),
        "{refused}"
    );

    // Bob's day is his own.
    let op = e.create_operation(&bob, json!({"input": "mine"})).await;
    e.wait_status(&op, &bob, "done").await;
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}
