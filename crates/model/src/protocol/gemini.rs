//! Google Gemini (Developer API) `streamGenerateContent?alt=sse`: CRLF-framed SSE with no end
//! sentinel, thought parts, function calls without ids whose `thoughtSignature` must be echoed,
//! `finishReason: STOP` even for tool calls, cumulative `usageMetadata`, and mid-stream errors
//! as bare JSON.

use super::wire::{self, ErrorFields, Wire};
use super::{
    StreamParser, WireRequest, arguments_object, data_url, interrupted, json_scalar, malformed,
    push_grouped, stream_error, system_text, wire_name,
};
use crate::event::{Citation, ModelEvent, StopReason};
use crate::framing::{Frame, Framing};
use crate::request::{ChatRequest, ReasoningEffort, ResponseFormat, ToolChoice};
use rein_core::TokenUsage;
use rein_core::message::{ContentPart, Role};
use serde::Deserialize;
use serde_json::{Value, json};

/// A tool's parameter schema as Gemini's function declarations take it (an OpenAPI subset):
/// references inlined ([`super::schema::inline_refs`]), then keywords it rejects removed or
/// rewritten.
fn gemini_schema(v: &Value) -> Value {
    sanitize_schema(&super::schema::inline_refs(&super::schema::object_root(v)))
}

/// Remove or rewrite the keywords Gemini's schema rejects: `const` becomes a one-value `enum`
/// (strings) and is dropped otherwise; a list of types (`["string", "null"]`) becomes the
/// first that is not null, `nullable` when null was one.
fn sanitize_schema(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                match k.as_str() {
                    "additionalProperties"
                    | "$schema"
                    | "$id"
                    | "$defs"
                    | "definitions"
                    | "strict"
                    | "$comment" => {}
                    "const" => {
                        if v.is_string() && !map.contains_key("enum") {
                            out.insert("enum".into(), json!([v]));
                        }
                    }
                    "type" if v.is_array() => {
                        let types: Vec<&str> = v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect();
                        if let Some(t) = types.iter().find(|t| **t != "null") {
                            out.insert("type".into(), json!(t));
                        }
                        if types.contains(&"null") {
                            out.insert("nullable".into(), json!(true));
                        }
                    }
                    // Property names are the tool's words, not keywords.
                    "properties" if v.is_object() => {
                        let props = v.as_object().into_iter().flatten();
                        out.insert(
                            k.clone(),
                            props
                                .map(|(name, p)| (name.clone(), sanitize_schema(p)))
                                .collect::<serde_json::Map<_, _>>()
                                .into(),
                        );
                    }
                    _ => {
                        out.insert(k.clone(), sanitize_schema(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sanitize_schema).collect()),
        other => other.clone(),
    }
}

fn push_part(contents: &mut Vec<Value>, role: &str, part: Value) {
    push_grouped(contents, role, "parts", part);
}

/// An image part: inline bytes for a `data:` URL, else a file reference.
fn image_part(url: &str, media_type: Option<&str>) -> Value {
    match data_url(url) {
        Some((media, data)) => json!({"inlineData": {"mimeType": media, "data": data}}),
        None => {
            json!({"fileData": {"fileUri": url, "mimeType": media_type.unwrap_or("image/jpeg")}})
        }
    }
}

/// The request body; the path names the model and the mode.
pub fn build(req: &ChatRequest, stream: bool) -> WireRequest {
    let mut contents = Vec::new();
    // A function response holds JSON only on the models rein drives: the images answering a
    // turn's calls follow its function responses in the same user turn, each call's after a
    // line naming it.
    let mut seen: Vec<Value> = Vec::new();
    for m in req.messages.iter() {
        if m.role != Role::Tool {
            for part in seen.drain(..) {
                push_part(&mut contents, "user", part);
            }
        }
        match m.role {
            Role::System => {}
            Role::User => {
                for p in &m.content {
                    let part = match p {
                        ContentPart::Text { text } => json!({"text": text}),
                        file @ ContentPart::File { .. } => {
                            json!({"text": file.file_text(None).unwrap_or_default()})
                        }
                        ContentPart::Image {
                            url, media_type, ..
                        } => image_part(url, media_type.as_deref()),
                    };
                    push_part(&mut contents, "user", part);
                }
            }
            Role::Assistant => {
                let text = m.text_content();
                if !text.is_empty() {
                    push_part(&mut contents, "model", json!({"text": text}));
                }
                for c in &m.tool_calls {
                    let mut part = json!({"functionCall": {"name": wire_name(c), "args": arguments_object(c)}});
                    if let Some(sig) = &c.thought_signature {
                        part["thoughtSignature"] = json!(sig);
                    }
                    push_part(&mut contents, "model", part);
                }
            }
            Role::Tool => {
                // Gemini pairs results with calls by function name.
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                let name = req
                    .messages
                    .iter()
                    .flat_map(|a| a.tool_calls.iter())
                    .find(|c| &*c.id == id)
                    .map(wire_name)
                    .unwrap_or_else(|| id.to_owned());
                let mut images = super::tool_images(m).peekable();
                if images.peek().is_some() {
                    seen.push(json!({"text": format!("The images of the call of {name}:")}));
                    seen.extend(images.map(|i| image_part(i.url, i.media_type)));
                }
                let part = json!({"functionResponse": {"name": name, "response": {"content": m.text_content()}}});
                push_part(&mut contents, "user", part);
            }
        }
    }
    for part in seen {
        push_part(&mut contents, "user", part);
    }
    let mut body = json!({"contents": contents});
    if let Some(system) = system_text(req) {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                // A function without parameters declares none: Gemini has refused an object
                // with empty `properties` ("should be non-empty for OBJECT type").
                if super::schema::takes_nothing(&t.parameters) {
                    json!({"name": t.name, "description": t.description})
                } else {
                    json!({"name": t.name, "description": t.description, "parameters": gemini_schema(&t.parameters)})
                }
            })
            .collect();
        body["tools"] = json!([{"functionDeclarations": decls}]);
        body["toolConfig"] = match &req.tool_choice {
            ToolChoice::Auto => json!({"functionCallingConfig": {"mode": "AUTO"}}),
            ToolChoice::None => json!({"functionCallingConfig": {"mode": "NONE"}}),
            ToolChoice::Required => json!({"functionCallingConfig": {"mode": "ANY"}}),
            ToolChoice::Tool(n) => {
                json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [n]}})
            }
        };
    }
    let mut generation = serde_json::Map::new();
    if let Some(t) = req.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        generation.insert("topP".into(), json!(p));
    }
    if let Some(n) = req.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(n));
    }
    if !req.stop.is_empty() {
        generation.insert("stopSequences".into(), json!(req.stop));
    }
    if let Some(r) = req.reasoning {
        let budget = r.budget_tokens.map(i64::from).or(r.effort.map(|e| match e {
            ReasoningEffort::Low => 1024,
            ReasoningEffort::Medium => 8192,
            ReasoningEffort::High => 24576,
        }));
        let mut thinking = json!({"includeThoughts": true});
        if let Some(b) = budget {
            thinking["thinkingBudget"] = json!(b);
        }
        generation.insert("thinkingConfig".into(), thinking);
    }
    match &req.response_format {
        ResponseFormat::Text => {}
        ResponseFormat::JsonObject => {
            generation.insert("responseMimeType".into(), json!("application/json"));
        }
        ResponseFormat::JsonSchema { schema, .. } => {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseJsonSchema".into(), schema.clone());
        }
    }
    if !generation.is_empty() {
        body["generationConfig"] = Value::Object(generation);
    }
    let path = if stream {
        format!("/models/{}:streamGenerateContent?alt=sse", req.model)
    } else {
        format!("/models/{}:generateContent", req.model)
    };
    WireRequest { path, body }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    usage_metadata: Option<WireUsage>,
    model_version: Option<String>,
    response_id: Option<String>,
    error: Option<Value>,
    prompt_feedback: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
    grounding_metadata: Option<Value>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    thought_signature: Option<String>,
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    id: Option<String>,
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    total_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
}

