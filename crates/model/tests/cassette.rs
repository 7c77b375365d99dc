//! Record a real exchange (over loopback HTTP) into a cassette, replay it offline to the same
//! result, and fail loudly when the request differs or the cassette runs out.

use crate::common;

use common::fixture;
use common::server::serve;
use rein_core::Message;
use rein_model::cassette::{RecordingTransport, ReplayTransport};
use rein_model::registry::{ProviderConfig, Quirks};
use rein_model::transport::Timeouts;
use rein_model::{
    ChatRequest, ErrorKind, ModelProvider, Protocol, Provider, ReqwestTransport, Transport, collect,
};
use std::sync::Arc;

fn provider(base: &str, transport: Arc<dyn Transport>) -> Provider {
    let config = ProviderConfig {
        id: "openai".into(),
        protocol: Protocol::OpenaiChat,
        base_url: format!("{base}/v1"),
        api_key: Some("sk-secret-never-recorded".into()),
        headers: Default::default(),
        quirks: Quirks::default(),
    };
    Provider::new(config, transport)
}

fn request(text: &str) -> ChatRequest {
    ChatRequest::new("gpt-4o-mini", vec![Arc::new(Message::user(text))])
}

#[tokio::test]
async fn a_recorded_exchange_replays_offline_to_the_same_result() {
    let dir = std::env::temp_dir().join(format!("rein-cassette-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("weather.jsonl");
    let _ = std::fs::remove_file(&path);

    let server = serve(
        vec![common::server::from_fixture(&fixture(
            "openai-chat/stream-parallel-tool-calls",
        ))],
        9,
    )
    .await;
    let http: Arc<dyn Transport> = Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap());
    let recording = provider(&server.base, Arc::new(RecordingTransport::new(http, &path)));
    let live = collect(recording.chat(request("weather in Paris, time in Tokyo?"))).await;
    assert_eq!(live.tool_calls.len(), 2);

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(!text.contains("sk-secret"), "credentials are not recorded");

    let replay = Arc::new(ReplayTransport::from_file(&path).unwrap());
    let offline = provider("http://127.0.0.1:9", replay.clone());
    let replayed = collect(offline.chat(request("weather in Paris, time in Tokyo?"))).await;
    assert_eq!(replayed, live);
    // Matched by content, not position: the same request replays again, as often as asked.
    for _ in 0..3 {
        let again = collect(offline.chat(request("weather in Paris, time in Tokyo?"))).await;
        assert_eq!(again, live);
    }
    assert_eq!(replay.served(), 4);

    // A request it does not hold: a loud error naming where it differs, not a made-up answer.
    let r = collect(offline.chat(request("weather in Rome?"))).await;
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::ReplayMismatch);
    assert!(e.message.contains("is not in the cassette"), "{e}");
    assert!(e.message.contains("body.messages[0].content"), "{e}");
}

#[tokio::test]
async fn a_changed_request_is_reported_with_where_it_differs() {
    let f = fixture("openai-chat/stream-text-usage");
    let req = request("hello");
    let body = Protocol::OpenaiChat.build(&req, true).body;
    let line = serde_json::json!({
        "request": {"method": "POST", "path": "/chat/completions", "body": body},
        "response": {"status": 200, "headers": [["content-type", "text/event-stream"]], "body": String::from_utf8(f.body.clone()).unwrap()},
    });
    let replay = Arc::new(ReplayTransport::from_jsonl(&line.to_string()).unwrap());
    let p = provider("http://127.0.0.1:9", replay);
    let r = collect(p.chat(request("hello, but different"))).await;
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::ReplayMismatch);
    assert!(e.message.contains("body.messages[0].content"), "{e}");
    assert!(!e.retryable);

    let bad = ReplayTransport::from_jsonl("{\"request\": 1}\n")
        .err()
        .unwrap();
    assert!(bad.message.contains("cassette line 1"), "{bad}");
}

#[tokio::test]
async fn the_shipped_demo_cassette_replays() {
    let mut out = Vec::new();
    let r = rein_model::demo::run(
        std::path::Path::new(rein_model::demo::DEMO_CASSETTE),
        &mut out,
    )
    .await
    .unwrap();
    assert_eq!(r.text, "It's 18°C and sunny in Paris, and 21:04 in Tokyo.");
    let printed = String::from_utf8(out).unwrap();
    assert!(
        printed.contains("→ tool call: get_weather")
            && printed.contains("get_time({\"timezone\":\"Asia/Tokyo\"})"),
        "{printed}"
    );
}
