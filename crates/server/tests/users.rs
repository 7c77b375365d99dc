//! Roles: an admin manages users through `/v1/users`; to a member those routes do not exist
//! (404), whoever asks; a disabled user's tokens stop at the next request and work again once
//! enabled; a server keeps at least one enabled admin.

use crate::common::Api;
use rein_store::{Accounts, UserRole};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_users_members_cannot_and_disabled_tokens_stop() {
    let e = Api::new(Vec::new()).await;
    let root = e.token("root").await;
    let bob = e.token("bob").await;
    let root_id = e.app.store.user_by_name("root").await.unwrap().unwrap().id;
    e.app
        .store
        .set_role(&root_id, UserRole::Admin)
        .await
        .unwrap();

    let (status, me) = e.call("GET", "/v1/me", Some(&bob), None).await;
    assert_eq!(status, 200);
    assert_eq!(
        (me["name"].as_str(), me["role"].as_str()),
        (Some("bob"), Some("member"))
    );
    // A member: the admin routes are not there.
    for (method, path, body) in [
        ("GET", "/v1/users", None),
        ("POST", "/v1/users", Some(json!({"name": "eve"}))),
        ("GET", "/v1/users/root", None),
        ("PATCH", "/v1/users/root", Some(json!({"disabled": true}))),
        ("PATCH", "/v1/users/bob", Some(json!({"role": "admin"}))),
    ] {
        let (status, answer) = e.call(method, path, Some(&bob), body).await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
    }
    assert!(e.app.store.user_by_name("eve").await.unwrap().is_none());

    // The admin lists, creates, changes roles.
    let (status, list) = e.call("GET", "/v1/users", Some(&root), None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = list["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bob", "root"]);
    let (status, carol) = e
        .call(
            "POST",
            "/v1/users",
            Some(&root),
            Some(json!({"name": "carol", "role": "admin"})),
        )
        .await;
    assert_eq!(
        (status, carol["role"].as_str()),
        (201, Some("admin")),
        "{carol}"
    );
    let (status, _) = e
        .call(
            "POST",
            "/v1/users",
            Some(&root),
            Some(json!({"name": "carol"})),
        )
        .await;
    assert_eq!(status, 409);
    let (status, body) = e
        .call(
            "POST",
            "/v1/users",
            Some(&root),
            Some(json!({"name": "no good"})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = e
        .call(
            "PATCH",
            "/v1/users/carol",
            Some(&root),
            Some(json!({"role": "member"})),
        )
        .await;
    assert_eq!((status, body["role"].as_str()), (200, Some("member")));

    // Disabled: bob's token stops at once, and works again when enabled.
    let (status, body) = e
        .call(
            "PATCH",
            "/v1/users/bob",
            Some(&root),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(status, 200);
    assert!(body["disabled_at"].is_string(), "{body}");
    let (status, _) = e.call("GET", "/v1/me", Some(&bob), None).await;
    assert_eq!(status, 401);
    let (status, _) = e
        .call(
            "PATCH",
            "/v1/users/bob",
            Some(&root),
            Some(json!({"disabled": false})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = e.call("GET", "/v1/me", Some(&bob), None).await;
    assert_eq!(status, 200);

    // The last enabled admin keeps the server administrable.
    let (status, body) = e
        .call(
            "PATCH",
            "/v1/users/root",
            Some(&root),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(status, 409, "not yourself: {body}");
    let (status, body) = e
        .call(
            "PATCH",
            "/v1/users/root",
            Some(&root),
            Some(json!({"role": "member"})),
        )
        .await;
    assert_eq!(status, 409, "the last admin: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("last enabled admin")
    );
    let (status, _) = e.call("GET", "/v1/users/nobody", Some(&root), None).await;
    assert_eq!(status, 404);
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}