/// Stream state.
#[derive(Default)]
pub struct Parser {
    started: bool,
    calls: u32,
    finish: Option<String>,
    failed: bool,
}

impl Parser {
    fn chunk(&mut self, c: Chunk, out: &mut Vec<ModelEvent>) {
        if let Some(e) = c.error {
            let status = e.get("status").and_then(|s| s.as_str());
            let code = e.get("code").map(json_scalar);
            let msg = e
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("provider error");
            let mut error = stream_error(status, code.as_deref(), msg);
            if let Some(http) = e
                .get("code")
                .and_then(|c| c.as_u64())
                .and_then(|c| u16::try_from(c).ok())
            {
                error.kind = crate::error::classify(http, status, code.as_deref(), msg);
                error.retryable = error.kind.is_transient();
            }
            out.push(ModelEvent::Error { error });
            self.failed = true;
            return;
        }
        if !self.started {
            self.started = true;
            out.push(ModelEvent::Start {
                response_id: c.response_id,
                model: c.model_version,
            });
        }
        if let Some(reason) = c
            .prompt_feedback
            .as_ref()
            .and_then(|f| f.get("blockReason"))
            .and_then(|r| r.as_str())
        {
            self.finish = Some(reason.to_owned());
        }
        for cand in c.candidates {
            for part in cand.content.map(|c| c.parts).unwrap_or_default() {
                if let Some(f) = part.function_call {
                    let index = self.calls;
                    self.calls += 1;
                    out.push(ModelEvent::ToolCallStart {
                        index,
                        id: f.id,
                        name: f.name,
                        thought_signature: part.thought_signature,
                    });
                    let args = f.args.unwrap_or_else(|| json!({}));
                    out.push(ModelEvent::ToolCallDelta {
                        index,
                        arguments: args.to_string(),
                    });
                    out.push(ModelEvent::ToolCallEnd { index });
                } else if let Some(t) = part.text.filter(|t| !t.is_empty()) {
                    out.push(if part.thought {
                        ModelEvent::ReasoningDelta { text: t }
                    } else {
                        ModelEvent::TextDelta { text: t }
                    });
                }
            }
            if let Some(chunks) = cand
                .grounding_metadata
                .as_ref()
                .and_then(|g| g.get("groundingChunks"))
                .and_then(|c| c.as_array())
            {
                for web in chunks.iter().filter_map(|c| c.get("web")) {
                    if let Some(uri) = web.get("uri").and_then(|u| u.as_str()) {
                        let title = web.get("title").and_then(|t| t.as_str()).map(str::to_owned);
                        out.push(ModelEvent::Citation {
                            citation: Citation {
                                url: uri.to_owned(),
                                title,
                            },
                        });
                    }
                }
            }
            if let Some(r) = cand.finish_reason {
                self.finish = Some(r);
            }
        }
        if let Some(u) = c.usage_metadata {
            let output = u.candidates_token_count + u.thoughts_token_count;
            out.push(ModelEvent::Usage {
                usage: TokenUsage {
                    input: u.prompt_token_count,
                    output,
                    total: if u.total_token_count > 0 {
                        u.total_token_count
                    } else {
                        u.prompt_token_count + output
                    },
                    cached_read: u.cached_content_token_count,
                    cache_write: 0,
                    reasoning: u.thoughts_token_count,
                },
            });
        }
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
        // A non-streamed error body may be an array of one error object.
        let trimmed = data.trim();
        let parsed = if trimmed.starts_with('[') {
            serde_json::from_str::<Vec<Chunk>>(trimmed).map(|v| v.into_iter().collect::<Vec<_>>())
        } else {
            serde_json::from_str::<Chunk>(trimmed).map(|c| vec![c])
        };
        match parsed {
            Ok(chunks) => chunks.into_iter().for_each(|c| self.chunk(c, out)),
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
        // Gemini has no end sentinel: a finishReason is the only sign the stream completed.
        match self.finish.take() {
            Some(raw) => {
                let reason = match raw.as_str() {
                    "STOP" if self.calls > 0 => StopReason::ToolUse,
                    "STOP" => StopReason::EndTurn,
                    "MAX_TOKENS" => StopReason::MaxTokens,
                    "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                    | "IMAGE_SAFETY" | "OTHER" => StopReason::ContentFilter,
                    "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => StopReason::Error,
                    _ => StopReason::EndTurn,
                };
                out.push(ModelEvent::Stop {
                    reason,
                    raw: Some(raw),
                });
            }
            None => out.push(interrupted("a finishReason")),
        }
    }
}

/// Google Gemini (Developer API).
pub struct Gemini;

impl Wire for Gemini {
    fn base_url(&self, base: &str, _path: &str) -> String {
        if ["/v1", "/v1beta", "/v1alpha"]
            .iter()
            .any(|v| base.ends_with(v))
        {
            base.to_owned()
        } else {
            format!("{base}/v1beta")
        }
    }

