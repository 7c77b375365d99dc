//! Ollama `/api/chat`: NDJSON lines with `message.content`, `message.thinking` and whole
//! `tool_calls` (object arguments), a final `done: true` line with `done_reason` (`stop` even
//! after tool calls) and eval counts, and `{"error": "..."}` lines.

use super::wire::{self, ErrorFields, Wire};
use super::{
    StreamParser, WireRequest, arguments_object, data_url, interrupted, malformed, wire_name,
};
use crate::error::{ErrorKind, ModelError};
use crate::event::{ModelEvent, StopReason};
use crate::framing::{Frame, Framing};
use crate::request::{ChatRequest, ResponseFormat, ToolChoice};
use rein_core::TokenUsage;
use rein_core::message::{ContentPart, Role};
use serde::Deserialize;
use serde_json::{Value, json};

/// A tool's parameters as Ollama reads them: its typed property structs ignore `$ref`, so
/// references are inlined (what they name would otherwise never reach the model).
fn parameters(schema: &Value) -> Value {
    super::schema::inline_refs(&super::schema::object_root(schema))
}

/// The request body.
pub fn build(req: &ChatRequest, stream: bool) -> WireRequest {
    let mut messages = Vec::new();
    for m in req.messages.iter() {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut text = String::new();
        let mut images = Vec::new();
        for p in &m.content {
            match p {
                ContentPart::Text { text: t } => text.push_str(t),
                file @ ContentPart::File { .. } => {
                    text.push_str(&file.file_text(None).unwrap_or_default());
                }
                ContentPart::Image { url, .. } => match data_url(url) {
                    Some((_, data)) => images.push(json!(data)),
                    // Ollama takes image bytes only; a URL is described, not fetched.
                    None => text.push_str(&format!("\n[image: {url}]")),
                },
            }
        }
        let mut msg = json!({"role": role, "content": text});
        if !images.is_empty() {
            msg["images"] = Value::Array(images);
        }
        if let Some(r) = m.reasoning.as_ref().filter(|r| !r.text.is_empty()) {
            msg["thinking"] = json!(r.text);
        }
        if !m.tool_calls.is_empty() {
            msg["tool_calls"] = m
                .tool_calls
                .iter()
                .map(|c| json!({"function": {"name": wire_name(c), "arguments": arguments_object(c)}}))
                .collect();
        }
        if m.role == Role::Tool {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            if let Some(call) = req
                .messages
                .iter()
                .flat_map(|a| a.tool_calls.iter())
                .find(|c| &*c.id == id)
            {
                msg["tool_name"] = json!(wire_name(call));
            }
        }
        messages.push(msg);
    }
    let mut body = json!({"model": req.model, "messages": messages, "stream": stream});
    // Ollama has no tool choice: tools withdrawn (`ToolChoice::None`) are not offered, and it
    // takes a history with tool calls without them.
    if !req.tools.is_empty() && req.tool_choice != ToolChoice::None {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": parameters(&t.parameters)}}))
            .collect();
    }
    let mut options = serde_json::Map::new();
    if let Some(t) = req.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        options.insert("top_p".into(), json!(p));
    }
    if let Some(n) = req.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    if !req.stop.is_empty() {
        options.insert("stop".into(), json!(req.stop));
    }
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    if req.reasoning.is_some() {
        body["think"] = json!(true);
    }
    match &req.response_format {
        ResponseFormat::Text => {}
        ResponseFormat::JsonObject => body["format"] = json!("json"),
        ResponseFormat::JsonSchema { schema, .. } => body["format"] = schema.clone(),
    }
    WireRequest {
        path: "/api/chat".into(),
        body,
    }
}

