//! Anthropic Messages: content blocks (text, thinking with signature, redacted thinking,
//! tool_use with streamed `input_json_delta`), cumulative usage whose `input_tokens` excludes
//! cache reads and writes, `ping`s, and in-stream `error` events on HTTP 200.

use super::wire::{ErrorFields, Wire};
use super::{
    StreamParser, WireRequest, arguments_object, data_url, interrupted, malformed, push_grouped,
    stream_error, system_text, wire_name,
};
use crate::event::{ModelEvent, StopReason};
use crate::framing::{Frame, Framing};
use crate::request::{ChatRequest, ResponseFormat, ToolChoice};
use rein_core::TokenUsage;
use rein_core::message::{ContentPart, Role, ToolStatus};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Output tokens when the request sets none (the API requires a value).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

fn push_block(messages: &mut Vec<Value>, role: &str, block: Value) {
    push_grouped(messages, role, "content", block);
}

/// The position (message, block) of the last block written so far.
fn last_block(messages: &[Value]) -> Option<(usize, usize)> {
    let m = messages.len().checked_sub(1)?;
    let b = messages[m]["content"].as_array()?.len().checked_sub(1)?;
    Some((m, b))
}

/// Mark the prefix Anthropic should cache, by one rule: a breakpoint at the end of the tools,
/// one at the end of the system prompt, and one at the end of the last message the next call
/// sends again (`cache.stable_messages`; the step's own notes after it are not cached), each
/// only where there is such a block and it can carry one (not a thinking block, not empty
/// text). Anthropic reads the longest cached prefix ending at or before each breakpoint
/// (looking back about 20 blocks), so the history's breakpoint moving forward each step still
/// hits what the last step wrote. Three breakpoints, within the limit of
/// [`MAX_BREAKPOINTS`].
pub fn cache_breakpoints(
    body: &mut Value,
    cache: &crate::request::PromptCache,
    ends: &[Option<(usize, usize)>],
) {
    let mark = if cache.long_ttl {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    };
    if let Some(last) = body["tools"].as_array_mut().and_then(|t| t.last_mut()) {
        last["cache_control"] = mark.clone();
    }
    if let Some(system) = body
        .get("system")
        .and_then(Value::as_str)
        .map(str::to_owned)
        && !system.is_empty()
    {
        body["system"] = json!([{"type": "text", "text": system, "cache_control": mark.clone()}]);
    }
    let stable = cache.stable_messages.unwrap_or(ends.len()).min(ends.len());
    // The last stable message that wrote a block (a system message writes none).
    let Some((m, b)) = ends[..stable].iter().rev().find_map(|e| *e) else {
        return;
    };
    let Some(block) = body["messages"][m]["content"].get_mut(b) else {
        return;
    };
    let cacheable = match block["type"].as_str() {
        Some("thinking" | "redacted_thinking") => false,
        Some("text") => block["text"].as_str().is_some_and(|t| !t.is_empty()),
        _ => true,
    };
    if cacheable {
        block["cache_control"] = mark;
    }
}

/// Most blocks a request may mark with `cache_control` (Anthropic refuses a fifth).
pub const MAX_BREAKPOINTS: usize = 4;

