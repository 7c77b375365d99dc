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

/// A Gemini provider whose calls name an explicit context cache from `min_tokens` on.
fn gemini_caching(base: String, min_tokens: u64) -> Provider {
    let config = ProviderConfig {
        id: "gemini".into(),
        protocol: Protocol::Gemini,
        base_url: base,
        api_key: Some("k".into()),
        headers: Default::default(),
        quirks: Quirks {
            context_cache_min_tokens: Some(min_tokens),
            ..Default::default()
        },
    };
    Provider::new(
        config,
        Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap()),
    )
}

/// A request with a system prompt of about `words` words and one tool, asking for caching.
fn cacheable(words: usize, tool: &str) -> ChatRequest {
    let mut req = ChatRequest::new(
        "gemini-2.5-flash",
        vec![
            Arc::new(Message::system(
                "You forecast the weather. ".repeat(words / 4),
            )),
            Arc::new(Message::user("Weather in Paris?")),
        ],
    );
    req.tools = vec![rein_model::ToolSpec {
        name: tool.into(),
        description: "Forecast for a city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    req.prompt_cache = Some(rein_model::PromptCache::default());
    req
}

fn answer() -> Canned {
    rein_model::testing::streams::gemini(&[json!({"text": "Sunny."})])
}

/// With the `context_cache_min_tokens` quirk, Gemini calls put their system instruction, tools
/// and tool config into one `cachedContents` resource and name it (without those fields, which
/// Gemini refuses next to a cache); the next call with the same prefix names it again, a new
/// tool set gets its own; a forced final answer (tool config NONE), a call too small by the
/// estimate, and one without prompt caching (a cassette run) are sent whole.
#[tokio::test]
async fn gemini_calls_name_an_explicit_context_cache_of_their_system_and_tools() {
    let server = serve((0..6).map(|_| answer()).collect(), 5).await;
    let p = gemini_caching(format!("{}/v1beta", server.base), 1024);
    let mut long = cacheable(6000, "forecast_week");
    long.prompt_cache = Some(rein_model::PromptCache {
        long_ttl: true,
        ..Default::default()
    });
    let mut withdrawn = cacheable(6000, "forecast");
    withdrawn.tool_choice = rein_model::ToolChoice::None;
    let mut uncached = cacheable(6000, "forecast");
    uncached.prompt_cache = None;
    for req in [
        cacheable(6000, "forecast"),
        cacheable(6000, "forecast"),
        long,
        withdrawn,
        uncached,
        cacheable(40, "forecast"),
    ] {
        let r = collect(p.chat(req)).await;
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.text, "Sunny.");
    }
    let sent = server.requests();
    for r in &sent {
        assert!(
            r.refused.is_none(),
            "{} {}: {:?}",
            r.method,
            r.path,
            r.refused
        );
    }
    let paths: Vec<&str> = sent.iter().map(|r| r.path.as_str()).collect();
    let create = "/v1beta/cachedContents";
    let stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    assert_eq!(
        paths,
        [
            create, stream, stream, create, stream, stream, stream, stream
        ],
        "the second call names the first one's cache, another tool set makes its own, the rest make none"
    );
    let made = &sent[0].body;
    assert_eq!(made["model"], "models/gemini-2.5-flash");
    assert_eq!(made["ttl"], "300s");
    assert!(made["systemInstruction"]["parts"][0]["text"].is_string());
    assert_eq!(
        made["tools"][0]["functionDeclarations"][0]["name"],
        "forecast"
    );
    assert_eq!(made["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
    assert_eq!(sent[3].body["ttl"], "3600s", "prompt_cache_hour");
    assert_eq!(
        sent[3].body["tools"][0]["functionDeclarations"][0]["name"],
        "forecast_week"
    );
    for (named, cache) in [
        (&sent[1].body, "cachedContents/rein-test-1"),
        (&sent[2].body, "cachedContents/rein-test-1"),
        (&sent[4].body, "cachedContents/rein-test-2"),
    ] {
        assert_eq!(named["cachedContent"], cache);
        for field in ["systemInstruction", "tools", "toolConfig"] {
            assert!(named.get(field).is_none(), "{field} in {named}");
        }
        assert_eq!(
            named["contents"][0]["parts"][0]["text"],
            "Weather in Paris?"
        );
    }
    for whole in &sent[5..] {
        assert!(whole.body.get("cachedContent").is_none(), "{}", whole.body);
        assert!(whole.body.get("systemInstruction").is_some());
    }
}

/// Gemini refuses a cache smaller than its minimum (its own 400): the call goes whole, and the
/// provider does not ask again for that prefix; a cache Gemini forgot (expired) makes the call
/// go whole at once (Gemini's 403, not an error) and the next call makes a new one.
#[tokio::test]
async fn gemini_context_caches_fail_open() {
    let server = serve((0..5).map(|_| answer()).collect(), 5).await;
    let base = format!("{}/v1beta", server.base);
    // The estimate says 100 tokens are enough; Gemini's minimum for Flash is 1,024.
    let small = gemini_caching(base.clone(), 100);
    for _ in 0..2 {
        let r = collect(small.chat(cacheable(400, "forecast"))).await;
        assert!(r.error.is_none(), "{:?}", r.error);
    }
    let sent = server.requests();
    assert_eq!(sent.len(), 3, "one refused cache, two whole calls");
    assert!(
        sent[0]
            .refused
            .as_deref()
            .is_some_and(|m| m.starts_with("Cached content is too small.")),
        "{:?}",
        sent[0].refused
    );
    for whole in &sent[1..] {
        assert!(whole.refused.is_none());
        assert!(whole.body.get("cachedContent").is_none());
    }
    let p = gemini_caching(base, 1024);
    let r = collect(p.chat(cacheable(6000, "forecast"))).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    server.expire_caches();
    let r = collect(p.chat(cacheable(6000, "forecast"))).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.text, "Sunny.");
    let r = collect(p.chat(cacheable(6000, "forecast"))).await;
    assert!(r.error.is_none(), "{:?}", r.error);
    let sent = &server.requests()[3..];
    let summary: Vec<(bool, Option<&str>, Option<&str>)> = sent
        .iter()
        .map(|r| {
            (
                r.path.ends_with("/cachedContents"),
                r.body["cachedContent"].as_str(),
                r.refused.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (true, None, None),
            (false, Some("cachedContents/rein-test-1"), None),
            (
                false,
                Some("cachedContents/rein-test-1"),
                Some("CachedContent not found (or permission denied)")
            ),
            (false, None, None),
            (true, None, None),
            (false, Some("cachedContents/rein-test-1"), None),
        ],
        "made, named; named after it expired (refused), whole; made again, named"
    );
}

/// What Gemini refuses about caches, in the scripted server's validator: a request naming a
/// cache while setting what a cache holds, a cache below the model's minimum.
#[test]
fn gemini_refusals_about_caches() {
    use rein_model::testing::validate;
    let body = json!({
        "cachedContent": "cachedContents/x",
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}]
    });
    let refused = validate::check(Protocol::Gemini, &body).unwrap_err();
    assert!(
        refused.0.starts_with("CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config."),
        "{refused}"
    );
    let small = json!({"model": "models/gemini-2.5-pro", "systemInstruction": {"parts": [{"text": "Be brief."}]}});
    let refused = validate::gemini_cache(&small).unwrap_err();
    assert!(
        refused.0.ends_with("min_total_token_count=4096"),
        "{refused}"
    );
    let unnamed = json!({"model": "gemini-2.5-pro"});
    assert!(validate::gemini_cache(&unnamed).is_err());
}

/// The start of a PNG (as a provider sends an image: base64), and its bytes.
fn png() -> (String, Vec<u8>) {
    use base64::Engine as _;
    let bytes: Vec<u8> =
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02".to_vec();
    (
        base64::engine::general_purpose::STANDARD.encode(&bytes),
        bytes,
    )
}

#[tokio::test]
async fn gpt_image_draws_as_the_images_api_answers_and_its_refusals_are_read() {
    let (b64, bytes) = png();
    let server = serve(
        vec![json_reply(
            200,
            json!({
                "created": 1764000000,
                "background": "opaque",
                "data": [{"b64_json": b64}, {"b64_json": b64}],
                "output_format": "png",
                "quality": "low",
                "size": "1024x1024",
                "usage": {"input_tokens": 50, "input_tokens_details": {"image_tokens": 40, "text_tokens": 10}, "output_tokens": 544, "total_tokens": 594}
            }),
        )],
        1,
    )
    .await;
    let p = provider(Protocol::OpenaiChat, server.base.clone());
    let request = |size: &str| rein_model::ImageRequest {
        model: "gpt-image-1".into(),
        prompt: "a lighthouse at dusk".into(),
        size: Some(size.into()),
        quality: Some("low".into()),
        n: 2,
    };
    let drawn = p.generate_images(request("1024x1024")).await.unwrap();
    assert_eq!(drawn.images.len(), 2);
    assert!(
        drawn
            .images
            .iter()
            .all(|i| i.bytes == bytes && i.media_type == "image/png")
    );
    let usage = drawn.usage.unwrap();
    assert_eq!((usage.input, usage.output, usage.total), (50, 544, 594));
    let catalog = rein_model::Catalog::builtin().unwrap();
    let cost = catalog.cost("openai", "gpt-image-1", &usage).unwrap();
    // $5 per million in, $40 per million out.
    assert_eq!(
        cost,
        rein_core::Usd::from_dollars(50.0 * 5e-6 + 544.0 * 40e-6)
    );
    let sent = &server.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/images/generations")
    );
    assert_eq!(sent.header("authorization"), "Bearer k");
    assert_eq!(
        sent.body,
        json!({"model": "gpt-image-1", "prompt": "a lighthouse at dusk", "n": 2, "size": "1024x1024", "quality": "low"})
    );
    assert!(sent.refused.is_none());
    // A size GPT Image does not draw: OpenAI's own 400, read as the error.
    let e = p.generate_images(request("1792x1024")).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidRequest, "{e}");
    assert!(
        e.to_string()
            .contains("Invalid value: '1792x1024'. Supported values are: '1024x1024'"),
        "{e}"
    );
}

