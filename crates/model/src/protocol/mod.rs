//! Wire protocols. Each protocol knows how to build a request body from a [`ChatRequest`] and
//! how to turn its response (streamed frames or one JSON body) into [`ModelEvent`]s, and
//! answers everything else it does its own way (base URLs, auth, error bodies, structured
//! output, embeddings, model listing) as one [`wire::Wire`] implementation in its own file;
//! [`Protocol::wire`] is the one place a protocol is chosen. Parsers are synchronous state
//! machines, so they are tested byte by byte without any IO.

pub mod anthropic;
pub mod gemini;
pub mod keys;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
pub mod schema;
pub mod wire;

use crate::error::{ModelError, classify, parse_google_duration, parse_retry_after_secs};
use crate::event::ModelEvent;
use crate::framing::{Frame, Framing};
use crate::request::ChatRequest;
use rein_core::message::{Role, ToolCall};
use serde::{Deserialize, Serialize};

/// A provider wire protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// OpenAI Chat Completions (and every OpenAI-compatible server).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini (Developer API).
    Gemini,
    /// Ollama `/api/chat`.
    Ollama,
}

/// Turns one response's frames into normalized events.
pub trait StreamParser: Send {
    /// One frame.
    fn frame(&mut self, frame: Frame<'_>, out: &mut Vec<ModelEvent>);
    /// The body ended: close open tool calls, report the stop (or an interruption).
    fn finish(&mut self, out: &mut Vec<ModelEvent>);
}

/// What to send for one call.
#[derive(Clone, Debug, PartialEq)]
pub struct WireRequest {
    /// Path below the base URL (may carry a query).
    pub path: String,
    /// JSON body.
    pub body: serde_json::Value,
}

impl Protocol {
    /// Every protocol. A new one is added here; `tests/fixtures.rs` then fails until
    /// `tests/fixtures/providers/` holds a recorded exchange in it (docs/contributing.md).
    pub const ALL: [Protocol; 5] = [
        Protocol::OpenaiChat,
        Protocol::OpenaiResponses,
        Protocol::Anthropic,
        Protocol::Gemini,
        Protocol::Ollama,
    ];

    /// Everything this protocol does its own way.
    pub fn wire(self) -> &'static dyn wire::Wire {
        match self {
            Protocol::OpenaiChat => &openai_chat::OpenaiChat,
            Protocol::OpenaiResponses => &openai_responses::OpenaiResponses,
            Protocol::Anthropic => &anthropic::Anthropic,
            Protocol::Gemini => &gemini::Gemini,
            Protocol::Ollama => &ollama::Ollama,
        }
    }

    /// The base URL its requests go under, from either form people give: the SDKs'
    /// conventions (`ANTHROPIC_BASE_URL=https://api.anthropic.com`, a Gemini host without a
    /// version, an OpenAI-compatible server's bare address) or the versioned one. Anthropic
    /// gains `/v1` unless it ends so; Gemini `/v1beta` unless it ends in a version; OpenAI
    /// Chat and Responses `/v1` only when the URL has no path at all (a path may be a
    /// provider's own prefix, such as `/api/v3` or `/compatible-mode/v1`); Ollama loses a
    /// trailing `/api` or `/v1` (its native API is under the root).
    pub fn base_url(self, given: &str) -> String {
        let base = given.trim_end_matches('/');
        let path = base
            .split_once("://")
            .map_or(base, |(_, rest)| rest)
            .split_once('/')
            .map_or("", |(_, p)| p);
        self.wire().base_url(base, path)
    }

    /// The other form of `base` to suggest when an endpoint under it is not found: without
    /// its version segment, or with the protocol's.
    pub fn other_base_url(self, base: &str) -> String {
        let base = base.trim_end_matches('/');
        for v in ["/v1beta", "/v1alpha", "/v1"] {
            if let Some(stripped) = base.strip_suffix(v) {
                return stripped.to_owned();
            }
        }
        self.wire().versioned(base)
    }

    /// The framing of its streamed responses.
    pub fn framing(self) -> Framing {
        self.wire().framing()
    }

    /// Build the request.
    pub fn build(self, req: &ChatRequest, stream: bool) -> WireRequest {
        self.wire().build(req, stream)
    }

    /// A parser for one streamed response.
    pub fn parser(self) -> Box<dyn StreamParser> {
        self.wire().parser()
    }

    /// Events of a complete non-streamed 2xx body.
    pub fn parse_body(self, body: &[u8]) -> Vec<ModelEvent> {
        let mut out = Vec::new();
        self.wire().parse_body(body, &mut out);
        out
    }

