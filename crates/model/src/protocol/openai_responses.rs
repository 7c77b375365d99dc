//! OpenAI Responses: typed events ending at `response.completed` / `.incomplete` / `.failed`
//! (no `[DONE]`); function calls are items whose `call_id` (not the `fc_` item id) is echoed
//! back; `completed` alone does not tell a tool turn from a final answer. Requests are
//! stateless (`store: false`): a reasoning model is asked for its reasoning items' encrypted
//! content, and each item goes back, unchanged, before the output of its turn.

use super::wire::{self, ErrorFields, Wire};
use super::{
    StreamParser, WireRequest, interrupted, malformed, stream_error, system_text, wire_name,
};
use crate::event::{Citation, ModelEvent, StopReason};
use crate::framing::{Frame, Framing};
use crate::request::{ChatRequest, ReasoningEffort, ResponseFormat, ToolChoice};
use rein_core::TokenUsage;
use rein_core::message::{ContentPart, Role};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The request body.
pub fn build(req: &ChatRequest, stream: bool) -> WireRequest {
    let mut input = Vec::new();
    for m in req.messages.iter() {
        match m.role {
            Role::System => {}
            Role::User => {
                let content: Vec<Value> = m
                    .content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
                        file @ ContentPart::File { .. } => {
                            json!({"type": "input_text", "text": file.file_text(None).unwrap_or_default()})
                        }
                        ContentPart::Image { url, detail, .. } => {
                            json!({"type": "input_image", "image_url": url, "detail": detail.as_deref().unwrap_or("auto")})
                        }
                    })
                    .collect();
                input.push(json!({"role": "user", "content": content}));
            }
            Role::Assistant => {
                // The turn's reasoning goes back first, as it came; without its encrypted
                // content an item could not be resolved (`store: false` keeps nothing).
                if let Some(e) = m.reasoning.as_ref().and_then(|r| r.encrypted.as_ref()) {
                    let text = m.reasoning.as_ref().map_or("", |r| r.text.as_str());
                    let summary: Vec<Value> = if text.is_empty() {
                        Vec::new()
                    } else {
                        vec![json!({"type": "summary_text", "text": text})]
                    };
                    input.push(json!({"type": "reasoning", "id": e.id, "summary": summary, "encrypted_content": e.content}));
                }
                let text = m.text_content();
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                }
                for c in &m.tool_calls {
                    input.push(json!({"type": "function_call", "call_id": c.id, "name": wire_name(c), "arguments": c.arguments}));
                }
            }
            Role::Tool => {
                // A result with images is a list of input contents, text first; without, a
                // string.
                let text = m.text_content();
                let mut images = super::tool_images(m).peekable();
                let output = if images.peek().is_some() {
                    std::iter::once(json!({"type": "input_text", "text": text}))
                        .chain(images.map(|i| json!({"type": "input_image", "image_url": i.url, "detail": i.detail.unwrap_or("auto")})))
                        .collect()
                } else {
                    json!(text)
                };
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": m.tool_call_id.as_deref().unwrap_or_default(),
                    "output": output,
                }));
            }
        }
    }
    let mut body = json!({"model": req.model, "input": input, "store": false});
    if req.replay_reasoning || req.reasoning.is_some() {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(system) = system_text(req) {
        body["instructions"] = json!(system);
    }
    if stream {
        body["stream"] = json!(true);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": super::schema::object_root(&t.parameters), "strict": false}))
            .collect();
        body["tool_choice"] = match &req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
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
        body["max_output_tokens"] = json!(n);
    }
    if let Some(effort) = req.reasoning.and_then(|r| r.effort) {
        let e = match effort {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        };
        body["reasoning"] = json!({"effort": e, "summary": "auto"});
    }
    match &req.response_format {
        ResponseFormat::Text => {}
        ResponseFormat::JsonObject => body["text"] = json!({"format": {"type": "json_object"}}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            body["text"] = json!({"format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}});
        }
    }
    if !req.metadata.is_empty() {
        body["metadata"] = json!(req.metadata);
    }
    WireRequest {
        path: "/responses".into(),
        body,
    }
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    item: Option<Item<'a>>,
    response: Option<ResponseObj>,
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    annotation: Option<Value>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
    #[serde(borrow)]
    encrypted_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ResponseObj {
    id: Option<String>,
    model: Option<String>,
    status: Option<String>,
    usage: Option<WireUsage>,
    error: Option<WireError>,
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    output: Vec<Value>,
}

#[derive(Deserialize)]
struct Incomplete {
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    code: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

/// Stream state.
#[derive(Default)]
pub struct Parser {
    started: bool,
    /// Function-call item id → tool index.
    calls: BTreeMap<String, u32>,
    ended: bool,
    failed: bool,
}

impl Parser {
    fn start_call(&mut self, item: &Item<'_>, out: &mut Vec<ModelEvent>) -> u32 {
        let key = item
            .id
            .as_deref()
            .or(item.call_id.as_deref())
            .unwrap_or_default()
            .to_owned();
        if let Some(&i) = self.calls.get(&key) {
            return i;
        }
        let index = u32::try_from(self.calls.len()).unwrap_or(u32::MAX);
        self.calls.insert(key, index);
        out.push(ModelEvent::ToolCallStart {
            index,
            id: item.call_id.as_deref().map(str::to_owned),
            name: item.name.as_deref().unwrap_or_default().to_owned(),
            thought_signature: None,
        });
        index
    }

    fn event(&mut self, e: Event<'_>, out: &mut Vec<ModelEvent>) {
        match e.kind.as_ref() {
            "response.created" | "response.in_progress" if !self.started => {
                self.started = true;
                let r = e.response.as_ref();
                out.push(ModelEvent::Start {
                    response_id: r.and_then(|r| r.id.clone()),
                    model: r.and_then(|r| r.model.clone()),
                });
            }
            "response.output_text.delta" => {
                if let Some(d) = e.delta {
                    out.push(ModelEvent::TextDelta {
                        text: d.into_owned(),
                    });
                }
            }
            "response.refusal.delta" => {
                if let Some(d) = e.delta {
                    out.push(ModelEvent::RefusalDelta {
                        text: d.into_owned(),
                    });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(d) = e.delta {
                    out.push(ModelEvent::ReasoningDelta {
                        text: d.into_owned(),
                    });
                }
            }
            "response.output_item.added" => {
                if let Some(item) = e.item.filter(|i| i.kind == "function_call") {
                    let index = self.start_call(&item, out);
                    if let Some(a) = item.arguments.filter(|a| !a.is_empty()) {
                        out.push(ModelEvent::ToolCallDelta {
                            index,
                            arguments: a.into_owned(),
                        });
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let index = e
                    .item_id
                    .as_deref()
                    .and_then(|id| self.calls.get(id))
                    .copied();
                if let (Some(index), Some(d)) = (index, e.delta) {
                    out.push(ModelEvent::ToolCallDelta {
                        index,
                        arguments: d.into_owned(),
                    });
                }
            }
            "response.output_item.done" => {
                if let Some(item) = e.item.as_ref().filter(|i| i.kind == "reasoning") {
                    encrypted(item.id.as_deref(), item.encrypted_content.as_deref(), out);
                }
                if let Some(item) = e.item.filter(|i| i.kind == "function_call") {
                    let known = item
                        .id
                        .as_deref()
                        .and_then(|id| self.calls.get(id))
                        .copied();
                    let index = match known {
                        Some(i) => i,
                        None => {
                            // A call seen only whole (non-streamed body): start it with its arguments.
                            let i = self.start_call(&item, out);
                            if let Some(a) = item.arguments.as_deref().filter(|a| !a.is_empty()) {
                                out.push(ModelEvent::ToolCallDelta {
                                    index: i,
                                    arguments: a.to_owned(),
                                });
                            }
                            i
                        }
                    };
                    out.push(ModelEvent::ToolCallEnd { index });
                }
            }
            "response.output_text.annotation.added" => {
                if let Some(url) = e
                    .annotation
                    .as_ref()
                    .and_then(|a| a.get("url"))
                    .and_then(|u| u.as_str())
                {
                    let title = e
                        .annotation
                        .as_ref()
                        .and_then(|a| a.get("title"))
                        .and_then(|t| t.as_str())
                        .map(str::to_owned);
                    out.push(ModelEvent::Citation {
                        citation: Citation {
                            url: url.to_owned(),
                            title,
                        },
                    });
                }
            }
            "error" => {
                let msg = e.message.as_deref().unwrap_or("provider error");
                out.push(ModelEvent::Error {
                    error: stream_error(None, e.code.as_deref(), msg),
                });
                self.failed = true;
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let Some(r) = e.response else { return };
                self.end(r, out);
            }
            _ => {}
        }
    }

    fn end(&mut self, r: ResponseObj, out: &mut Vec<ModelEvent>) {
        self.ended = true;
        if !self.started {
            self.started = true;
            out.push(ModelEvent::Start {
                response_id: r.id.clone(),
                model: r.model.clone(),
            });
            // A non-streamed body: replay its output items as if streamed.
            for item in &r.output {
                self.replay_item(item, out);
            }
        }
        if let Some(u) = &r.usage {
            out.push(ModelEvent::Usage {
                usage: TokenUsage {
                    input: u.input_tokens,
                    output: u.output_tokens,
                    total: if u.total_tokens > 0 {
                        u.total_tokens
                    } else {
                        u.input_tokens + u.output_tokens
                    },
                    cached_read: u
                        .input_tokens_details
                        .as_ref()
                        .and_then(|d| d.cached_tokens)
                        .unwrap_or(0),
                    cache_write: 0,
                    reasoning: u
                        .output_tokens_details
                        .as_ref()
                        .and_then(|d| d.reasoning_tokens)
                        .unwrap_or(0),
                },
            });
        }
        let status = r.status.clone().unwrap_or_else(|| "completed".into());
        let reason = match status.as_str() {
            "failed" => {
                if !self.failed {
                    let (code, msg) = r
                        .error
                        .as_ref()
                        .map_or((None, None), |e| (e.code.as_deref(), e.message.as_deref()));
                    out.push(ModelEvent::Error {
                        error: stream_error(None, code, msg.unwrap_or("response failed")),
                    });
                    self.failed = true;
                }
                StopReason::Error
            }
            "incomplete" => match r
                .incomplete_details
                .as_ref()
                .and_then(|d| d.reason.as_deref())
            {
                Some("content_filter") => StopReason::ContentFilter,
                _ => StopReason::MaxTokens,
            },
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        out.push(ModelEvent::Stop {
            reason,
            raw: Some(status),
        });
    }

    fn replay_item(&mut self, item: &Value, out: &mut Vec<ModelEvent>) {
        let text_of = |v: &Value, key: &str| -> Vec<String> {
            v.get(key)
                .and_then(|c| c.as_array())
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(|t| t.as_str()).map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        match item.get("type").and_then(|t| t.as_str()) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    match (
                        part.get("type").and_then(|t| t.as_str()),
                        part.get("text"),
                        part.get("refusal"),
                    ) {
                        (Some("output_text"), Some(Value::String(t)), _) => {
                            out.push(ModelEvent::TextDelta { text: t.clone() })
                        }
                        (Some("refusal"), _, Some(Value::String(t))) => {
                            out.push(ModelEvent::RefusalDelta { text: t.clone() })
                        }
                        _ => {}
                    }
                }
            }
            Some("reasoning") => {
                for t in text_of(item, "summary") {
                    out.push(ModelEvent::ReasoningDelta { text: t });
                }
                let field = |k: &str| item.get(k).and_then(|v| v.as_str());
                encrypted(field("id"), field("encrypted_content"), out);
            }
            Some("function_call") => {
                if let Ok(i) = serde_json::from_value::<ItemOwned>(item.clone()) {
                    let borrowed = Item {
                        kind: Cow::Borrowed("function_call"),
                        id: i.id.as_deref().map(Cow::Borrowed),
                        call_id: i.call_id.as_deref().map(Cow::Borrowed),
                        name: i.name.as_deref().map(Cow::Borrowed),
                        arguments: None,
                        encrypted_content: None,
                    };
                    let index = self.start_call(&borrowed, out);
                    if let Some(a) = i.arguments.filter(|a| !a.is_empty()) {
                        out.push(ModelEvent::ToolCallDelta {
                            index,
                            arguments: a,
                        });
                    }
                    out.push(ModelEvent::ToolCallEnd { index });
                }
            }
            _ => {}
        }
    }
}

/// A reasoning item's encrypted form, when it came with one.
fn encrypted(id: Option<&str>, content: Option<&str>, out: &mut Vec<ModelEvent>) {
    if let (Some(id), Some(content)) = (id, content.filter(|c| !c.is_empty())) {
        out.push(ModelEvent::EncryptedReasoning {
            id: id.to_owned(),
            content: content.to_owned(),
        });
    }
}

#[derive(Deserialize)]
struct ItemOwned {
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

impl StreamParser for Parser {
    fn frame(&mut self, frame: Frame<'_>, out: &mut Vec<ModelEvent>) {
        let data = match frame {
            Frame::Event { data, .. } | Frame::Json(data) => data,
            Frame::Invalid(b) => {
                return out.push(malformed(format!(
                    "invalid UTF-8: {}",
                    String::from_utf8_lossy(b)
                )));
            }
        };
        if self.ended {
            return;
        }
        match serde_json::from_str::<Event<'_>>(data) {
            Ok(e) => self.event(e, out),
            Err(e) => out.push(malformed(format!(
                "{e} in {}",
                data.chars().take(200).collect::<String>()
            ))),
        }
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        if !self.ended && !self.failed {
            out.push(interrupted("response.completed"));
        }
    }
}

/// OpenAI Responses.
pub struct OpenaiResponses;

impl Wire for OpenaiResponses {
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
        // The body is the response object its stream's last event carries.
        let wrapped = format!(
            "{{\"type\":\"response.completed\",\"response\":{}}}",
            String::from_utf8_lossy(body)
        );
        wire::body_as_frame(
            self.parser(),
            Frame::Event {
                event: Some("response.completed"),
                data: &wrapped,
            },
            out,
        );
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
