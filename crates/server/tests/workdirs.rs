//! `/v1/settings/workdir`: a user chooses the directory their operations work in, inside one
//! the server allows; their operations' specs carry it, another user's do not; a choice
//! outside the roots (`..`, a relative path, a missing directory) is refused naming why, and a
//! stored choice the server no longer allows refuses the operation instead of running it
//! elsewhere.

use crate::common::Api;
use rein_model::testing::Canned;
use rein_store::Accounts as _;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_chooses_where_their_operations_work_within_the_allowed_roots() {
    let base = std::env::temp_dir().join(format!("rein-wd-{}", rein_core::OperationId::new()));
    let root = base.join("root");
    std::fs::create_dir_all(root.join("alice")).unwrap();
    std::fs::create_dir_all(base.join("elsewhere")).unwrap();
    let roots = rein_operation::workdirs::WorkdirRoots::new(std::slice::from_ref(&root)).unwrap();
    let e = Api::with_host(
        vec![Canned::openai_text("Here."), Canned::openai_text("There.")],
        |h| h.user_workdirs = roots,
    )
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, shown) = e
        .call("GET", "/v1/settings/workdir", Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(
        shown,
        json!({"chosen": null, "effective": null, "choosable": true})
    );

    let mine = std::fs::canonicalize(root.join("alice"))
        .unwrap()
        .display()
        .to_string();
    let (status, chosen) = e
        .call(
            "PUT",
            "/v1/settings/workdir",
            Some(&alice),
            Some(json!({"path": root.join("alice").display().to_string()})),
        )
        .await;
    assert_eq!(status, 200, "{chosen}");
    assert_eq!(chosen["chosen"], mine.as_str());
    assert_eq!(chosen["effective"], mine.as_str());

    for (path, says) in [
        (format!("{}/../elsewhere", root.display()), "outside"),
        ("relative/dir".to_owned(), "absolute path"),
        (
            root.join("missing").display().to_string(),
            "not a directory",
        ),
    ] {
        let (status, refused) = e
            .call(
                "PUT",
                "/v1/settings/workdir",
                Some(&bob),
                Some(json!({"path": path})),
            )
            .await;
        assert_eq!(status, 422, "{path}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{path}: {message}");
    }

    let op = e.create_operation(&alice, json!({"input": "where?"})).await;
    let detail = e.wait_status(&op, &alice, "done").await;
    assert_eq!(detail["spec"]["working_directory"], mine.as_str());
    let theirs = e.create_operation(&bob, json!({"input": "where?"})).await;
    let detail = e.wait_status(&theirs, &bob, "done").await;
    assert!(detail["spec"]["working_directory"].is_null(), "{detail}");

    // A choice the server no longer allows refuses the run, saying so.
    let bob_id = e.app.store.user_by_name("bob").await.unwrap().unwrap().id;
    let outside = base.join("elsewhere").display().to_string();
    e.app
        .store
        .set_working_directory(&bob_id, Some(&outside))
        .await
        .unwrap();
    let (status, refused) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "hi"})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("your working directory"), "{message}");

    // Forgotten: the server's own (none here) serves again.
    let (status, cleared) = e
        .call(
            "PUT",
            "/v1/settings/workdir",
            Some(&alice),
            Some(json!({"path": null})),
        )
        .await;
    assert_eq!(status, 200, "{cleared}");
    assert!(cleared["chosen"].is_null());
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
    std::fs::remove_dir_all(&base).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_roots_lets_nobody_choose() {
    let e = Api::new(vec![]).await;
    let alice = e.token("alice").await;
    let (status, refused) = e
        .call(
            "PUT",
            "/v1/settings/workdir",
            Some(&alice),
            Some(json!({"path": std::env::temp_dir().display().to_string()})),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--user-workdir-root"),
        "{refused}"
    );
}
