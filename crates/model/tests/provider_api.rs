//! The rest of the provider surface over loopback HTTP: structured output (native and by
//! tool forcing), embeddings, model listing, empty completions, and `provider/model` resolution.

use crate::common;

use common::fixture;
use common::server::{Canned, serve};
use rein_core::Message;
use rein_model::registry::{ProviderConfig, ProviderOverride, Quirks, Registry};
use rein_model::transport::Timeouts;
use rein_model::{
    ChatRequest, ErrorKind, ModelEvent, ModelProvider, Protocol, Provider, ReqwestTransport,
    RetryPolicy, collect,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn json_reply(status: u16, body: serde_json::Value) -> Canned {
    Canned {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
        max_piece: 7,
        stall_after: None,
        delay: None,
    }
}

fn provider(protocol: Protocol, base: String) -> Provider {
    let config = ProviderConfig {
        id: "test".into(),
        protocol,
        base_url: base,
        api_key: Some("k".into()),
        headers: Default::default(),
        quirks: Quirks::default(),
    };
    let retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(5),
        ..Default::default()
    };
    Provider::new(
        config,
        Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap()),
    )
    .with_retry(retry)
}

fn request(model: &str) -> ChatRequest {
    ChatRequest::new(
        model,
        vec![Arc::new(Message::user("Weather report for Paris as JSON"))],
    )
}

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "number"}}, "required": ["city", "temp"]})
}

#[tokio::test]
async fn structured_output_uses_the_native_json_schema_where_the_protocol_has_it() {
    let reply = json!({"id": "chatcmpl-1", "model": "gpt-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"city\":\"Paris\",\"temp\":18}"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18}});
    let server = serve(vec![json_reply(200, reply)], 1).await;
    let p = provider(Protocol::OpenaiChat, format!("{}/v1", server.base));
    let v = p
        .generate_object(request("gpt-4o"), "weather_report", schema())
        .await
        .unwrap();
    assert_eq!(v, json!({"city": "Paris", "temp": 18}));
    let sent = &server.requests()[0].body;
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(
        sent["response_format"]["json_schema"]["name"],
        "weather_report"
    );
}

#[tokio::test]
async fn structured_output_falls_back_to_a_forced_tool_call() {
    let reply = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather_report", "input": {"city": "Paris", "temp": 18}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 9}});
    let server = serve(vec![json_reply(200, reply)], 2).await;
    let p = provider(Protocol::Anthropic, format!("{}/v1", server.base));
    let v = p
        .generate_object(request("claude-sonnet-4-5"), "weather_report", schema())
        .await
        .unwrap();
    assert_eq!(v, json!({"city": "Paris", "temp": 18}));
    let sent = &server.requests()[0].body;
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "weather_report"})
    );
    assert_eq!(sent["tools"][0]["input_schema"], schema());
}

#[tokio::test]
async fn embeddings_and_model_lists() {
    let server = serve(
        vec![
            json_reply(200, json!({"data": [{"embedding": [0.1, 0.2]}, {"embedding": [0.3, 0.4]}]})),
            json_reply(200, json!({"data": [{"id": "gpt-4o"}, {"id": "text-embedding-3-small"}]})),
            json_reply(200, json!({"embeddings": [[0.5, 0.25]]})),
            json_reply(200, json!({"models": [{"name": "models/gemini-2.5-flash"}, {"name": "models/text-embedding-004"}]})),
            json_reply(401, json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})),
        ],
        3,
    )
    .await;
    let openai = provider(Protocol::OpenaiChat, format!("{}/v1", server.base));
    let v = openai
        .embed("text-embedding-3-small", vec!["a".into(), "b".into()])
        .await
        .unwrap();
    assert_eq!(v, vec![vec![0.1, 0.2], vec![0.3, 0.4]]);
    assert_eq!(
        openai.list_models().await.unwrap(),
        ["gpt-4o", "text-embedding-3-small"]
    );
    let ollama = provider(Protocol::Ollama, server.base.clone());
    assert_eq!(
        ollama
            .embed("nomic-embed-text", vec!["a".into()])
            .await
            .unwrap(),
        vec![vec![0.5, 0.25]]
    );
    let gemini = provider(Protocol::Gemini, format!("{}/v1beta", server.base));
    assert_eq!(
        gemini.list_models().await.unwrap(),
        ["gemini-2.5-flash", "text-embedding-004"]
    );
    let err = openai.list_models().await.unwrap_err();
    assert_eq!((err.kind, err.http_status), (ErrorKind::Auth, Some(401)));
    let paths: Vec<String> = server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        paths,
        [
            "POST /v1/embeddings",
            "GET /v1/models",
            "POST /api/embed",
            "GET /v1beta/models",
            "GET /v1/models"
        ]
    );
    let anthropic = provider(Protocol::Anthropic, "http://127.0.0.1:9".into());
    assert_eq!(
        anthropic
            .embed("x", vec!["a".into()])
            .await
            .unwrap_err()
            .kind,
        ErrorKind::Unsupported
    );
}