#[tokio::test]
async fn gemini_draws_as_generate_content_answers_with_inline_data() {
    let (b64, bytes) = png();
    let server = serve(
        vec![
            json_reply(
                200,
                json!({
                    "candidates": [{"content": {"parts": [{"text": "Here is your lighthouse."}, {"inlineData": {"mimeType": "image/png", "data": b64}}], "role": "model"}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1290, "totalTokenCount": 1297, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 7}], "candidatesTokensDetails": [{"modality": "IMAGE", "tokenCount": 1290}]},
                    "modelVersion": "gemini-2.5-flash-image",
                    "responseId": "abc"
                }),
            ),
            json_reply(
                200,
                json!({
                    "candidates": [{"content": {"parts": [{"text": "I can't draw that."}], "role": "model"}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 6, "totalTokenCount": 13},
                    "modelVersion": "gemini-2.5-flash-image"
                }),
            ),
        ],
        1,
    )
    .await;
    let p = provider(Protocol::Gemini, server.base.clone());
    let request = rein_model::ImageRequest {
        model: "gemini-2.5-flash-image".into(),
        prompt: "a lighthouse at dusk".into(),
        size: Some("1536x1024".into()),
        quality: None,
        n: 1,
    };
    let drawn = p.generate_images(request.clone()).await.unwrap();
    assert_eq!(drawn.images.len(), 1);
    assert_eq!(drawn.images[0].bytes, bytes);
    assert_eq!(drawn.text.as_deref(), Some("Here is your lighthouse."));
    assert_eq!(drawn.usage.unwrap().output, 1290);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/models/gemini-2.5-flash-image:generateContent");
    assert_eq!(sent.header("x-goog-api-key"), "k");
    assert_eq!(
        sent.body["generationConfig"],
        json!({"responseModalities": ["TEXT", "IMAGE"], "imageConfig": {"aspectRatio": "3:2"}})
    );
    assert!(sent.refused.is_none());
    let e = p.generate_images(request).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("the model drew no image (it said: I can't draw that.)"),
        "{e}"
    );
}

