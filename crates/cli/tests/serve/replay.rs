//! `POST /v1/operations/{id}/replay` and `…/replay/chain` through a server: answers beside the
//! original's; each refusal with its status and code; another user's operation not found; what
//! replays spend in the caller's usage.

use super::*;

#[tokio::test]
async fn replays_through_the_api_compare_models_and_refuse_what_does_not_fit() {
    let e = env(vec![calc("c1", "6*7"), Canned::openai_text("42.")]).await;
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
    let path = format!("/v1/operations/{op}/replay");
    let post = |token: String, path: String, body: Value| {
        let (e, rein) = (&e, &rein);
        async move { e.call(rein, "POST", &path, Some(&token), Some(body)).await }
    };
    for (body, status, code) in [
        (json!({"step": 1, "models": []}), 400, "invalid_request"),
        (
            json!({"step": 1, "models": vec!["openai/gpt-4o"; 9]}),
            400,
            "invalid_request",
        ),
        (
            json!({"step": 1, "models": ["openai/gpt-4o"], "runs": 6}),
            400,
            "invalid_request",
        ),
        (
            json!({"step": 1, "models": ["gpt-4o"]}),
            400,
            "invalid_request",
        ),
        (
            json!({"step": 9, "models": ["openai/gpt-4o"]}),
            422,
            "step_missing",
        ),
        (
            json!({"step": 2, "models": ["openai/gpt-4o"]}),
            409,
            "replay_does_not_fit",
        ),
    ] {
        let (got, answer) = post(alice.clone(), path.clone(), body.clone()).await;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{body} → {answer}"
        );
    }
    let (got, _) = post(
        bob.clone(),
        path.clone(),
        json!({"step": 1, "models": ["openai/gpt-4o"]}),
    )
    .await;
    assert_eq!(got, 404);
    assert_eq!(e.model.requests().len(), 2, "no refusal asked a model");

    e.model.route(
        "openai/gpt-4o",
        vec![Canned::openai_text("Forty-two.").with_usage(50, 5)],
    );
    let (got, replay) = post(
        alice.clone(),
        path.clone(),
        json!({"step": 1, "models": ["openai/gpt-4o"]}),
    )
    .await;
    assert_eq!(got, 200, "{replay}");
    assert_eq!(
        replay["original"]["tool_calls"][0]["name"],
        "calculator/evaluate"
    );
    let answer = &replay["answers"][0];
    assert_eq!(answer["answer"], "Forty-two.");
    assert_eq!(
        (
            answer["input_tokens"].as_u64(),
            answer["output_tokens"].as_u64()
        ),
        (Some(50), Some(5))
    );
    assert_eq!(answer["same_tool_calls"], false);

    let (got, usage) = e
        .call(&rein, "GET", "/v1/usage?by=agent", Some(&alice), None)
        .await;
    assert_eq!(got, 200, "{usage}");
    let rows = usage["rows"].as_array().unwrap();
    let replayed = rows
        .iter()
        .find(|r| r["key"] == "(replay)")
        .unwrap_or_else(|| panic!("{usage}"));
    assert_eq!(replayed["input_tokens"], 50);
    assert_eq!(replayed["operations"], 0);

    e.model.route(
        "openai/gpt-4o",
        vec![calc("k", "6*7"), Canned::openai_text("42!")],
    );
    let (got, chain) = post(
        alice.clone(),
        format!("{path}/chain"),
        json!({"model": "openai/gpt-4o"}),
    )
    .await;
    assert_eq!(got, 200, "{chain}");
    assert_eq!(chain["diverged_at"], Value::Null, "{chain}");
    assert_eq!(chain["steps"].as_array().unwrap().len(), 2);
}
