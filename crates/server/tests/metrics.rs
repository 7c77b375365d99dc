//! Prometheus metrics of what the server ran.

use crate::common::{Api, calc};
use rein_model::testing::Canned;
use serde_json::json;

/// `/metrics` after a run with a tool call: the steps, model calls (with latency), tokens and
/// cost by model, and tool calls by outcome this server ran, operations by status from the
/// database, open streams; tokens required like every route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_what_the_server_ran() {
    let e = Api::new(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
    ])
    .await;
    let token = e.token("alice").await;
    let op = e
        .create_operation(&token, json!({"input": "What is 17*23?"}))
        .await;
    e.wait_status(&op, &token, "done").await;
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
}
