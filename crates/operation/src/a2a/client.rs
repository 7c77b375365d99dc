//! Speaking A2A 1.0's JSON-RPC binding to a remote agent: each request carries the protocol's
//! version header and the owner's bearer token, goes only to an address the guard allowed
//! (resolved once and pinned, so a name that resolves elsewhere later is not followed), and a
//! streamed answer is read as server-sent events, one JSON-RPC response per event.

use super::wire::{StreamResponse, VERSION};
use super::{RemoteAgent, RemoteError};
use rein_model::framing::{Decoder, Frame, Framing};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long a request that is not streamed may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `url` read as an `http(s)` URL with a host.
pub fn http_url(url: &str) -> Result<reqwest::Url, RemoteError> {
    let bad = |why: String| RemoteError::BadUrl {
        url: url.to_owned(),
        why,
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad(format!(
            "scheme `{}` (use http or https)",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host".into()));
    }
    Ok(parsed)
}

/// A host's address, resolved and checked by [`guard`]: what a client built from it reaches.
pub struct Pinned {
    host: String,
    addr: std::net::SocketAddr,
}

/// Resolve `url`'s host now and check where it leads: a loopback, private or link-local
/// address only when `private`.
pub async fn guard(url: &reqwest::Url, private: bool) -> Result<Pinned, RemoteError> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| RemoteError::BadUrl {
            url: url.to_string(),
            why: format!("{host} cannot be resolved: {e}"),
        })?
        .collect();
    if !private && let Some(a) = addrs.iter().find(|a| rein_tools::web::is_internal(a.ip())) {
        return Err(RemoteError::Private {
            url: url.to_string(),
            ip: a.ip().to_string(),
        });
    }
    let addr = *addrs.first().ok_or_else(|| RemoteError::BadUrl {
        url: url.to_string(),
        why: format!("{host} has no address"),
    })?;
    Ok(Pinned { host, addr })
}

impl Pinned {
    /// An HTTP client that reaches the host only at the checked address, following no
    /// redirects; `timeout` bounds each request (`None`: a stream, bounded by its reader).
    pub fn client(
        &self,
        timeout: impl Into<Option<Duration>>,
    ) -> Result<reqwest::Client, RemoteError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .resolve(&self.host, self.addr);
        if let Some(t) = timeout.into() {
            builder = builder.timeout(t);
        }
        builder.build().map_err(|e| RemoteError::Transport {
            endpoint: self.host.clone(),
            why: e.to_string(),
        })
    }
}

/// A connection to one remote agent's JSON-RPC endpoint.
pub struct Client {
    endpoint: reqwest::Url,
    token: Option<String>,
    calls: reqwest::Client,
    streams: reqwest::Client,
    next_id: AtomicU64,
}

