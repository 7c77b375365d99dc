//! `POST /v1/operations/{id}/fork` through a server: a fork of a finished run from its tool
//! step with another model runs at once and shows its lineage; each refusal has its status and
//! code, and another user's operation is not theirs to fork.

use super::*;

#[tokio::test]
async fn a_fork_through_the_api_runs_and_every_refusal_names_its_reason() {
    let e = env(vec![
        calc("c1", "6*7"),
        Canned::openai_text("42."),
        Canned::openai_text("Forty-two."),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let rein = e.start(&[]).await;
    let op = e
        .create_operation(
            &rein,
            &alice,
            json!({"input": "6*7?", "tools": ["calculator"]}),
        )
        .await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    let fork_path = format!("/v1/operations/{op}/fork");

    let refused = |status: u16, code: &'static str, body: Value| {
        let e = &e;
        let rein = &rein;
        let path = fork_path.clone();
        let token = alice.clone();
        async move {
            let (got, answer) = e.call(rein, "POST", &path, Some(&token), Some(body)).await;
            assert_eq!(
                (got, answer["error"]["code"].as_str()),
                (status, Some(code)),
                "{answer}"
            );
            answer
        }
    };
    refused(400, "invalid_request", json!({"step": -1})).await;
    refused(400, "invalid_request", json!({"step": 2, "temperature": 1})).await;
    let answer = refused(422, "step_missing", json!({"step": 99})).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has no step 99"),
        "{answer}"
    );
    refused(
        403,
        "fork_widens",
        json!({"step": 2, "tools": ["calculator", "shell/run"]}),
    )
    .await;
    let (_, detail) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    let last = detail["steps"].as_array().unwrap().len();
    refused(409, "fork_does_not_fit", json!({"step": last})).await;
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &fork_path,
            Some(&bob),
            Some(json!({"step": 2})),
        )
        .await;
    assert_eq!(status, 404, "another user's operation is not found");
    assert_eq!(e.model.requests().len(), 2, "no refusal asked a model");

    let (status, forked) = e
        .call(
            &rein,
            "POST",
            &fork_path,
            Some(&alice),
            Some(json!({"step": 2, "model": "openai/gpt-4o"})),
        )
        .await;
    assert_eq!(status, 202, "{forked}");
    assert_eq!(forked["forked_from"], op.as_str());
    let fork = forked["operation_id"].as_str().unwrap().to_owned();
    let detail = wait_status(&e, &rein, &fork, &alice, "done").await;
    assert_eq!(
        detail["spec"]["forked_from"],
        json!({"operation": op, "step": 2})
    );
    assert_eq!(detail["operation"]["topic_id"], forked["topic_id"]);
    assert_eq!(detail["operation"]["trigger"], "api");
    assert_eq!(e.model.requests()[2].body["model"], "gpt-4o");
    let (_, original) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(original["steps"].as_array().unwrap().len(), last);
}