#[tokio::test]
async fn an_empty_completion_is_retried_as_a_failure() {
    let empty = "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = serve(
        vec![
            Canned {
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                body: empty.as_bytes().to_vec(),
                max_piece: 7,
                stall_after: None,
                delay: None,
            },
            common::server::from_fixture(&fixture("openai-chat/stream-text-usage")),
        ],
        4,
    )
    .await;
    let p = provider(Protocol::OpenaiChat, format!("{}/v1", server.base));
    use futures::StreamExt;
    let events: Vec<ModelEvent> = p.chat(request("gpt-4o-mini")).collect().await;
    assert!(events.iter().any(
        |e| matches!(e, ModelEvent::Retry { error, .. } if error.kind == ErrorKind::EmptyCompletion)
    ));
    let r = collect(futures::stream::iter(events)).await;
    assert_eq!(r.text, "Hello there, friendly café visitor! 👋");
}

#[tokio::test]
async fn a_configured_provider_resolves_from_its_address() {
    let server = serve(
        vec![common::server::from_fixture(&fixture(
            "openai-compat/stream-reasoning-content-tool",
        ))],
        5,
    )
    .await;
    let overrides = BTreeMap::from([(
        "mylab".to_owned(),
        ProviderOverride {
            base_url: Some(format!("{}/v1", server.base)),
            api_key: Some("lab-key".into()),
            ..Default::default()
        },
    )]);
    let registry = Registry::new(
        Registry::builtin_presets_json(),
        overrides,
        Box::new(|_| None),
    )
    .unwrap();
    let transport = Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap());
    let (p, model) = registry
        .resolve("mylab/Qwen/Qwen3-8B", transport, None)
        .unwrap();
    assert_eq!(model, "Qwen/Qwen3-8B");
    let r = collect(p.chat(request(&model))).await;
    assert_eq!(r.text, "17 × 23 = 391.");
    let sent = &server.requests()[0];
    assert_eq!(sent.body["model"], "Qwen/Qwen3-8B");
    assert!(
        sent.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer lab-key")
    );
}

/// OpenAI's own API gets the operation's `prompt_cache_key` (its preset's quirk); an
/// OpenAI-compatible server, which may refuse a field it does not know, does not.
#[tokio::test]
async fn only_openai_gets_the_prompt_cache_key() {
    let server = serve(
        vec![Canned::openai_text("one"), Canned::openai_text("two")],
        5,
    )
    .await;
    let base = format!("{}/v1", server.base);
    let overrides = BTreeMap::from([
        (
            "openai".to_owned(),
            ProviderOverride {
                base_url: Some(base.clone()),
                api_key: Some("k".into()),
                ..Default::default()
            },
        ),
        (
            "mylab".to_owned(),
            ProviderOverride {
                base_url: Some(base),
                api_key: Some("k".into()),
                ..Default::default()
            },
        ),
    ]);
    let registry = Registry::new(
        Registry::builtin_presets_json(),
        overrides,
        Box::new(|_| None),
    )
    .unwrap();
    let transport = Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap());
    for name in ["openai/gpt-4o-mini", "mylab/qwen3"] {
        let (p, model) = registry.resolve(name, transport.clone(), None).unwrap();
        let mut req = request(&model);
        req.prompt_cache = Some(rein_model::PromptCache {
            key: Some("op-1".into()),
            ..Default::default()
        });
        collect(p.chat(req)).await;
    }
    let sent = server.requests();
    assert_eq!(sent[0].body["prompt_cache_key"], "op-1");
    assert!(
        sent[1].body.get("prompt_cache_key").is_none(),
        "{}",
        sent[1].body
    );
}
