//! OpenAI Chat Completions, also spoken by most OpenAI-compatible servers (vLLM, DeepSeek,
//! Groq, OpenRouter, llama.cpp, ...), whose variations (reasoning on `reasoning_content` or
//! `reasoning`, usage on the finish chunk, whole arguments in one delta) are handled here.

use super::wire::{self, ErrorFields, Wire};
use super::{
    StreamParser, WireRequest, interrupted, malformed, stream_error, system_text, wire_name,
};
use crate::event::{ModelEvent, StopReason};
use crate::framing::{Frame, Framing};
use crate::request::{ChatRequest, ReasoningEffort, ResponseFormat, ToolChoice};
use rein_core::TokenUsage;
use rein_core::message::{ContentPart, Role};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::BTreeSet;

/// The longest function description OpenAI takes, in characters.
pub const DESCRIPTION_MAX_CHARS: usize = 1024;

/// Tool definitions as OpenAI takes them: the parameters an object schema, a description over
/// [`DESCRIPTION_MAX_CHARS`] cut there, its whole text returned to go in the system message
/// (so the model still reads every word the tool's author wrote).
fn tool_definitions(req: &ChatRequest) -> (Vec<Value>, Vec<String>) {
    let mut whole = Vec::new();
    let tools = req
        .tools
        .iter()
        .map(|t| {
            let description = if t.description.chars().count() > DESCRIPTION_MAX_CHARS {
                whole.push(format!(
                    "The full description of the tool `{}`:\n{}",
                    t.name, t.description
                ));
                let note = " … (continued in the instructions)";
                let keep = DESCRIPTION_MAX_CHARS - note.chars().count();
                let mut cut: String = t.description.chars().take(keep).collect();
                cut.push_str(note);
                cut
            } else {
                t.description.clone()
            };
            json!({"type": "function", "function": {"name": t.name, "description": description, "parameters": super::schema::object_root(&t.parameters)}})
        })
        .collect();
    (tools, whole)
}

/// An image part of a user message.
fn image_part(url: &str, detail: Option<&str>) -> Value {
    let mut image = json!({"url": url});
    if let Some(d) = detail {
        image["detail"] = json!(d);
    }
    json!({"type": "image_url", "image_url": image})
}

/// The user message that shows a turn's tool images (`parts` name each call's, in order).
fn tool_images_message(parts: Vec<Value>) -> Value {
    json!({"role": "user", "content": parts})
}

/// The request body.
pub fn build(req: &ChatRequest, stream: bool) -> WireRequest {
    let mut messages = Vec::with_capacity(req.messages.len());
    let (tools, whole_descriptions) = tool_definitions(req);
    let system = system_text(req)
        .into_iter()
        .chain(whole_descriptions)
        .collect::<Vec<_>>()
        .join("\n\n");
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    // Chat Completions takes images only from the user ("Image URLs are only allowed for
    // messages with role 'user'"): the images answering a turn's calls follow its tool
    // messages as one user message, since a user message between them would leave a call
    // unanswered.
    let mut seen: Vec<Value> = Vec::new();
    for m in req.messages.iter() {
        if m.role != Role::Tool && !seen.is_empty() {
            messages.push(tool_images_message(std::mem::take(&mut seen)));
        }
        match m.role {
            Role::System => {}
            Role::User => {
                let content = if m
                    .content
                    .iter()
                    .all(|p| matches!(p, ContentPart::Text { .. }))
                {
                    json!(m.text_content())
                } else {
                    Value::Array(
                        m.content
                            .iter()
                            .map(|p| match p {
                                ContentPart::Text { text } => json!({"type": "text", "text": text}),
                                file @ ContentPart::File { .. } => json!({"type": "text", "text": file.file_text(None).unwrap_or_default()}),
                                ContentPart::Image { url, detail, .. } => image_part(url, detail.as_deref()),
                            })
                            .collect(),
                    )
                };
                messages.push(json!({"role": "user", "content": content}));
            }
            Role::Assistant => {
                let text = m.text_content();
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !m.tool_calls.is_empty() {
                    msg["tool_calls"] = m
                        .tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": wire_name(c), "arguments": c.arguments}}))
                        .collect();
                }
                messages.push(msg);
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": m.text_content(),
                }));
                let mut images = super::tool_images(m).peekable();
                if images.peek().is_some() {
                    seen.push(
                        json!({"type": "text", "text": format!("The images of tool call {id}:")}),
                    );
                    seen.extend(images.map(|i| image_part(i.url, i.detail)));
                }
            }
        }
    }
    if !seen.is_empty() {
        messages.push(tool_images_message(seen));
    }
    let mut body = json!({"model": req.model, "messages": messages});
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = match &req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        if let Some(p) = req.parallel_tool_calls {
            body["parallel_tool_calls"] = json!(p);
        }
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = req.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(n) = req.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(effort) = req.reasoning.and_then(|r| r.effort) {
        body["reasoning_effort"] = json!(match effort {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        });
    }
    match &req.response_format {
        ResponseFormat::Text => {}
        ResponseFormat::JsonObject => body["response_format"] = json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}});
        }
    }
    if !req.stop.is_empty() {
        body["stop"] = json!(req.stop);
    }
    WireRequest {
        path: "/chat/completions".into(),
        body,
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<WireUsage>,
    #[serde(borrow)]
    error: Option<WireError<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    message: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<ToolDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolDelta<'a> {
    index: Option<u32>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    /// What the call cost, in USD, as gateways that price calls themselves report it
    /// (OpenRouter's usage accounting); OpenAI sends none.
    cost: Option<f64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    /// Input written to the prompt cache (OpenRouter's usage accounting).
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    code: Option<Value>,
}