/// An image block: base64 bytes for a `data:` URL, else the URL.
fn image_block(url: &str) -> Value {
    match data_url(url) {
        Some((media, data)) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
        }
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

/// The request body.
pub fn build(req: &ChatRequest, stream: bool) -> WireRequest {
    let mut messages: Vec<Value> = Vec::new();
    // Where each request message's last block went (message, block), for the history's
    // cache breakpoint.
    let mut ends: Vec<Option<(usize, usize)>> = Vec::with_capacity(req.messages.len());
    for m in req.messages.iter() {
        match m.role {
            Role::System => {}
            Role::User => {
                for p in &m.content {
                    let block = match p {
                        ContentPart::Text { text } => json!({"type": "text", "text": text}),
                        file @ ContentPart::File { .. } => {
                            json!({"type": "text", "text": file.file_text(None).unwrap_or_default()})
                        }
                        ContentPart::Image { url, .. } => image_block(url),
                    };
                    push_block(&mut messages, "user", block);
                }
            }
            Role::Assistant => {
                if let Some(r) = &m.reasoning {
                    if let Some(sig) = &r.signature {
                        push_block(
                            &mut messages,
                            "assistant",
                            json!({"type": "thinking", "thinking": r.text, "signature": sig}),
                        );
                    }
                    for data in &r.redacted {
                        push_block(
                            &mut messages,
                            "assistant",
                            json!({"type": "redacted_thinking", "data": data}),
                        );
                    }
                }
                let text = m.text_content();
                if !text.is_empty() {
                    push_block(
                        &mut messages,
                        "assistant",
                        json!({"type": "text", "text": text}),
                    );
                }
                for c in &m.tool_calls {
                    push_block(
                        &mut messages,
                        "assistant",
                        json!({"type": "tool_use", "id": c.id, "name": wire_name(c), "input": arguments_object(c)}),
                    );
                }
            }
            Role::Tool => {
                // A result with images is a list of blocks, text first; without, a string.
                let text = m.text_content();
                let mut images = super::tool_images(m).peekable();
                let content = if images.peek().is_some() {
                    std::iter::once(json!({"type": "text", "text": text}))
                        .chain(images.map(|i| image_block(i.url)))
                        .collect()
                } else {
                    json!(text)
                };
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                    "content": content,
                });
                if matches!(
                    m.tool_status,
                    Some(
                        ToolStatus::Failed
                            | ToolStatus::Blocked
                            | ToolStatus::Rejected
                            | ToolStatus::Aborted
                    )
                ) {
                    block["is_error"] = json!(true);
                }
                push_block(&mut messages, "user", block);
            }
        }
        ends.push(last_block(&messages));
    }
    let budget = req.reasoning.and_then(|r| r.budget_tokens);
    let mut max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(b) = budget {
        // The thinking budget counts against max_tokens and must leave room for the answer.
        max_tokens = max_tokens.max(b.saturating_add(1024));
    }
    let mut body = json!({"model": req.model, "max_tokens": max_tokens, "messages": messages});
    if let Some(system) = system_text(req) {
        body["system"] = json!(system);
    }
    if stream {
        body["stream"] = json!(true);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": super::schema::object_root(&t.parameters)}))
            .collect();
        let mut choice = match &req.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        if req.parallel_tool_calls == Some(false) {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        body["tool_choice"] = choice;
    }
    if let Some(cache) = &req.prompt_cache {
        cache_breakpoints(&mut body, cache, &ends);
    }
    if let Some(b) = budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": b});
    } else if let Some(t) = req.temperature {
        // Temperature is not accepted together with extended thinking.
        body["temperature"] = json!(t);
    }
    if let Some(p) = req.top_p {
        body["top_p"] = json!(p);
    }
    if !req.stop.is_empty() {
        body["stop_sequences"] = json!(req.stop);
    }
    if let Some(user) = req.metadata.get("user_id") {
        body["metadata"] = json!({"user_id": user});
    }
    if let ResponseFormat::JsonSchema { schema, .. } = &req.response_format {
        body["output_format"] = json!({"type": "json_schema", "schema": schema});
    }
    WireRequest {
        path: "/messages".into(),
        body,
    }
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u32>,
    #[serde(borrow)]
    message: Option<MessageStart<'a>>,
    #[serde(borrow)]
    content_block: Option<Block<'a>>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    usage: Option<WireUsage>,
    #[serde(borrow)]
    error: Option<WireError<'a>>,
}

#[derive(Deserialize)]
struct MessageStart<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
    input: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Clone, Copy, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Clone, Copy, Default, Deserialize)]
struct OutputDetails {
    thinking_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

impl WireUsage {
    /// Later cumulative reports override field by field.
    fn merge(&mut self, o: &WireUsage) {
        self.input_tokens = o.input_tokens.or(self.input_tokens);
        self.output_tokens = o.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = o
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = o.cache_read_input_tokens.or(self.cache_read_input_tokens);
        if o.output_tokens_details.is_some() {
            self.output_tokens_details = o.output_tokens_details;
        }
    }

