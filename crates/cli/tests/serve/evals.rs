//! `/v1/evals` through a server: a run answered with its results and kept for its owner only;
//! each refusal with its status.

use super::*;

#[tokio::test]
async fn evals_through_the_api_run_are_kept_per_user_and_refuse_what_cannot_run() {
    let e = env(vec![]).await;
    e.model
        .route("Be exact.", vec![Canned::openai_text("It is 4.")]);
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let rein = e.start(&[]).await;
    let (status, _) = e
        .call(
            &rein,
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "exact", "config": {"system_role": "Be exact."}})),
        )
        .await;
    assert_eq!(status, 201);
    let case =
        json!({"id": "sum", "input": "2+2?", "assert": [{"type": "contains", "value": "4"}]});
    for (body, status) in [
        (
            json!({"dataset": "d", "cases": [], "agents": ["exact"]}),
            400,
        ),
        (json!({"dataset": "d", "cases": [case], "agents": []}), 400),
        (
            json!({"dataset": "d", "cases": [case], "agents": ["exact"], "concurrency": 9}),
            400,
        ),
        (
            json!({"dataset": "d", "cases": [case], "agents": ["ghost"]}),
            422,
        ),
        (
            json!({"dataset": "d", "cases": [case], "agents": ["exact@7"]}),
            422,
        ),
        (
            json!({"dataset": "d", "cases": [{"id": "r", "input": "x", "assert": [{"type": "regex", "pattern": "("}]}], "agents": ["exact"]}),
            422,
        ),
        (
            json!({"dataset": "d", "cases": [case, case], "agents": ["exact"]}),
            422,
        ),
    ] {
        let (got, answer) = e
            .call(&rein, "POST", "/v1/evals", Some(&alice), Some(body.clone()))
            .await;
        assert_eq!(got, status, "{body} → {answer}");
    }
    assert!(e.model.requests().is_empty(), "no refusal ran a case");
    let (status, run) = e
        .call(
            &rein,
            "POST",
            "/v1/evals",
            Some(&alice),
            Some(json!({"dataset": "arithmetic", "cases": [case], "agents": ["exact"]})),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["summary"][0]["agent"], "exact@1");
    assert_eq!(run["results"][0]["passed"], true, "{run:#}");
    let id = run["id"].as_str().unwrap();
    let (status, list) = e.call(&rein, "GET", "/v1/evals", Some(&alice), None).await;
    assert_eq!(status, 200);
    assert_eq!(list["runs"][0]["id"], id);
    let (status, _) = e
        .call(&rein, "GET", &format!("/v1/evals/{id}"), Some(&bob), None)
        .await;
    assert_eq!(status, 404, "another user's run is not found");
    let (_, theirs) = e.call(&rein, "GET", "/v1/evals", Some(&bob), None).await;
    assert_eq!(theirs["runs"], json!([]));
    let (status, _) = e
        .call(&rein, "GET", "/v1/evals/not-an-id", Some(&alice), None)
        .await;
    assert_eq!(status, 400);
}