#[derive(Deserialize)]
struct Line {
    model: Option<String>,
    message: Option<LineMessage>,
    #[serde(default)]
    done: bool,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LineMessage {
    content: Option<String>,
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
}

#[derive(Deserialize)]
struct ToolCall {
    id: Option<String>,
    function: Function,
}

#[derive(Deserialize)]
struct Function {
    index: Option<u32>,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Stream state.
#[derive(Default)]
pub struct Parser {
    started: bool,
    calls: u32,
    done: bool,
    failed: bool,
}

impl StreamParser for Parser {
    fn frame(&mut self, frame: Frame<'_>, out: &mut Vec<ModelEvent>) {
        if self.failed || self.done {
            return;
        }
        let data = match frame {
            Frame::Event { data, .. } | Frame::Json(data) => data,
            Frame::Invalid(b) => {
                return out.push(malformed(format!(
                    "invalid UTF-8: {}",
                    String::from_utf8_lossy(b)
                )));
            }
        };
        let line: Line = match serde_json::from_str(data) {
            Ok(l) => l,
            Err(e) => {
                return out.push(malformed(format!(
                    "{e} in {}",
                    data.chars().take(200).collect::<String>()
                )));
            }
        };
        if let Some(err) = line.error {
            let message = err.as_str().map_or_else(|| err.to_string(), str::to_owned);
            // A model crash mid-generation; retrying the same prompt rarely helps.
            let mut error = ModelError::new(ErrorKind::ServerError, message).with_status(200);
            error.retryable = false;
            out.push(ModelEvent::Error { error });
            self.failed = true;
            return;
        }
        if !self.started {
            self.started = true;
            out.push(ModelEvent::Start {
                response_id: None,
                model: line.model.clone(),
            });
        }
        if let Some(m) = line.message {
            if let Some(t) = m.thinking.filter(|t| !t.is_empty()) {
                out.push(ModelEvent::ReasoningDelta { text: t });
            }
            if let Some(t) = m.content.filter(|t| !t.is_empty()) {
                out.push(ModelEvent::TextDelta { text: t });
            }
            for c in m.tool_calls {
                let index = c.function.index.unwrap_or(self.calls).max(self.calls);
                self.calls = index + 1;
                out.push(ModelEvent::ToolCallStart {
                    index,
                    id: c.id,
                    name: c.function.name,
                    thought_signature: None,
                });
                let args = c.function.arguments.unwrap_or_else(|| json!({}));
                let args = match args {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.push(ModelEvent::ToolCallDelta {
                    index,
                    arguments: args,
                });
                out.push(ModelEvent::ToolCallEnd { index });
            }
        }
        if line.done {
            self.done = true;
            let (input, output) = (
                line.prompt_eval_count.unwrap_or(0),
                line.eval_count.unwrap_or(0),
            );
            out.push(ModelEvent::Usage {
                usage: TokenUsage {
                    input,
                    output,
                    total: input + output,
                    ..Default::default()
                },
            });
            let raw = line.done_reason;
            let reason = match raw.as_deref() {
                Some("length") => StopReason::MaxTokens,
                _ if self.calls > 0 => StopReason::ToolUse,
                _ => StopReason::EndTurn,
            };
            out.push(ModelEvent::Stop { reason, raw });
        }
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        if !self.failed && !self.done {
            out.push(interrupted("the done line"));
        }
    }
}

/// Ollama's native API.
pub struct Ollama;

impl Wire for Ollama {
    /// Its native API is under the root: a trailing `/api` or `/v1` is dropped.
    fn base_url(&self, base: &str, _path: &str) -> String {
        base.strip_suffix("/api")
            .or_else(|| base.strip_suffix("/v1"))
            .unwrap_or(base)
            .to_owned()
    }

    fn versioned(&self, base: &str) -> String {
        base.to_owned()
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn build(&self, req: &ChatRequest, stream: bool) -> WireRequest {
        build(req, stream)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(Parser::default())
    }

    fn parse_body(&self, body: &[u8], out: &mut Vec<ModelEvent>) {
        // The body is one of the objects its stream's lines carry.
        wire::body_as_frame(
            self.parser(),
            Frame::Json(&String::from_utf8_lossy(body)),
            out,
        );
    }

    /// `{"error": "message"}`.
    fn error_fields(&self, error: Option<&serde_json::Value>) -> ErrorFields {
        ErrorFields {
            message: error.and_then(|e| e.as_str()).map(str::to_owned),
            ..ErrorFields::default()
        }
    }

    fn auth_header(&self, key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn native_structured_output(&self) -> bool {
        true
    }

    fn embeddings(&self, model: &str, inputs: &[String]) -> Option<WireRequest> {
        Some(WireRequest {
            path: "/api/embed".into(),
            body: serde_json::json!({"model": model, "input": inputs}),
        })
    }

    fn vectors(&self, answer: &serde_json::Value) -> Option<Vec<Vec<f32>>> {
        answer
            .get("embeddings")
            .and_then(|e| serde_json::from_value(e.clone()).ok())
    }

    fn image_generation(&self, _request: &crate::images::ImageRequest) -> Option<WireRequest> {
        None
    }

    fn images(&self, _answer: &serde_json::Value) -> Option<crate::images::GeneratedImages> {
        None
    }

    fn models_path(&self) -> &'static str {
        "/api/tags"
    }

    fn property_names(&self) -> Option<fn(&str) -> bool> {
        None
    }
}