#[tokio::test]
async fn speech_is_spoken_and_audio_written_down_through_openais_audio_endpoints() {
    let audio: Vec<u8> = b"ID3\x04\x00\x00\x00\x00\x00\x00spoken".to_vec();
    let server = serve(
        vec![
            Canned {
                status: 200,
                headers: vec![("content-type".into(), "audio/mpeg".into())],
                body: audio.clone(),
                max_piece: 5,
                stall_after: None,
                delay: None,
            },
            json_reply(
                200,
                json!({"text": "Hello from rein.", "usage": {"type": "tokens", "input_tokens": 14, "input_token_details": {"text_tokens": 0, "audio_tokens": 14}, "output_tokens": 5, "total_tokens": 19}}),
            ),
        ],
        1,
    )
    .await;
    let p = provider(Protocol::OpenaiChat, server.base.clone());
    let said = p
        .speak(rein_model::audio::SpeechRequest {
            model: "gpt-4o-mini-tts".into(),
            input: "Hello from rein.".into(),
            voice: "coral".into(),
            format: None,
            instructions: Some("Cheerfully.".into()),
        })
        .await
        .unwrap();
    assert_eq!(
        (said.media_type.as_str(), said.bytes.clone()),
        ("audio/mpeg", audio.clone())
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/audio/speech");
    assert_eq!(
        sent.body,
        json!({"model": "gpt-4o-mini-tts", "input": "Hello from rein.", "voice": "coral", "response_format": "mp3", "instructions": "Cheerfully."})
    );
    assert!(sent.refused.is_none());
    let heard = p
        .transcribe(rein_model::audio::TranscriptionRequest {
            model: "gpt-4o-transcribe".into(),
            file_name: "hello.mp3".into(),
            media_type: "audio/mpeg".into(),
            bytes: audio.clone(),
            language: Some("en".into()),
        })
        .await
        .unwrap();
    assert_eq!(heard.text, "Hello from rein.");
    assert_eq!(heard.usage.map(|u| u.input), Some(14));
    let sent = &server.requests()[1];
    assert_eq!(sent.path, "/audio/transcriptions");
    assert!(sent.refused.is_none(), "{:?}", sent.refused);
    assert!(
        sent.header("content-type")
            .starts_with("multipart/form-data; boundary=")
    );
    assert_eq!(sent.header("authorization"), "Bearer k");
    let form = String::from_utf8_lossy(&sent.raw);
    assert!(
        form.contains("name=\"model\"\r\n\r\ngpt-4o-transcribe\r\n"),
        "{form}"
    );
    assert!(form.contains("name=\"language\"\r\n\r\nen\r\n"), "{form}");
    assert!(
        form.contains("name=\"file\"; filename=\"hello.mp3\"\r\nContent-Type: audio/mpeg"),
        "{form}"
    );
    // The file's bytes arrive as they were.
    let at = sent.raw.windows(3).position(|w| w == b"ID3").unwrap();
    assert_eq!(&sent.raw[at..at + audio.len()], audio.as_slice());
    // A voice OpenAI does not have: its 400, read as the error; Anthropic has no such endpoint.
    let e = p
        .speak(rein_model::audio::SpeechRequest {
            model: "gpt-4o-mini-tts".into(),
            input: "x".into(),
            voice: "robot".into(),
            format: None,
            instructions: None,
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("Invalid value: 'robot'"), "{e}");
    let a = provider(Protocol::Anthropic, server.base.clone());
    let e = a
        .transcribe(rein_model::audio::TranscriptionRequest {
            model: "m".into(),
            file_name: "a.mp3".into(),
            media_type: "audio/mpeg".into(),
            bytes: audio,
            language: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
}

#[tokio::test]
async fn a_picture_is_edited_as_openais_edits_form_and_geminis_inline_data() {
    let (b64, bytes) = png();
    let answer = json!({"created": 1764000000, "data": [{"b64_json": b64}], "usage": {"input_tokens": 300, "output_tokens": 272, "total_tokens": 572}});
    let server = serve(
        vec![
            json_reply(200, answer),
            json_reply(
                200,
                json!({"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": b64}}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 260, "candidatesTokenCount": 1290, "totalTokenCount": 1550}}),
            ),
        ],
        1,
    )
    .await;
    let source = rein_model::images::SourceImage {
        name: "lighthouse.png".into(),
        media_type: "image/png".into(),
        bytes: bytes.clone(),
    };
    let request = |model: &str| rein_model::ImageRequest {
        model: model.into(),
        prompt: "make it night".into(),
        size: Some("1024x1024".into()),
        quality: None,
        n: 1,
    };
    let openai = provider(Protocol::OpenaiChat, server.base.clone());
    let edited = openai
        .edit_images(request("gpt-image-1"), source.clone())
        .await
        .unwrap();
    assert_eq!(edited.images[0].bytes, bytes);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/images/edits");
    assert!(sent.refused.is_none(), "{:?}", sent.refused);
    let form = String::from_utf8_lossy(&sent.raw);
    for part in [
        "name=\"model\"\r\n\r\ngpt-image-1\r\n",
        "name=\"prompt\"\r\n\r\nmake it night\r\n",
        "name=\"size\"\r\n\r\n1024x1024\r\n",
        "name=\"image\"; filename=\"lighthouse.png\"\r\nContent-Type: image/png",
    ] {
        assert!(form.contains(part), "{part} in {form}");
    }
    // DALL-E 3 edits nothing: OpenAI's 400.
    let e = openai
        .edit_images(request("dall-e-3"), source.clone())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("Invalid value: 'dall-e-3'"), "{e}");
    let gemini = provider(Protocol::Gemini, server.base.clone());
    let edited = gemini
        .edit_images(request("gemini-2.5-flash-image"), source)
        .await
        .unwrap();
    assert_eq!(edited.images[0].bytes, bytes);
    let sent = server.requests().last().unwrap().clone();
    assert_eq!(sent.path, "/models/gemini-2.5-flash-image:generateContent");
    let parts = &sent.body["contents"][0]["parts"];
    assert_eq!(parts[0]["inlineData"]["mimeType"], "image/png");
    assert_eq!(parts[0]["inlineData"]["data"], b64);
    assert_eq!(parts[1]["text"], "make it night");
}

