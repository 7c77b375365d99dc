//! An agent carried between users of a server as a file: `GET /v1/agents/{name}/export` by one,
//! `POST /v1/agents/import` by another (201, the same settings; 409 when the name is taken;
//! 422 naming what the server cannot give).

use super::*;

#[tokio::test]
async fn an_agent_file_moves_between_users_and_refusals_name_what_is_missing() {
    let e = env(vec![]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let rein = e.start(&[]).await;
    let (status, _) = e
        .call(
            &rein,
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "scribe", "config": {"tools": ["calculator"], "system_role": "Write it down.", "max_steps": 4}})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, file) = e
        .call(&rein, "GET", "/v1/agents/scribe/export", Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{file}");
    assert_eq!(file["config"]["system_role"], "Write it down.");
    let (status, _) = e
        .call(&rein, "GET", "/v1/agents/scribe/export", Some(&bob), None)
        .await;
    assert_eq!(status, 404, "another user's agent is not found");
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/agents/import",
            Some(&bob),
            Some(file.clone()),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["config"], file["config"]);
    let (status, again) = e
        .call(
            &rein,
            "POST",
            "/v1/agents/import",
            Some(&bob),
            Some(file.clone()),
        )
        .await;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{again}"
    );
    let mut wider = file.clone();
    wider["name"] = json!("other");
    wider["config"]["tools"] = json!(["calculator", "github"]);
    let (status, refused) = e
        .call(&rein, "POST", "/v1/agents/import", Some(&bob), Some(wider))
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this host has no tool github"),
        "{refused}"
    );
}
