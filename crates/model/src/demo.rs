//! The offline demo behind the README: a recorded two-turn conversation (parallel tool calls,
//! then the answer) replayed from the cassette shipped in `cassettes/demo.jsonl`. It is a
//! replay of recorded bytes, not a live model. Tests run it too, so the shipped cassette stays
//! in step with the request builders.

use crate::cassette::ReplayTransport;
use crate::error::ModelError;
use crate::registry::{ProviderConfig, Quirks};
use crate::{
    ChatRequest, Collector, ModelEvent, ModelProvider, ModelResponse, Protocol, Provider, ToolSpec,
};
use futures::StreamExt;
use rein_core::message::{Message, ToolCall, ToolStatus};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Path of the shipped demo cassette.
pub const DEMO_CASSETTE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/cassettes/demo.jsonl");

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "get_weather".into(),
            description: "Current weather for a city".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}),
        },
        ToolSpec {
            name: "get_time".into(),
            description: "Current time in an IANA timezone".into(),
            parameters: json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}),
        },
    ]
}

fn request(messages: &[Message]) -> ChatRequest {
    let mut r = ChatRequest::new(
        "gpt-4o-mini",
        messages.iter().cloned().map(Arc::new).collect(),
    );
    r.tools = tools();
    r.parallel_tool_calls = Some(true);
    r
}

fn tool_result(call: &ToolCall) -> String {
    match &*call.api {
        "get_weather" => "18°C, sunny".into(),
        "get_time" => "21:04 JST".into(),
        other => format!("unknown tool {other}"),
    }
}

fn start() -> Vec<Message> {
    vec![
        Message::system("You are a concise assistant."),
        Message::user("What's the weather in Paris and the time in Tokyo?"),
    ]
}

fn write_err(e: std::io::Error) -> ModelError {
    ModelError::new(
        crate::ErrorKind::Config,
        format!("cannot write the demo output: {e}"),
    )
}

async fn turn(
    p: &Provider,
    req: ChatRequest,
    out: &mut dyn Write,
) -> Result<ModelResponse, ModelError> {
    let mut c = Collector::new();
    let mut stream = p.chat(req);
    while let Some(e) = stream.next().await {
        match &e {
            ModelEvent::TextDelta { text } => write!(out, "{text}").map_err(write_err)?,
            ModelEvent::ToolCallStart { name, .. } => {
                writeln!(out, "→ tool call: {name}").map_err(write_err)?
            }
            ModelEvent::Retry {
                attempt,
                delay_ms,
                error,
                ..
            } => writeln!(out, "(retry {attempt} in {delay_ms} ms: {error})").map_err(write_err)?,
            ModelEvent::Stop { reason, .. } => {
                writeln!(out, "\n[stop: {}]", reason.as_str()).map_err(write_err)?
            }
            _ => {}
        }
        c.push(&e);
    }
    let r = c.finish();
    match r.error.clone() {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

/// The request bodies the demo sends, one JSON line each (how the cassette was assembled).
pub fn request_bodies() -> Vec<serde_json::Value> {
    let mut messages = start();
    let calls = [
        ToolCall::unresolved(
            "call_Qm3vX8kP2nR7sT1uW4yZ6aB9",
            "get_weather",
            r#"{"city":"Paris","unit":"celsius"}"#,
        ),
        ToolCall::unresolved(
            "call_Hd5jL0fG3hK6mN9pQ2rS4tV8",
            "get_time",
            r#"{"timezone":"Asia/Tokyo"}"#,
        ),
    ];
    let first = Protocol::OpenaiChat.build(&request(&messages), true).body;
    let mut assistant = Message::assistant("");
    assistant.tool_calls = calls.to_vec();
    messages.push(assistant);
    for c in &calls {
        messages.push(Message::tool_result(
            c,
            None,
            ToolStatus::Succeeded,
            tool_result(c),
        ));
    }
    vec![
        first,
        Protocol::OpenaiChat.build(&request(&messages), true).body,
    ]
}

/// Replay the conversation from `cassette`, writing what happens to `out`; returns the final
/// model response.
pub async fn run(cassette: &Path, out: &mut dyn Write) -> Result<ModelResponse, ModelError> {
    let transport = Arc::new(ReplayTransport::from_file(cassette)?);
    let config = ProviderConfig {
        id: "openai".into(),
        protocol: Protocol::OpenaiChat,
        base_url: "https://api.openai.com/v1".into(),
        api_key: None,
        headers: Default::default(),
        quirks: Quirks::default(),
    };
    let provider = Provider::new(config, transport);
    let mut messages = start();
    let first = turn(&provider, request(&messages), out).await?;
    let mut assistant = Message::assistant(first.text.clone());
    assistant.tool_calls = first
        .tool_calls
        .iter()
        .map(|c| {
            ToolCall::unresolved(
                c.id.clone().unwrap_or_default(),
                c.name.clone(),
                c.arguments_raw.clone(),
            )
        })
        .collect();
    let calls = assistant.tool_calls.clone();
    messages.push(assistant);
    for c in &calls {
        let result = tool_result(c);
        writeln!(out, "  {}({}) = {result}", c.api, c.arguments).map_err(write_err)?;
        messages.push(Message::tool_result(c, None, ToolStatus::Succeeded, result));
    }
    turn(&provider, request(&messages), out).await
}
