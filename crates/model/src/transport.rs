//! Transports move one HTTP exchange. The provider logic above (protocol, retries,
//! cancellation) does not know whether bytes come from the network, a recording, or a replay.

use crate::error::{ErrorKind, ModelError};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use std::time::Duration;

/// HTTP method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// GET (listing models).
    Get,
    /// POST (everything else).
    Post,
}

/// One request to send.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpCall {
    /// Method.
    pub method: Method,
    /// Base URL (`https://api.openai.com/v1`).
    pub base_url: String,
    /// Path (and query) below it.
    pub path: String,
    /// Headers, credentials included.
    pub headers: Vec<(String, String)>,
    /// JSON body (ignored for GET).
    pub body: serde_json::Value,
    /// Bytes sent instead of `body` (a multipart form; its content type is in `headers`).
    pub raw: Option<bytes::Bytes>,
}

impl HttpCall {
    /// The full URL.
    pub fn url(&self) -> String {
        format!("{}{}", self.base_url.trim_end_matches('/'), self.path)
    }
}

/// A response whose body arrives in pieces.
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// Body pieces.
    pub body: BoxStream<'static, Result<Bytes, ModelError>>,
}

/// Sends calls.
pub trait Transport: Send + Sync {
    /// Send `call`; resolves once the status and headers are in.
    fn send(&self, call: HttpCall) -> BoxFuture<'static, Result<HttpResponse, ModelError>>;
}

/// Network timeouts.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// To establish a connection.
    pub connect: Duration,
    /// Between two body pieces (a stalled stream fails instead of hanging).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            idle: Duration::from_secs(180),
        }
    }
}

/// HTTP over reqwest (rustls).
#[derive(Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
    idle: Duration,
}

impl ReqwestTransport {
    /// A transport with `timeouts`.
    pub fn new(timeouts: Timeouts) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.idle)
            .build()
            .map_err(|e| {
                ModelError::new(
                    ErrorKind::Config,
                    format!("cannot build the HTTP client: {e}"),
                )
            })?;
        Ok(Self {
            client,
            idle: timeouts.idle,
        })
    }
}

fn network_error(e: reqwest::Error) -> ModelError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Network
    };
    // The URL may carry a key (Gemini accepts `?key=`): never echo it.
    ModelError::new(kind, format!("{}", e.without_url()))
}

impl Transport for ReqwestTransport {
    fn send(&self, call: HttpCall) -> BoxFuture<'static, Result<HttpResponse, ModelError>> {
        let client = self.client.clone();
        let idle = self.idle;
        async move {
            let mut rb = match call.method {
                Method::Get => client.get(call.url()),
                Method::Post => {
                    let body = match &call.raw {
                        Some(raw) => raw.to_vec(),
                        None => serde_json::to_vec(&call.body).map_err(|e| {
                            ModelError::new(
                                ErrorKind::InvalidRequest,
                                format!("request body does not serialize: {e}"),
                            )
                        })?,
                    };
                    client.post(call.url()).body(body)
                }
            };
            for (k, v) in &call.headers {
                rb = rb.header(k, v);
            }
            let resp = rb.send().await.map_err(network_error)?;
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_owned(),
                        v.to_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let body = resp
                .bytes_stream()
                .map(move |r| {
                    r.map_err(|e| {
                        let mut err = network_error(e);
                        if err.kind == ErrorKind::Network {
                            err.kind = ErrorKind::StreamInterrupted;
                        }
                        err.message = format!(
                            "the response stream broke: {} (idle limit {idle:?})",
                            err.message
                        );
                        err
                    })
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

/// Retry schedule for transient failures.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// First backoff.
    pub base_delay: Duration,
    /// Longest single wait.
    pub max_delay: Duration,
    /// Longest total wait across attempts.
    pub max_total_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_total_delay: Duration::from_secs(90),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt` (2 = first retry): the provider's hint when it gave
    /// one, else exponential backoff with ±25% jitter; capped by `max_delay`.
    pub fn delay(&self, attempt: u32, hint_ms: Option<u64>) -> Duration {
        let cap = self.max_delay.as_millis() as u64;
        let ms = match hint_ms {
            Some(h) => h,
            None => {
                let exp = self.base_delay.as_millis() as u64
                    * 2u64.saturating_pow(attempt.saturating_sub(2));
                let jitter = jitter_fraction();
                (exp as f64 * (0.75 + 0.5 * jitter)) as u64
            }
        };
        Duration::from_millis(ms.min(cap))
    }
}

/// A number in [0, 1) that differs between calls (no RNG crate for one number).
fn jitter_fraction() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    let mut x = STATE.fetch_add(nanos | 1, Ordering::Relaxed) ^ nanos;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x >> 11) as f64 / (1u64 << 53) as f64
}
