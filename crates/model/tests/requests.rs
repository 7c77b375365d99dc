//! What rein sends: one conversation (system prompt, an image, assistant reasoning with a
//! signature, a tool call with its Gemini thought signature, the tool's result) rendered by
//! every protocol, snapshotted.

use rein_core::message::{ContentPart, Message, Reasoning, ToolCall, ToolStatus};
use rein_model::request::{ReasoningConfig, ReasoningEffort};
use rein_model::{ChatRequest, Protocol, ToolSpec};
use serde_json::json;
use std::sync::Arc;

fn conversation() -> ChatRequest {
    let mut user = Message::user("What is in this image, and what is the weather in Paris?");
    user.content.push(ContentPart::Image {
        url: "data:image/png;base64,iVBORw0KGgo=".into(),
        media_type: Some("image/png".into()),
        detail: None,
    });
    let mut call = ToolCall::new("call_1", "weather", "get", r#"{"city":"Paris"}"#);
    call.thought_signature = Some("c2lnbmF0dXJl".into());
    let mut assistant = Message::assistant("Let me check the weather.");
    assistant.reasoning = Some(Reasoning {
        text: "The user wants weather.".into(),
        signature: Some("EqQBsig==".into()),
        redacted: vec![],
        encrypted: Some(rein_core::message::EncryptedReasoning {
            id: "rs_1".into(),
            content: "ZW5jcnlwdGVkLXJlYXNvbmluZw==".into(),
        }),
    });
    assistant.tool_calls = vec![call.clone()];
    let result = Message::tool_result(
        &call,
        Some(assistant.id),
        ToolStatus::Succeeded,
        "18°C, sunny",
    );
    let messages = vec![Message::system("You are terse."), user, assistant, result]
        .into_iter()
        .map(Arc::new)
        .collect();
    let mut req = ChatRequest::new("model-x", messages);
    req.tools = vec![ToolSpec {
        name: "weather__get".into(),
        description: "Current weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
    }];
    req.temperature = Some(0.25);
    req.max_tokens = Some(512);
    req.reasoning = Some(ReasoningConfig {
        effort: Some(ReasoningEffort::Medium),
        budget_tokens: Some(2048),
    });
    req.stop = vec!["END".into()];
    req
}

fn snapshot(protocol: Protocol) -> serde_json::Value {
    let w = protocol.build(&conversation(), true);
    json!({"path": w.path, "body": w.body})
}

#[test]
fn openai_chat_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::OpenaiChat));
}

#[test]
fn openai_responses_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::OpenaiResponses));
}

#[test]
fn anthropic_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::Anthropic));
}

#[test]
fn gemini_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::Gemini));
}

#[test]
fn ollama_request() {
    insta::assert_json_snapshot!(snapshot(Protocol::Ollama));
}

#[test]
fn responses_asks_for_encrypted_reasoning_only_where_the_model_reasons() {
    let mut req = conversation();
    req.reasoning = None;
    let body = |req: &ChatRequest| Protocol::OpenaiResponses.build(req, true).body;
    // Models that do not reason refuse the include ("Encrypted content is not supported").
    assert!(body(&req).get("include").is_none());
    req.replay_reasoning = true;
    assert_eq!(
        body(&req)["include"],
        json!(["reasoning.encrypted_content"])
    );
    // A turn without encrypted reasoning sends no reasoning item (it could not be resolved).
    let mut plain = (*req.messages[2]).clone();
    plain.reasoning.as_mut().unwrap().encrypted = None;
    req.messages[2] = Arc::new(plain);
    let input = body(&req)["input"].clone();
    assert!(
        !input
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "reasoning"),
        "{input}"
    );
}