impl WireUsage {
    fn normalize(&self) -> TokenUsage {
        TokenUsage {
            input: self.prompt_tokens,
            output: self.completion_tokens,
            total: if self.total_tokens > 0 {
                self.total_tokens
            } else {
                self.prompt_tokens + self.completion_tokens
            },
            cached_read: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cache_write_tokens)
                .unwrap_or(0),
            reasoning: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// Stream state.
#[derive(Default)]
pub struct Parser {
    started: bool,
    open: BTreeSet<u32>,
    seen_tools: bool,
    refused: bool,
    finish_reason: Option<String>,
    done: bool,
    failed: bool,
}

fn stop_reason(raw: &str, tools: bool, refused: bool) -> StopReason {
    match raw {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        _ if refused => StopReason::Refusal,
        _ if tools => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

impl Parser {
    fn chunk(&mut self, c: Chunk<'_>, out: &mut Vec<ModelEvent>) {
        if let Some(e) = c.error {
            let code = e
                .code
                .as_ref()
                .filter(|c| !c.is_null())
                .map(super::json_scalar);
            let msg = e.message.as_deref().unwrap_or("provider error");
            out.push(ModelEvent::Error {
                error: stream_error(e.kind.as_deref(), code.as_deref(), msg),
            });
            self.failed = true;
            return;
        }
        if !self.started {
            self.started = true;
            out.push(ModelEvent::Start {
                response_id: c.id.map(Cow::into_owned),
                model: c.model.map(Cow::into_owned),
            });
        }
        for choice in c.choices {
            if let Some(d) = choice.delta.or(choice.message) {
                if let Some(t) = d
                    .reasoning_content
                    .or(d.reasoning)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ModelEvent::ReasoningDelta {
                        text: t.into_owned(),
                    });
                }
                if let Some(t) = d.content.filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::TextDelta {
                        text: t.into_owned(),
                    });
                }
                if let Some(t) = d.refusal.filter(|t| !t.is_empty()) {
                    self.refused = true;
                    out.push(ModelEvent::RefusalDelta {
                        text: t.into_owned(),
                    });
                }
                for (pos, tc) in d.tool_calls.into_iter().flatten().enumerate() {
                    // Compatible servers sometimes omit the index on whole-call deltas.
                    let index = tc.index.unwrap_or(u32::try_from(pos).unwrap_or(u32::MAX));
                    let (name, args) = match tc.function {
                        Some(f) => (f.name, f.arguments),
                        None => (None, None),
                    };
                    if self.open.insert(index) {
                        self.seen_tools = true;
                        out.push(ModelEvent::ToolCallStart {
                            index,
                            id: tc.id.map(Cow::into_owned),
                            name: name.map(Cow::into_owned).unwrap_or_default(),
                            thought_signature: None,
                        });
                    }
                    if let Some(a) = args.filter(|a| !a.is_empty()) {
                        out.push(ModelEvent::ToolCallDelta {
                            index,
                            arguments: a.into_owned(),
                        });
                    }
                }
            }
            if let Some(r) = choice.finish_reason {
                self.finish_reason = Some(r.into_owned());
                self.close_tools(out);
            }
        }
        if let Some(u) = c.usage {
            out.push(ModelEvent::Usage {
                usage: u.normalize(),
            });
            if let Some(cost) = u.cost.filter(|c| c.is_finite() && *c >= 0.0) {
                out.push(ModelEvent::Cost {
                    cost: rein_core::Usd::from_dollars(cost),
                });
            }
        }
    }