    /// Classify a non-2xx response.
    pub fn http_error(self, status: u16, headers: &[(String, String)], body: &[u8]) -> ModelError {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        let err = v.get("error");
        let wire::ErrorFields {
            kind: ptype,
            code,
            message,
        } = self.wire().error_fields(err);
        let message = message.unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                format!("HTTP {status}")
            } else {
                text.chars().take(500).collect()
            }
        });
        let kind = classify(status, ptype.as_deref(), code.as_deref(), &message);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let retry_after_ms = header("retry-after-ms")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|ms| ms.max(0.0).round() as u64)
            .or_else(|| header("retry-after").and_then(parse_retry_after_secs))
            .or_else(|| google_retry_delay(err));
        let retryable = match header("x-should-retry") {
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            _ => kind.is_transient(),
        };
        ModelError {
            kind,
            http_status: Some(status),
            provider_type: ptype,
            provider_code: code,
            message,
            retryable,
            retry_after_ms,
            request_id: v
                .get("request_id")
                .and_then(|r| r.as_str())
                .or_else(|| header("request-id"))
                .or_else(|| header("x-request-id"))
                .map(str::to_owned),
        }
    }
}

/// A JSON scalar as text (`"429"` for 429, the string itself for strings).
pub(crate) fn json_scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn google_retry_delay(err: Option<&serde_json::Value>) -> Option<u64> {
    err?.get("details")?.as_array()?.iter().find_map(|d| {
        let is_retry = d.get("@type")?.as_str()?.ends_with("google.rpc.RetryInfo");
        if is_retry {
            parse_google_duration(d.get("retryDelay")?.as_str()?)
        } else {
            None
        }
    })
}

/// An in-stream error from its provider type, code and message (HTTP 200).
pub(crate) fn stream_error(ptype: Option<&str>, code: Option<&str>, message: &str) -> ModelError {
    let kind = classify(200, ptype, code, message);
    let mut e = ModelError::new(kind, message).with_status(200);
    e.provider_type = ptype.map(str::to_owned);
    e.provider_code = code.map(str::to_owned);
    e
}

/// A stream that ended without its terminator.
pub(crate) fn interrupted(what: &str) -> ModelEvent {
    ModelEvent::Error {
        error: ModelError::new(
            crate::error::ErrorKind::StreamInterrupted,
            format!("the stream ended before {what}"),
        ),
    }
}

/// A frame that is not the JSON it should be.
pub(crate) fn malformed(detail: impl std::fmt::Display) -> ModelEvent {
    ModelEvent::Error {
        error: ModelError::new(
            crate::error::ErrorKind::MalformedStream,
            format!("malformed stream: {detail}"),
        ),
    }
}

/// The model-facing name of a call in the history.
pub(crate) fn wire_name(call: &ToolCall) -> String {
    if call.is_resolved() {
        rein_core::tool::mangle(&call.identifier, &call.api)
    } else {
        call.api.to_string()
    }
}

/// The text of every system message, joined.
pub(crate) fn system_text(req: &ChatRequest) -> Option<String> {
    let parts: Vec<String> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.text_content())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Append `item` under `key` of the last entry when it has `role`, else start a new entry:
/// providers that require alternating roles get consecutive items of one role merged.
pub(crate) fn push_grouped(
    list: &mut Vec<serde_json::Value>,
    role: &str,
    key: &str,
    item: serde_json::Value,
) {
    match list.last_mut() {
        Some(last) if last["role"] == role => {
            if let Some(items) = last[key].as_array_mut() {
                items.push(item);
            }
        }
        _ => list.push(serde_json::json!({"role": role, key: [item]})),
    }
}

/// Split a `data:` URL into (media type, base64 payload).
/// An image a tool result carries after its text (`ToolOutput::media`).
pub(crate) struct ToolImage<'a> {
    /// A `data:` URL (or any URL).
    pub(crate) url: &'a str,
    /// Its media type when known.
    pub(crate) media_type: Option<&'a str>,
    /// Provider detail hint.
    pub(crate) detail: Option<&'a str>,
}

/// The images tool message `m` carries.
pub(crate) fn tool_images(m: &rein_core::message::Message) -> impl Iterator<Item = ToolImage<'_>> {
    m.content.iter().filter_map(|p| match p {
        rein_core::message::ContentPart::Image {
            url,
            media_type,
            detail,
        } => Some(ToolImage {
            url,
            media_type: media_type.as_deref(),
            detail: detail.as_deref(),
        }),
        rein_core::message::ContentPart::Text { .. }
        | rein_core::message::ContentPart::File { .. } => None,
    })
}

pub(crate) fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media = meta.strip_suffix(";base64")?;
    Some((media, data))
}

/// Arguments of a call as a JSON object (invalid arguments become `{}`: the provider requires
/// an object, and the tool result already told the model its arguments were invalid).
pub(crate) fn arguments_object(call: &ToolCall) -> serde_json::Value {
    serde_json::from_str::<serde_json::Value>(&call.arguments)
        .ok()
        .filter(|v| v.is_object())
        .unwrap_or_else(|| serde_json::json!({}))
}
