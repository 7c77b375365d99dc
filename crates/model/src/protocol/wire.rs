//! [`Wire`]: everything one wire protocol does its own way, one implementation per protocol
//! file. Every method is required, so a new protocol is one file that answers each question
//! and one arm in [`super::Protocol::wire`]; the compiler lists what it has not answered yet.

use super::{StreamParser, WireRequest};
use crate::event::ModelEvent;
use crate::framing::{Frame, Framing};
use crate::request::ChatRequest;
use serde_json::Value;

/// One wire protocol's decisions.
pub trait Wire: Sync {
    /// The base URL its requests go under, from `base` as given (no trailing `/`) whose path
    /// below the host is `path` (empty when it has none).
    fn base_url(&self, base: &str, path: &str) -> String;

    /// `base`, which has no version segment, with the one this protocol's URLs usually carry
    /// (suggested when an endpoint is not found).
    fn versioned(&self, base: &str) -> String;

    /// How its streamed responses are framed.
    fn framing(&self) -> Framing;

    /// The request for one chat call.
    fn build(&self, req: &ChatRequest, stream: bool) -> WireRequest;

    /// A parser for one streamed response.
    fn parser(&self) -> Box<dyn StreamParser>;

    /// The events of a complete non-streamed 2xx body.
    fn parse_body(&self, body: &[u8], out: &mut Vec<ModelEvent>);

    /// The provider's error type, code and message in an error body's `error` member.
    fn error_fields(&self, error: Option<&Value>) -> ErrorFields;

    /// The header that carries the API key `key` (when no quirk names another).
    fn auth_header(&self, key: &str) -> (&'static str, String);

    /// Headers every request carries (besides the content type and the key).
    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)];

    /// Whether it takes a JSON schema for the answer (`response_format`): otherwise an
    /// object is asked for as the arguments of a forced tool call.
    fn native_structured_output(&self) -> bool;

    /// The request embedding `inputs` with `model`, or `None` when the provider has no
    /// embeddings endpoint.
    fn embeddings(&self, model: &str, inputs: &[String]) -> Option<WireRequest>;

    /// The vectors of an embeddings answer, in input order (`None` when it has another shape).
    fn vectors(&self, answer: &Value) -> Option<Vec<Vec<f32>>>;

    /// The request generating images for `request`, or `None` when the protocol has no image
    /// output ([`crate::images`]).
    fn image_generation(&self, request: &crate::images::ImageRequest) -> Option<WireRequest>;

    /// The images of an image-generation answer (`None` when it has another shape).
    fn images(&self, answer: &Value) -> Option<crate::images::GeneratedImages>;

    /// The path that lists the models it serves.
    fn models_path(&self) -> &'static str;

    /// The tool property names it takes, when it refuses some (those are renamed on the way
    /// out and back, `super::keys`); `None` when it takes any.
    fn property_names(&self) -> Option<fn(&str) -> bool>;
}

/// What an error body says, each when it says it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorFields {
    /// The provider's error type (`invalid_request_error`, `INVALID_ARGUMENT`, ...).
    pub kind: Option<String>,
    /// Its code.
    pub code: Option<String>,
    /// Its message.
    pub message: Option<String>,
}

impl ErrorFields {
    /// `{"type", "code", "message"}`: OpenAI's and Anthropic's shape.
    pub fn typed(error: Option<&Value>) -> Self {
        let text = |k: &str| {
            error
                .and_then(|e| e.get(k))
                .and_then(|s| s.as_str())
                .map(str::to_owned)
        };
        Self {
            kind: text("type"),
            code: error
                .and_then(|e| e.get("code"))
                .filter(|c| !c.is_null())
                .map(super::json_scalar),
            message: text("message"),
        }
    }
}

/// The events of a non-streamed body that is one of the objects its stream's frames carry.
pub(crate) fn body_as_frame(
    mut parser: Box<dyn StreamParser>,
    frame: Frame<'_>,
    out: &mut Vec<ModelEvent>,
) {
    parser.frame(frame, out);
    parser.finish(out);
}

/// `/embeddings` with `{"model", "input"}` and `data[].embedding`: OpenAI's shape.
pub(crate) fn openai_embeddings(model: &str, inputs: &[String]) -> WireRequest {
    WireRequest {
        path: "/embeddings".into(),
        body: serde_json::json!({"model": model, "input": inputs}),
    }
}

/// The vectors of an OpenAI-shaped embeddings answer.
pub(crate) fn openai_vectors(answer: &Value) -> Option<Vec<Vec<f32>>> {
    answer.get("data").and_then(|d| d.as_array()).map(|items| {
        items
            .iter()
            .filter_map(|i| {
                i.get("embedding")
                    .and_then(|x| serde_json::from_value(x.clone()).ok())
            })
            .collect()
    })
}

/// `{base}/v1` unless the URL already has a path (a provider's own prefix such as `/api/v3`
/// or `/compatible-mode/v1`): OpenAI-compatible servers.
pub(crate) fn v1_when_bare(base: &str, path: &str) -> String {
    if path.is_empty() {
        format!("{base}/v1")
    } else {
        base.to_owned()
    }
}
