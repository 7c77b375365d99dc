//! What rein sends: one conversation (system prompt, an image, assistant reasoning with a
//! signature, a tool call with its Gemini thought signature, the tool's result) rendered by
//! every protocol, snapshotted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