    fn normalize(&self) -> TokenUsage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        let input = self.input_tokens.unwrap_or(0) + read + write;
        let output = self.output_tokens.unwrap_or(0);
        TokenUsage {
            input,
            output,
            total: input + output,
            cached_read: read,
            cache_write: write,
            reasoning: self
                .output_tokens_details
                .and_then(|d| d.thinking_tokens)
                .unwrap_or(0),
        }
    }
}

/// Stream state.
#[derive(Default)]
pub struct Parser {
    usage: WireUsage,
    has_usage: bool,
    tools: BTreeMap<u32, u32>,
    stop: Option<String>,
    stopped: bool,
    failed: bool,
}

fn stop_reason(raw: &str) -> StopReason {
    match raw {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

impl Parser {
    fn event(&mut self, e: Event<'_>, out: &mut Vec<ModelEvent>) {
        match e.kind.as_ref() {
            "message_start" | "message" => {
                let m = e.message.as_ref();
                out.push(ModelEvent::Start {
                    response_id: m.and_then(|m| m.id.as_deref()).map(str::to_owned),
                    model: m.and_then(|m| m.model.as_deref()).map(str::to_owned),
                });
                if let Some(u) = m.and_then(|m| m.usage.as_ref()) {
                    self.usage.merge(u);
                    self.has_usage = true;
                }
            }
            "content_block_start" => {
                let (Some(index), Some(b)) = (e.index, e.content_block) else {
                    return;
                };
                self.block(index, b, out);
            }
            "content_block_delta" => {
                let (Some(index), Some(d)) = (e.index, e.delta) else {
                    return;
                };
                match d.kind.as_deref() {
                    Some("text_delta") => {
                        if let Some(t) = d.text {
                            out.push(ModelEvent::TextDelta {
                                text: t.into_owned(),
                            });
                        }
                    }
                    Some("thinking_delta") => {
                        if let Some(t) = d.thinking {
                            out.push(ModelEvent::ReasoningDelta {
                                text: t.into_owned(),
                            });
                        }
                    }
                    Some("signature_delta") => {
                        if let Some(s) = d.signature {
                            out.push(ModelEvent::ReasoningSignature {
                                signature: s.into_owned(),
                            });
                        }
                    }
                    Some("input_json_delta") => {
                        if let (Some(&tool), Some(j)) = (
                            self.tools.get(&index),
                            d.partial_json.filter(|j| !j.is_empty()),
                        ) {
                            out.push(ModelEvent::ToolCallDelta {
                                index: tool,
                                arguments: j.into_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(&tool) = e.index.and_then(|i| self.tools.get(&i)) {
                    out.push(ModelEvent::ToolCallEnd { index: tool });
                }
            }
            "message_delta" => {
                if let Some(r) = e.delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(r.into_owned());
                }
                if let Some(u) = &e.usage {
                    self.usage.merge(u);
                    self.has_usage = true;
                    out.push(ModelEvent::Usage {
                        usage: self.usage.normalize(),
                    });
                }
            }
            "message_stop" => self.stop_now(out),
            "error" => {
                let err = e.error.as_ref();
                let msg = err
                    .and_then(|x| x.message.as_deref())
                    .unwrap_or("provider error");
                let error = stream_error(err.and_then(|x| x.kind.as_deref()), None, msg);
                out.push(ModelEvent::Error { error });
                self.failed = true;
            }
            _ => {}
        }
    }

    fn block(&mut self, index: u32, b: Block<'_>, out: &mut Vec<ModelEvent>) {
        match b.kind.as_ref() {
            "text" => {
                if let Some(t) = b.text.filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::TextDelta {
                        text: t.into_owned(),
                    });
                }
            }
            "thinking" => {
                if let Some(t) = b.thinking.filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::ReasoningDelta {
                        text: t.into_owned(),
                    });
                }
                if let Some(s) = b.signature.filter(|s| !s.is_empty()) {
                    out.push(ModelEvent::ReasoningSignature {
                        signature: s.into_owned(),
                    });
                }
            }
            "redacted_thinking" => {
                if let Some(d) = b.data {
                    out.push(ModelEvent::RedactedReasoning {
                        data: d.into_owned(),
                    });
                }
            }
            "tool_use" | "server_tool_use" => {
                let tool = u32::try_from(self.tools.len()).unwrap_or(u32::MAX);
                self.tools.insert(index, tool);
                out.push(ModelEvent::ToolCallStart {
                    index: tool,
                    id: b.id.map(Cow::into_owned),
                    name: b.name.map(Cow::into_owned).unwrap_or_default(),
                    thought_signature: None,
                });
                // Non-streamed bodies carry the whole input; streamed ones start with `{}`
                // that the deltas replace.
                if let Some(input) = b
                    .input
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                {
                    out.push(ModelEvent::ToolCallDelta {
                        index: tool,
                        arguments: input.to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    fn stop_now(&mut self, out: &mut Vec<ModelEvent>) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if self.has_usage {
            out.push(ModelEvent::Usage {
                usage: self.usage.normalize(),
            });
        }
        let raw = self.stop.take();
        let reason = raw.as_deref().map_or(StopReason::EndTurn, stop_reason);
        out.push(ModelEvent::Stop { reason, raw });
    }
}

impl StreamParser for Parser {
    fn frame(&mut self, frame: Frame<'_>, out: &mut Vec<ModelEvent>) {
        if self.failed {
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
        match serde_json::from_str::<Event<'_>>(data) {
            Ok(e) => self.event(e, out),
            Err(e) => out.push(malformed(format!(
                "{e} in {}",
                data.chars().take(200).collect::<String>()
            ))),
        }
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        if !self.failed && !self.stopped {
            out.push(interrupted("message_stop"));
        }
    }
}

/// A non-streamed `message`.
pub fn parse_body(body: &[u8], out: &mut Vec<ModelEvent>) {
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        id: Option<Cow<'a, str>>,
        #[serde(borrow)]
        model: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        content: Vec<Block<'a>>,
        #[serde(borrow)]
        stop_reason: Option<Cow<'a, str>>,
        usage: Option<WireUsage>,
    }
    let b: Body<'_> = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return out.push(malformed(e)),
    };
    out.push(ModelEvent::Start {
        response_id: b.id.map(Cow::into_owned),
        model: b.model.map(Cow::into_owned),
    });
    let mut p = Parser::default();
    for (i, block) in b.content.into_iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        p.block(index, block, out);
        if let Some(&tool) = p.tools.get(&index) {
            out.push(ModelEvent::ToolCallEnd { index: tool });
        }
    }
    if let Some(u) = b.usage {
        p.usage.merge(&u);
        p.has_usage = true;
    }
    p.stop = b.stop_reason.map(Cow::into_owned);
    p.stop_now(out);
}

/// Anthropic Messages.
pub struct Anthropic;

impl Wire for Anthropic {
    fn base_url(&self, base: &str, _path: &str) -> String {
        if base.ends_with("/v1") {
            base.to_owned()
        } else {
            format!("{base}/v1")
        }
    }

    fn versioned(&self, base: &str) -> String {
        format!("{base}/v1")
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn build(&self, req: &ChatRequest, stream: bool) -> WireRequest {
        build(req, stream)
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(Parser::default())
    }

    fn parse_body(&self, body: &[u8], out: &mut Vec<ModelEvent>) {
        parse_body(body, out);
    }

    fn error_fields(&self, error: Option<&serde_json::Value>) -> ErrorFields {
        ErrorFields::typed(error)
    }

    fn auth_header(&self, key: &str) -> (&'static str, String) {
        ("x-api-key", key.to_owned())
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", "2023-06-01")]
    }

    /// Messages has no `response_format`: objects come as a forced tool call's arguments.
    fn native_structured_output(&self) -> bool {
        false
    }

    fn embeddings(&self, _model: &str, _inputs: &[String]) -> Option<WireRequest> {
        None
    }

    fn vectors(&self, _answer: &serde_json::Value) -> Option<Vec<Vec<f32>>> {
        None
    }

    fn image_generation(&self, _request: &crate::images::ImageRequest) -> Option<WireRequest> {
        None
    }

    fn images(&self, _answer: &serde_json::Value) -> Option<crate::images::GeneratedImages> {
        None
    }

    fn models_path(&self) -> &'static str {
        "/models"
    }

    fn property_names(&self) -> Option<fn(&str) -> bool> {
        Some(super::keys::anthropic_key)
    }
}
