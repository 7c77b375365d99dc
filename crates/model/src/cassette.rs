//! Record and replay. [`RecordingTransport`] tees every exchange (request path and body, raw
//! response status, headers and bytes) into a JSONL cassette; [`ReplayTransport`] serves a
//! cassette offline, matching each request by its content (method, path and body) against
//! every recorded exchange, as often as it is asked, and failing loudly, with where the nearest
//! recorded request differs, when the cassette holds no such request. A recorded request may
//! name places in its body whose value varies (`vary`: what a person typed, such as a
//! rejection's reason); it matches whatever is there, and only when no exchange matches
//! exactly. Credentials are never written: request headers are not recorded.

use crate::error::{ErrorKind, ModelError};
use crate::transport::{HttpCall, HttpResponse, Method, Transport};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The recorded request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Method.
    pub method: Method,
    /// Path below the base URL.
    pub path: String,
    /// JSON body.
    #[serde(default)]
    pub body: serde_json::Value,
    /// Places in the body (`body.messages[3].content`, as a mismatch names them) whose value
    /// may be any value of the same JSON type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vary: Vec<String>,
}

/// The recorded response, byte for byte.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// Status.
    pub status: u16,
    /// Headers.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

/// One line of a cassette.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// What was sent.
    pub request: RecordedRequest,
    /// What came back.
    pub response: RecordedResponse,
}

fn io(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ErrorKind::Config,
        format!("cassette {}: {e}", path.display()),
    )
}

/// Tees exchanges of an inner transport into a cassette file (appending).
pub struct RecordingTransport {
    inner: Arc<dyn Transport>,
    path: PathBuf,
}

impl RecordingTransport {
    /// Record what `inner` sends and receives into `path`.
    pub fn new(inner: Arc<dyn Transport>, path: impl Into<PathBuf>) -> Self {
        Self {
            inner,
            path: path.into(),
        }
    }
}

impl Transport for RecordingTransport {
    fn send(&self, call: HttpCall) -> BoxFuture<'static, Result<HttpResponse, ModelError>> {
        let inner = Arc::clone(&self.inner);
        let path = self.path.clone();
        async move {
            let request = RecordedRequest {
                method: call.method,
                path: call.path.clone(),
                body: call.body.clone(),
                vary: Vec::new(),
            };
            let resp = inner.send(call).await?;
            let headers: Vec<(String, String)> = resp
                .headers
                .iter()
                .filter(|(k, _)| !k.eq_ignore_ascii_case("set-cookie"))
                .cloned()
                .collect();
            let status = resp.status;
            let state = (
                resp.body,
                Vec::<u8>::new(),
                Some((request, path, status, headers.clone())),
            );
            // Pass pieces through as they arrive; write the exchange when the body ends.
            let body =
                futures::stream::unfold(state, |(mut body, mut seen, mut pending)| async move {
                    match body.next().await {
                        Some(Ok(piece)) => {
                            seen.extend_from_slice(&piece);
                            Some((Ok(piece), (body, seen, pending)))
                        }
                        Some(Err(e)) => Some((Err(e), (body, seen, pending))),
                        None => {
                            if let Some((request, path, status, headers)) = pending.take() {
                                let response = RecordedResponse {
                                    status,
                                    headers,
                                    body: String::from_utf8_lossy(&seen).into_owned(),
                                };
                                if let Err(e) = append(&path, &Exchange { request, response }).await
                                {
                                    tracing::warn!(error = %e, "could not record the exchange");
                                }
                            }
                            None
                        }
                    }
                })
                .boxed();
            Ok(HttpResponse {
                status,
                headers,
                body,
            })
        }
        .boxed()
    }
}

async fn append(path: &Path, exchange: &Exchange) -> Result<(), ModelError> {
    use tokio::io::AsyncWriteExt;
    let mut line = serde_json::to_string(exchange).map_err(|e| io(path, e))?;
    line.push('\n');
    let mut f = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await
        .map_err(|e| io(path, e))?;
    f.write_all(line.as_bytes())
        .await
        .map_err(|e| io(path, e))?;
    f.flush().await.map_err(|e| io(path, e))
}

/// Serves a cassette by request content, any number of times.
pub struct ReplayTransport {
    exchanges: Vec<Exchange>,
    served: std::sync::atomic::AtomicUsize,
    piece: usize,
}

impl ReplayTransport {
    /// A replay of `exchanges`.
    pub fn new(exchanges: Vec<Exchange>) -> Self {
        Self {
            exchanges,
            served: std::sync::atomic::AtomicUsize::new(0),
            piece: 64,
        }
    }

