//! What the providers' prompt caches served, as `rein op show` says it: the input tokens read
//! from the cache, from the usage the provider reported, and the money that saved at the
//! model's prices.

use super::*;

#[tokio::test]
async fn op_show_says_how_much_input_the_provider_served_from_its_cache() {
    let chunk = |v: serde_json::Value| format!("data: {v}\n\n");
    let body = [
        chunk(serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}]})),
        chunk(serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
            "usage": {"prompt_tokens": 2000, "completion_tokens": 20, "total_tokens": 2020,
                      "prompt_tokens_details": {"cached_tokens": 1536}}})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let e = env(vec![rein_model::testing::streams::stream(
        body,
        "text/event-stream",
    )])
    .await;
    let (code, _, err) = e.rein(&["run", "hello"]).await;
    assert_eq!(code, 0, "{err}");
    let id = op_id(&err).to_string();
    let (_, shown, _) = e.rein(&["op", "show", &id]).await;
    assert!(
        shown.contains(
            // gpt-4o-mini: input 0.15, cached input 0.075 USD per million tokens.
            "cache      1536 of 2000 input tokens read from the provider's cache (77%), 0 written, 0.000115 USD saved"
        ),
        "{shown}"
    );
}
