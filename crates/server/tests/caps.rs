//! Spending caps: a user's operations are admitted while their daily cap is not spent, each
//! with a cost limit of what is left; the one that crosses the cap stops as its budget policy
//! says; the next is a 429 naming the cap and when it resets; another user is not held back.
//! Token caps work the same way on the token limit, an admin's per-user caps replace the
//! defaults, and the server's own cap holds everyone together.

use crate::common::Api;
use rein_core::usage::Usd;
use rein_model::testing::Canned;
use rein_server::ServerConfig;
use rein_server::caps::SpendCaps;
use rein_store::Caps;
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
                per_user: Caps {
                    daily_cost: Some(Usd::from_dollars(1.0)),
                    monthly_cost: Some(Usd::from_dollars(50.0)),
                    ..Caps::default()
                },
                server: Caps::default(),
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
    assert!(
        message.contains("your daily cost cap of 1.000000 USD is spent (1.200000 USD since"),
        "{message}"
    );
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
    // Nor may she spend through the audio endpoints (what they spend is no operation's).
    let (status, refused) = e
        .call(
            "POST",
            "/v1/audio/speech",
            Some(&alice),
            Some(json!({"input": "Read this aloud."})),
        )
        .await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["code"], "spend_cap_reached");

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_caps_per_user_overrides_and_the_servers_own_cap() {
    // Every call costs 30 cents and 120 tokens.
    let e = Api::with_config(
        vec![
            Canned::openai_text_costing("bob one", 0.30),
            Canned::openai_text_costing("bob two", 0.30),
            Canned::openai_text_costing("alice one", 0.30),
        ],
        ServerConfig {
            caps: SpendCaps {
                per_user: Caps {
                    daily_tokens: Some(200),
                    ..Caps::default()
                },
                server: Caps {
                    daily_cost: Some(Usd::from_dollars(0.70)),
                    ..Caps::default()
                },
            },
            ..Default::default()
        },
    )
    .await;
    let root = e.admin_token("root").await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;

    // An admin raises alice's token cap; a member cannot set caps.
    let (status, shown) = e
        .call(
            "PATCH",
            "/v1/users/alice",
            Some(&root),
            Some(json!({"caps": {"daily_tokens": 1000}})),
        )
        .await;
    assert_eq!(
        (status, &shown["caps"]),
        (200, &json!({"daily_tokens": 1000}))
    );
    let (status, _) = e
        .call(
            "PATCH",
            "/v1/users/bob",
            Some(&bob),
            Some(json!({"caps": {"daily_tokens": 100000}})),
        )
        .await;
    assert_eq!(status, 404);

    // Where bob stands: his default token cap, the server's cost cap, nothing spent.
    let (status, caps) = e.call("GET", "/v1/caps", Some(&bob), None).await;
    assert_eq!(status, 200);
    let caps = caps["caps"].as_array().unwrap().clone();
    assert_eq!(caps.len(), 2, "{caps:?}");
    assert_eq!(
        (
            &caps[0]["scope"],
            &caps[0]["token_limit"],
            &caps[0]["tokens_spent"]
        ),
        (&json!("user"), &json!(200), &json!(0))
    );
    assert_eq!(
        (
            &caps[1]["scope"],
            &caps[1]["cost_limit"],
            &caps[1]["period"]
        ),
        (&json!("server"), &json!(0.7), &json!("day"))
    );

    // Bob's first run is admitted with the token limit his cap leaves and the cost limit the
    // server's leaves; his second, with 80 tokens left, crosses it and stops.
    let op = e.create_operation(&bob, json!({"input": "one"})).await;
    let first = e.wait_status(&op, &bob, "done").await;
    assert_eq!(first["spec"]["budget"]["max_tokens"], 200, "{first}");
    assert_eq!(first["spec"]["budget"]["max_cost"], 0.7, "{first}");
    assert_eq!(first["operation"]["finish_reason"], "completed");
    let op = e.create_operation(&bob, json!({"input": "two"})).await;
    let second = e.wait_status(&op, &bob, "done").await;
    assert_eq!(second["spec"]["budget"]["max_tokens"], 80, "{second}");
    assert_eq!(
        second["operation"]["finish_reason"], "token_limit_exceeded",
        "{second}"
    );
    let (status, refused) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "three"})),
        )
        .await;
    assert_eq!(status, 429, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("your daily token cap of 200"), "{message}");
    assert_eq!(
        (
            &refused["error"]["details"]["scope"],
            &refused["error"]["details"]["measure"]
        ),
        (&json!("user"), &json!("token"))
    );

    // Alice's own cap lets her run, but the server has 10 cents left: her run stops at it,
    // and then the server's cap refuses her.
    let op = e.create_operation(&alice, json!({"input": "one"})).await;
    let hers = e.wait_status(&op, &alice, "done").await;
    let limit = hers["spec"]["budget"]["max_cost"].as_f64().unwrap();
    assert!(
        (limit - 0.10).abs() < 1e-9,
        "what the server's cap left: {hers}"
    );
    assert_eq!(hers["spec"]["budget"]["max_tokens"], 1000);
    assert_eq!(hers["operation"]["finish_reason"], "cost_limit_exceeded");
    let (status, refused) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "two"})),
        )
        .await;
    assert_eq!(status, 429, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the server's daily cost cap of 0.700000 USD is spent (0.900000 USD"),
        "{message}"
    );
    let (_, caps) = e.call("GET", "/v1/caps", Some(&alice), None).await;
    let server = caps["caps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scope"] == "server")
        .unwrap();
    assert!(
        (server["cost_spent"].as_f64().unwrap() - 0.90).abs() < 1e-9,
        "{caps}"
    );

    // Cleared, alice's caps are the defaults again.
    let (_, shown) = e
        .call(
            "PATCH",
            "/v1/users/alice",
            Some(&root),
            Some(json!({"caps": {}})),
        )
        .await;
    assert_eq!(shown["caps"], json!({}));
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}
