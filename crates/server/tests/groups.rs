//! Groups through the API: made from the caller's agents (a missing one named), run as one
//! operation tree whose members speak in turn, invisible to another user.

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_through_the_api() {
    let e = Api::new(Vec::new()).await;
    e.model
        .route("ROLE-ANN", vec![Canned::openai_text("ann: hello @bob")]);
    e.model
        .route("ROLE-BOB", vec![Canned::openai_text("bob: hi")]);
    let token = e.token("alice").await;
    let group = json!({"name": "duo", "config": {"members": ["ann", "bob"], "policy": "mentioned_first", "max_rounds": 2}});
    let (status, body) = e
        .call("POST", "/v1/groups", Some(&token), Some(group.clone()))
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "agent_missing", "{body}");
    e.create_agents(
        &token,
        &[
            ("ann", json!({"system_role": "ROLE-ANN: be brief."})),
            ("bob", json!({"system_role": "ROLE-BOB: be brief."})),
        ],
    )
    .await;
    let (status, body) = e
        .call("POST", "/v1/groups", Some(&token), Some(group.clone()))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["version"], 1);
    let (status, _) = e
        .call("POST", "/v1/groups", Some(&token), Some(group))
        .await;
    assert_eq!(status, 409);
    let (status, body) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&token),
            Some(json!({"input": "hi", "agent": "ann", "group": "duo"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "agent_and_group");
    let op = e
        .create_operation(
            &token,
            json!({"input": "Greet each other.", "group": "duo"}),
        )
        .await;
    let done = e.wait_status(&op, &token, "done").await;
    assert_eq!(done["sub_agents"].as_array().unwrap().len(), 2);
    let topic = done["operation"]["topic_id"].as_str().unwrap();
    let (_, messages) = e
        .call(
            "GET",
            &format!("/v1/topics/{topic}/messages"),
            Some(&token),
            None,
        )
        .await;
    let authored: Vec<(&str, &str)> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| Some((m["author"].as_str()?, m["content"][0]["text"].as_str()?)))
        .collect();
    assert_eq!(authored, [("ann", "ann: hello @bob"), ("bob", "bob: hi")]);
    // Another user neither sees the group nor can run it.
    let bob = e.token("bob").await;
    let (status, _) = e.call("GET", "/v1/groups/duo", Some(&bob), None).await;
    assert_eq!(status, 404);
    let (status, body) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "hi", "group": "duo"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "group_missing");
    let (status, _) = e.call("DELETE", "/v1/groups/duo", Some(&token), None).await;
    assert_eq!(status, 204);
}