    fn versioned(&self, base: &str) -> String {
        format!("{base}/v1beta")
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
        // The body is one of the objects its stream's frames carry.
        wire::body_as_frame(
            self.parser(),
            Frame::Json(&String::from_utf8_lossy(body)),
            out,
        );
    }

    /// `{"error": {"status", "code", "message"}}`.
    fn error_fields(&self, error: Option<&serde_json::Value>) -> ErrorFields {
        ErrorFields {
            kind: error
                .and_then(|e| e.get("status"))
                .and_then(|s| s.as_str())
                .map(str::to_owned),
            code: error.and_then(|e| e.get("code")).map(super::json_scalar),
            message: error
                .and_then(|e| e.get("message"))
                .and_then(|s| s.as_str())
                .map(str::to_owned),
        }
    }

    fn auth_header(&self, key: &str) -> (&'static str, String) {
        ("x-goog-api-key", key.to_owned())
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn native_structured_output(&self) -> bool {
        true
    }

    fn embeddings(&self, model: &str, inputs: &[String]) -> Option<WireRequest> {
        let requests: Vec<serde_json::Value> = inputs
            .iter()
            .map(|t| {
                serde_json::json!({
                    "model": format!("models/{model}"),
                    "content": {"parts": [{"text": t}]}
                })
            })
            .collect();
        Some(WireRequest {
            path: format!("/models/{model}:batchEmbedContents"),
            body: serde_json::json!({ "requests": requests }),
        })
    }

    fn vectors(&self, answer: &serde_json::Value) -> Option<Vec<Vec<f32>>> {
        answer
            .get("embeddings")
            .and_then(|e| e.as_array())
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| {
                        i.get("values")
                            .and_then(|x| serde_json::from_value(x.clone()).ok())
                    })
                    .collect()
            })
    }

    fn image_generation(&self, request: &crate::images::ImageRequest) -> Option<WireRequest> {
        Some(crate::images::gemini_request(request))
    }

    fn images(&self, answer: &serde_json::Value) -> Option<crate::images::GeneratedImages> {
        crate::images::gemini_images(answer)
    }

    fn models_path(&self) -> &'static str {
        "/models"
    }

    fn property_names(&self) -> Option<fn(&str) -> bool> {
        None
    }
}