/// Veo through the provider: the render is submitted as `:predictLongRunning`, its operation
/// polled by name, the video downloaded with the key from the provider's own origin and
/// without it from any other; a protocol without video refuses before sending anything.
#[tokio::test]
async fn gemini_renders_a_video_as_a_job_and_keeps_its_key_at_home() {
    use rein_model::video::{VideoProgress, VideoRequest};
    let server = serve(
        vec![
            json_reply(
                200,
                json!({"name": "models/veo-3.1-generate-preview/operations/o1"}),
            ),
            json_reply(
                200,
                json!({"name": "models/veo-3.1-generate-preview/operations/o1", "done": false}),
            ),
            Canned {
                status: 200,
                headers: vec![("content-type".into(), "video/mp4".into())],
                body: b"own bytes".to_vec(),
                max_piece: 4,
                stall_after: None,
                delay: None,
            },
        ],
        1,
    )
    .await;
    let elsewhere = serve(
        vec![Canned {
            status: 200,
            headers: vec![("content-type".into(), "video/mp4".into())],
            body: b"other bytes".to_vec(),
            max_piece: 4,
            stall_after: None,
            delay: None,
        }],
        1,
    )
    .await;
    let p = provider(Protocol::Gemini, format!("{}/v1beta", server.base));
    let job = p
        .submit_video(VideoRequest {
            model: "veo-3.1-generate-preview".into(),
            prompt: "A kite".into(),
            negative_prompt: None,
            aspect_ratio: None,
            resolution: None,
            seconds: Some(4),
        })
        .await
        .unwrap();
    assert_eq!(job, "models/veo-3.1-generate-preview/operations/o1");
    assert_eq!(
        p.video_progress(job.clone()).await.unwrap(),
        VideoProgress::Rendering
    );
    let own = p
        .download_video(format!(
            "{}/v1beta/files/o1:download?alt=media",
            server.base
        ))
        .await
        .unwrap();
    assert_eq!(own, b"own bytes");
    let other = p
        .download_video(format!("{}/files/o1.mp4", elsewhere.base))
        .await
        .unwrap();
    assert_eq!(other, b"other bytes");
    let sent = server.requests();
    assert_eq!(
        sent[0].path,
        "/v1beta/models/veo-3.1-generate-preview:predictLongRunning"
    );
    assert_eq!(sent[1].method, "GET");
    assert_eq!(
        sent[1].path,
        "/v1beta/models/veo-3.1-generate-preview/operations/o1"
    );
    assert!(
        sent.iter().all(|r| r.header("x-goog-api-key") == "k"),
        "the provider's own requests carry its key"
    );
    assert_eq!(
        elsewhere.requests()[0].header("x-goog-api-key"),
        "",
        "no key to another origin"
    );
    let openai = provider(Protocol::OpenaiChat, server.base.clone());
    let refused = openai.video_progress(job).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::Unsupported);
    assert_eq!(server.requests().len(), 3);
}
