//! `/v1/responses` beyond what the SDK test drives: a response is its owner's only (another
//! user reads and cancels nothing of it), an input the route cannot read is refused naming
//! the part, and `previous_response_id` must be the caller's (streaming is the SDK test's:
//! `rein-cli`'s `serve::the_openai_sdk_drives_the_responses_api`).

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_is_its_owners_and_what_it_cannot_read_is_refused() {
    let e = Api::new(vec![Canned::openai_text("Hello.")]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, r) = e
        .call(
            "POST",
            "/v1/responses",
            Some(&alice),
            Some(json!({"model": "openai/gpt-4o-mini", "input": "Hi.", "metadata": {"k": "v"}})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["output_text"], "Hello.");
    assert_eq!(r["metadata"], json!({"k": "v"}));
    let id = r["id"].as_str().unwrap();
    let (status, again) = e
        .call("GET", &format!("/v1/responses/{id}"), Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["output"], r["output"]);
    for (method, path) in [
        ("GET", format!("/v1/responses/{id}")),
        ("POST", format!("/v1/responses/{id}/cancel")),
    ] {
        let (status, body) = e.call(method, &path, Some(&bob), None).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    let (status, body) = e
        .call(
            "POST",
            "/v1/responses",
            Some(&bob),
            Some(json!({"model": "openai/gpt-4o-mini", "input": "More.", "previous_response_id": id})),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = e
        .call(
            "POST",
            "/v1/responses",
            Some(&alice),
            Some(json!({"model": "openai/gpt-4o-mini", "input": [{"role": "user", "content": [{"type": "input_image"}]}]})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("content part 0 (input_image): give `image_url` or `file_id`"),
        "{body}"
    );
    assert_eq!(
        e.model.requests().len(),
        1,
        "nothing refused reached the model"
    );
}