    /// Read a JSONL cassette; a bad line is an error naming it.
    pub fn from_jsonl(text: &str) -> Result<Self, ModelError> {
        let mut out = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let e: Exchange = serde_json::from_str(line).map_err(|e| {
                ModelError::new(
                    ErrorKind::Config,
                    format!("cassette line {}: not a recorded exchange: {e}", i + 1),
                )
            })?;
            out.push(e);
        }
        Ok(Self::new(out))
    }

    /// Read a cassette file.
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
        Self::from_jsonl(&text)
    }

    /// Requests served so far.
    pub fn served(&self) -> usize {
        self.served.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why `call` (the `n`th request) is not in the cassette: where the nearest recorded
    /// request to the same path differs (the one with the most values in common), or which
    /// paths the cassette holds.
    fn not_held(&self, call: &HttpCall, n: usize) -> ModelError {
        let same_path: Vec<&Exchange> = self
            .exchanges
            .iter()
            .filter(|e| e.request.method == call.method && e.request.path == call.path)
            .collect();
        if same_path.is_empty() {
            let mut held: Vec<String> = self
                .exchanges
                .iter()
                .map(|e| format!("{:?} {}", e.request.method, e.request.path))
                .collect();
            held.dedup();
            return mismatch(format!(
                "request {n} ({:?} {}) is not in the cassette, which holds only {}",
                call.method,
                call.path,
                held.join(", ")
            ));
        }
        let nearest = same_path
            .iter()
            .max_by_key(|e| shared(&e.request.body, &call.body))
            .and_then(|e| {
                first_difference(&e.request.body, &call.body, "body".into(), &e.request.vary)
            })
            .unwrap_or_default();
        mismatch(format!(
            "request {n} to {} is not in the cassette (a replay answers only the requests it recorded); the nearest recorded request differs at {nearest}",
            call.path
        ))
    }

    /// The questions the cassette answers: the text of each recorded conversation that is one
    /// user message (after any system messages) in OpenAI's or Anthropic's shape, in order,
    /// each once; none that varies.
    pub fn questions(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &self.exchanges {
            let Some(messages) = e.request.body["messages"].as_array() else {
                continue;
            };
            let asked: Vec<(usize, &serde_json::Value)> = messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m["role"] != "system")
                .collect();
            let [(i, m)] = asked.as_slice() else {
                continue;
            };
            let varies = e
                .request
                .vary
                .iter()
                .any(|v| v.starts_with(&format!("body.messages[{i}]")));
            if let (Some(text), "user", false) = (
                m["content"].as_str(),
                m["role"].as_str().unwrap_or_default(),
                varies,
            ) && !out.iter().any(|q| q == text)
            {
                out.push(text.to_owned());
            }
        }
        out
    }
}

/// How many leaf values two JSON values have in common, place by place: how near a recorded
/// request is to another.
fn shared(a: &serde_json::Value, b: &serde_json::Value) -> usize {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .filter_map(|(k, va)| y.get(k).map(|vb| shared(va, vb)))
            .sum(),
        (Value::Array(x), Value::Array(y)) => x.iter().zip(y).map(|(va, vb)| shared(va, vb)).sum(),
        _ => usize::from(a == b),
    }
}

/// The first JSON path at which two values differ, but at the places in `vary` (which only
/// need the same JSON type).
fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    at: String,
    vary: &[String],
) -> Option<String> {
    use serde_json::Value;
    if vary.contains(&at) && std::mem::discriminant(a) == std::mem::discriminant(b) {
        return None;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_difference(va, vb, format!("{at}.{k}"), vary) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(va, vb, format!("{at}[{i}]"), vary)),
        _ if a == b => None,
        _ => Some(format!("{at}: recorded {a}, now {b}")),
    }
}

fn mismatch(msg: String) -> ModelError {
    let mut e = ModelError::new(ErrorKind::ReplayMismatch, msg);
    e.retryable = false;
    e
}

impl Transport for ReplayTransport {
    fn send(&self, call: HttpCall) -> BoxFuture<'static, Result<HttpResponse, ModelError>> {
        let n = self
            .served
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let matches = |e: &&Exchange, vary: &[String]| {
            e.request.method == call.method
                && e.request.path == call.path
                && first_difference(&e.request.body, &call.body, "body".into(), vary).is_none()
        };
        // An exact recording first; one with varying places only when none is.
        let found = self
            .exchanges
            .iter()
            .find(|e| matches(e, &[]))
            .or_else(|| {
                self.exchanges
                    .iter()
                    .find(|e| !e.request.vary.is_empty() && matches(e, &e.request.vary))
            })
            .map(|e| e.response.clone());
        let result = found.ok_or_else(|| self.not_held(&call, n));
        let piece = self.piece;
        async move {
            let response = result?;
            let bytes = Bytes::from(response.body.into_bytes());
            let pieces: Vec<Result<Bytes, ModelError>> = (0..bytes.len())
                .step_by(piece.max(1))
                .map(|i| Ok(bytes.slice(i..(i + piece).min(bytes.len()))))
                .collect();
            Ok(HttpResponse {
                status: response.status,
                headers: response.headers,
                body: futures::stream::iter(pieces).boxed(),
            })
        }
        .boxed()
    }
}