impl Client {
    /// Reach `remote` (its endpoint through the guard, its token from this process's
    /// environment).
    pub async fn new(remote: &RemoteAgent) -> Result<Self, RemoteError> {
        let endpoint = http_url(&remote.card.endpoint)?;
        let token = match &remote.token_env {
            Some(var) => Some(
                std::env::var(var)
                    .ok()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| RemoteError::NoToken(var.clone()))?,
            ),
            None => None,
        };
        // Resolved and checked once: both clients reach that address.
        let pinned = guard(&endpoint, remote.private).await?;
        let calls = pinned.client(CALL_TIMEOUT)?;
        let streams = pinned.client(None)?;
        Ok(Self {
            endpoint,
            token,
            calls,
            streams,
            next_id: AtomicU64::new(1),
        })
    }

    /// The endpoint, as shown.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    fn request(
        &self,
        http: &reqwest::Client,
        method: &'static str,
        params: Value,
        accept: &str,
    ) -> reqwest::RequestBuilder {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut req = http
            .post(self.endpoint.clone())
            .header("A2A-Version", VERSION)
            .header("Accept", accept)
            .header("Content-Type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
            );
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        req
    }

    fn transport(&self, why: impl std::fmt::Display) -> RemoteError {
        RemoteError::Transport {
            endpoint: self.endpoint.to_string(),
            why: why.to_string(),
        }
    }

    /// Call `method` with `params` and read its result.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &impl Serialize,
    ) -> Result<T, RemoteError> {
        let params = serde_json::to_value(params).map_err(|e| self.transport(e))?;
        let response = self
            .request(&self.calls, method, params, "application/json")
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| self.transport(e))?;
        let value: Value = serde_json::from_slice(&body).map_err(|_| {
            self.transport(format!(
                "{method} answered HTTP {status} without a JSON-RPC body: {}",
                String::from_utf8_lossy(&body[..body.len().min(300)])
            ))
        })?;
        self.result(method, value)
    }

    /// A JSON-RPC response's result read as `T`, or its error.
    fn result<T: DeserializeOwned>(
        &self,
        method: &'static str,
        value: Value,
    ) -> Result<T, RemoteError> {
        if let Some(e) = value.get("error") {
            return Err(RemoteError::Refused {
                endpoint: self.endpoint.to_string(),
                method,
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                // A JSON-RPC error object, or a plain `{"error": "…"}` body (a gateway's 401).
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .or(e.as_str())
                    .unwrap_or("no message")
                    .to_owned(),
            });
        }
        let result = value
            .get("result")
            .cloned()
            .ok_or_else(|| self.transport(format!("{method}: a response without a result")))?;
        serde_json::from_value(result)
            .map_err(|e| self.transport(format!("{method}: an answer rein cannot read: {e}")))
    }

    /// Call `method`, whose answer is one update (`SendMessage`), read as a stream of one.
    pub async fn once(
        &self,
        method: &'static str,
        params: &impl Serialize,
    ) -> Result<Updates<'_>, RemoteError> {
        let first: StreamResponse = self.call(method, params).await?;
        Ok(Updates {
            client: self,
            method,
            response: None,
            decoder: Decoder::new(Framing::Sse),
            ready: VecDeque::from([Ok(first)]),
        })
    }

    /// Call a streaming `method` (`SendStreamingMessage`, `SubscribeToTask`): its updates as
    /// they come.
    pub async fn stream(
        &self,
        method: &'static str,
        params: &impl Serialize,
    ) -> Result<Updates<'_>, RemoteError> {
        let params = serde_json::to_value(params).map_err(|e| self.transport(e))?;
        let response = self
            .request(&self.streams, method, params, "text/event-stream")
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !sse {
            // An error (or an agent that answers a stream at once) comes as one JSON body.
            let status = response.status();
            let body = response.bytes().await.map_err(|e| self.transport(e))?;
            let value: Value = serde_json::from_slice(&body).map_err(|_| {
                self.transport(format!(
                    "{method} answered HTTP {status}, neither events nor JSON-RPC"
                ))
            })?;
            let first: StreamResponse = self.result(method, value)?;
            return Ok(Updates {
                client: self,
                method,
                response: None,
                decoder: Decoder::new(Framing::Sse),
                ready: VecDeque::from([Ok(first)]),
            });
        }
        Ok(Updates {
            client: self,
            method,
            response: Some(response),
            decoder: Decoder::new(Framing::Sse),
            ready: VecDeque::new(),
        })
    }
}

/// The updates of one streamed request.
pub struct Updates<'a> {
    client: &'a Client,
    method: &'static str,
    response: Option<reqwest::Response>,
    decoder: Decoder,
    ready: VecDeque<Result<StreamResponse, RemoteError>>,
}

impl Updates<'_> {
    /// The next update; `None` once the stream has ended.
    pub async fn next(&mut self) -> Option<Result<StreamResponse, RemoteError>> {
        loop {
            if let Some(u) = self.ready.pop_front() {
                return Some(u);
            }
            let response = self.response.as_mut()?;
            let mut frames: Vec<String> = Vec::new();
            let mut take = |f: Frame<'_>| match f {
                Frame::Event { data, .. } | Frame::Json(data) => frames.push(data.to_owned()),
                Frame::Invalid(_) => frames.push(String::new()),
            };
            match response.chunk().await {
                Ok(Some(bytes)) => self.decoder.push(&bytes, &mut take),
                Ok(None) => {
                    self.decoder.finish(&mut take);
                    self.response = None;
                }
                Err(e) => {
                    self.response = None;
                    return Some(Err(self.client.transport(e)));
                }
            }
            for data in frames {
                let parsed = serde_json::from_str::<Value>(&data)
                    .map_err(|e| {
                        self.client
                            .transport(format!("{}: an event that is not JSON: {e}", self.method))
                    })
                    .and_then(|v| self.client.result(self.method, v));
                self.ready.push_back(parsed);
            }
        }
    }
}