    fn close_tools(&mut self, out: &mut Vec<ModelEvent>) {
        for index in std::mem::take(&mut self.open) {
            out.push(ModelEvent::ToolCallEnd { index });
        }
    }
}

impl StreamParser for Parser {
    fn frame(&mut self, frame: Frame<'_>, out: &mut Vec<ModelEvent>) {
        if self.failed {
            return;
        }
        let data = match frame {
            Frame::Event { data, .. } if data.trim() == "[DONE]" => {
                self.done = true;
                return;
            }
            Frame::Event { data, .. } | Frame::Json(data) => data,
            Frame::Invalid(b) => {
                return out.push(malformed(format!(
                    "invalid UTF-8: {}",
                    String::from_utf8_lossy(b)
                )));
            }
        };
        match serde_json::from_str::<Chunk<'_>>(data) {
            Ok(c) => self.chunk(c, out),
            Err(e) => out.push(malformed(format!(
                "{e} in {}",
                data.chars().take(200).collect::<String>()
            ))),
        }
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        if self.failed {
            return;
        }
        self.close_tools(out);
        match self.finish_reason.take() {
            Some(raw) => out.push(ModelEvent::Stop {
                reason: stop_reason(&raw, self.seen_tools, self.refused),
                raw: Some(raw),
            }),
            None if self.done => out.push(ModelEvent::Stop {
                reason: StopReason::EndTurn,
                raw: None,
            }),
            None => out.push(interrupted("a finish_reason or [DONE]")),
        }
    }
}

/// A non-streamed `chat.completion`.
pub fn parse_body(body: &[u8], out: &mut Vec<ModelEvent>) {
    let mut p = Parser::default();
    match std::str::from_utf8(body) {
        Ok(text) => p.frame(Frame::Json(text), out),
        Err(e) => out.push(malformed(e)),
    }
    p.finish(out);
}

/// OpenAI Chat Completions, and every OpenAI-compatible server.
pub struct OpenaiChat;

impl Wire for OpenaiChat {
    fn base_url(&self, base: &str, path: &str) -> String {
        wire::v1_when_bare(base, path)
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
        ("authorization", format!("Bearer {key}"))
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn native_structured_output(&self) -> bool {
        true
    }

    fn embeddings(&self, model: &str, inputs: &[String]) -> Option<WireRequest> {
        Some(wire::openai_embeddings(model, inputs))
    }

    fn vectors(&self, answer: &serde_json::Value) -> Option<Vec<Vec<f32>>> {
        wire::openai_vectors(answer)
    }

    fn image_generation(&self, request: &crate::images::ImageRequest) -> Option<WireRequest> {
        Some(crate::images::openai_request(request))
    }

    fn images(&self, answer: &serde_json::Value) -> Option<crate::images::GeneratedImages> {
        crate::images::openai_images(answer)
    }

    fn models_path(&self) -> &'static str {
        "/models"
    }

    fn property_names(&self) -> Option<fn(&str) -> bool> {
        None
    }
}
