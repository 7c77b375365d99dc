//! Prometheus metrics of what the server ran.

use crate::common::{Api, calc};
use serde_json::json;

/// `/metrics` after a run with a tool call: the steps, model calls (with latency), tokens
/// (with what the provider's prompt cache served), cost and what the cache saved by model,
/// and tool calls by outcome this server ran, operations by status from the database, open
/// streams; tokens required like every route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_the_server_ran() {
    // The answer's usage says 64 of its 100 input tokens came from the provider's cache.
    let chunk = |v: serde_json::Value| format!("data: {v}\n\n");
    let cached = [
        chunk(json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "17 × 23 = 391."}, "finish_reason": "stop"}]})),
        chunk(json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                      "prompt_tokens_details": {"cached_tokens": 64}}})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let e = Api::new(vec![
        calc("c1", "17*23"),
        rein_model::testing::streams::stream(cached, "text/event-stream"),
    ])
    .await;
    let token = e.token("alice").await;
    let op = e
        .create_operation(&token, json!({"input": "What is 17*23?"}))
        .await;
    let detail = e.wait_status(&op, &token, "done").await;
    let (status, _, _) = e.text("/metrics", None).await;
    assert_eq!(status, 401);
    let (status, content_type, text) = e.text("/metrics", Some(&token)).await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("application/openmetrics-text"));
    let model = "model=\"openai/gpt-4o-mini\"";
    for line in [
        format!("rein_model_calls_total{{{model}}} 2"),
        format!("rein_model_call_seconds_count{{{model}}} 2"),
        format!("rein_tokens_total{{{model},kind=\"input\"}} 200"),
        format!("rein_tokens_total{{{model},kind=\"output\"}} 40"),
        format!("rein_tokens_total{{{model},kind=\"cache_read\"}} 64"),
        format!("rein_tokens_total{{{model},kind=\"cache_write\"}} 0"),
        "rein_tool_calls_total{tool=\"calculator/evaluate\",outcome=\"succeeded\"} 1".to_owned(),
        "rein_operations{status=\"done\"} 1".to_owned(),
        "rein_event_streams 0".to_owned(),
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    let steps: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("rein_steps_total "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(steps >= 3, "{text}");
    assert!(
        text.contains("rein_cost_usd_total{model=\"openai/gpt-4o-mini\"} 0.0000"),
        "{text}"
    );
    // The 64 cached tokens at gpt-4o-mini's input price ($0.15 per million) less its cached
    // price ($0.075): what the operation says its cache saved.
    let saved: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("rein_cache_saved_usd_total{model=\"openai/gpt-4o-mini\"} "))
        .unwrap_or_else(|| panic!("no saved line in:\n{text}"))
        .parse()
        .unwrap();
    assert!((saved - 64.0 * 0.075e-6).abs() < 1e-12, "{saved}");
    assert_eq!(detail["cache"]["saved"].as_f64(), Some(saved), "{detail}");
}
