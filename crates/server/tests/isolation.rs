//! Users are isolated (another user's things are 404, never 403: their existence is not told)
//! and every route needs a live token.

use crate::common::Api;
use rein_model::testing::Canned;
use rein_store::Accounts;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_are_isolated_and_tokens_are_required() {
    let e = Api::new(vec![Canned::openai_text("hello alice")]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, created) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "hi"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    let topic = created["topic_id"].as_str().unwrap().to_owned();
    for path in [
        format!("/v1/operations/{op}"),
        format!("/v1/operations/{op}/events"),
        format!("/v1/operations/{op}/interventions"),
        format!("/v1/topics/{topic}/messages"),
    ] {
        let (status, body) = e.call("GET", &path, Some(&bob), None).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"]["code"], "not_found");
    }
    let (status, _) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/cancel"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = e
        .call(
            "POST",
            &format!("/v1/operations/{op}/interventions"),
            Some(&bob),
            Some(json!({"decisions": [{"tool_call_id": "x", "decision": "approve"}]})),
        )
        .await;
    assert_eq!(status, 404);
    // Bob cannot continue Alice's conversation either.
    let (status, _) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "and?", "topic": topic})),
        )
        .await;
    assert_eq!(status, 404);
    let (_, bobs) = e.call("GET", "/v1/operations", Some(&bob), None).await;
    assert_eq!(bobs, json!([]));
    let (_, alices) = e.call("GET", "/v1/operations", Some(&alice), None).await;
    assert_eq!(alices[0]["id"], op);
    // Alice's operation ran, once, on what she asked.
    e.wait_status(&op, &alice, "done").await;
    let asked = e.model.requests();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].body.to_string().contains("\"hi\""),
        "{:?}",
        asked[0].body
    );
    // Agents are per user.
    let (status, _) = e
        .call(
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "helper", "config": {"model": "openai/gpt-4o", "approval": "auto-run"}})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, _) = e.call("GET", "/v1/agents/helper", Some(&bob), None).await;
    assert_eq!(status, 404);
    let (status, body) = e
        .call(
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "helper"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("conflict"))
    );

    for (token, want) in [
        (None, "missing `Authorization: Bearer <token>`"),
        (Some("rein_nope"), "unknown, expired or revoked token"),
    ] {
        let (status, body) = e.call("GET", "/v1/operations", token, None).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["message"], want);
    }
    // A revoked token stops working at once (`rein token revoke` is this store call; the
    // CLI's own is tested end to end in rein-cli).
    let store = &e.app.store;
    let user = store.user_by_name("bob").await.unwrap().unwrap();
    let tokens = store.list_tokens(&user.id).await.unwrap();
    assert_eq!(tokens.len(), 1);
    assert!(store.revoke_token(&user.id, &tokens[0].id).await.unwrap());
    let (status, _) = e.call("GET", "/v1/operations", Some(&bob), None).await;
    assert_eq!(status, 401);
}
