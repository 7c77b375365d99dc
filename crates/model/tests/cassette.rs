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

/// A cassette line answering `messages` (OpenAI Chat) with `text`, its `vary` places named.
fn line(messages: serde_json::Value, text: &str, vary: &[&str]) -> String {
    let mut req = ChatRequest::new("gpt-4o-mini", vec![]);
    req.temperature = None;
    let mut body = Protocol::OpenaiChat.build(&req, true).body;
    body["messages"] = messages;
    let stream = format!(
        "data: {}\n\ndata: [DONE]\n\n",
        serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
    );
    serde_json::json!({
        "request": {"method": "POST", "path": "/chat/completions", "body": body, "vary": vary},
        "response": {"status": 200, "headers": [["content-type", "text/event-stream"]], "body": stream},
    })
    .to_string()
}

/// What a person types (a rejection's reason) varies: a recording that names the place matches
/// any text there, but only when no recording matches exactly; a request the cassette lacks
/// names the recording with the most in common (not the one whose difference lies deepest);
/// the questions the cassette answers are its one-message conversations.
#[tokio::test]
async fn varying_places_match_anything_and_a_miss_names_the_nearest_recording() {
    use serde_json::json;
    let user = |t: &str| json!({"role": "user", "content": t});
    let cassette = [
        line(json!([user("Say hello.")]), "Hello.", &[]),
        line(
            json!([user("Say hello."), {"role": "assistant", "content": "Hello."}, user("Why?")]),
            "Because you asked.",
            &[],
        ),
        line(
            json!([user("Say hello."), {"role": "assistant", "content": "Hello."}, user("anything")]),
            "This replay answers only what it recorded.",
            &["body.messages[2].content"],
        ),
        line(json!([user("Count to three.")]), "1, 2, 3.", &[]),
        // Differs from the request below deep in its second message (where a measure by the
        // depth of the first difference would call it nearest), and in its model and last
        // message too.
        {
            let mut far: serde_json::Value = serde_json::from_str(&line(
                json!([
                    user("Say hello."),
                    {"role": "assistant", "content": "Hi.", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "wave", "arguments": "{}"}}]},
                    user("Wave again.")
                ]),
                "Waving.",
                &[],
            ))
            .unwrap();
            far["request"]["body"]["model"] = json!("gpt-4o");
            far.to_string()
        },
    ]
    .join("\n");
    let replay = Arc::new(ReplayTransport::from_jsonl(&cassette).unwrap());
    assert_eq!(replay.questions(), ["Say hello.", "Count to three."]);
    let p = provider("http://127.0.0.1:9", replay);
    let ask = |messages: Vec<Message>| {
        let p = p.clone();
        async move {
            collect(p.chat(ChatRequest::new(
                "gpt-4o-mini",
                messages.into_iter().map(Arc::new).collect(),
            )))
            .await
        }
    };
    let turn = |last: &str| {
        vec![
            Message::user("Say hello."),
            Message::assistant("Hello."),
            Message::user(last),
        ]
    };
    assert_eq!(ask(turn("Why?")).await.text, "Because you asked.");
    assert_eq!(
        ask(turn("Tell me more")).await.text,
        "This replay answers only what it recorded."
    );
    // The same place with another type, and a change elsewhere, are not matched.
    let mut other = turn("Why?");
    other[1] = Message::assistant("Hi.");
    let e = ask(other).await.error.unwrap();
    assert_eq!(e.kind, ErrorKind::ReplayMismatch);
    // Nearest: the second recording shares all but the assistant's words.
    assert!(
        e.message
            .contains("differs at body.messages[1].content: recorded \"Hello.\", now \"Hi.\""),
        "{e}"
    );
}
