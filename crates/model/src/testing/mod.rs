//! Test support (feature `testing`): a loopback HTTP/1.1 server that answers with canned
//! responses, writing each body in random 1..=N byte pieces, and records what it was sent. A
//! chat request that its provider would refuse ([`validate`]) gets that provider's 400 instead
//! of the next canned response.
//! Used by the tests of this crate and of the crates above it; never by production code.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

pub mod streams;
mod tool_loop;
pub mod validate;

pub use tool_loop::ToolLoop;

pub use streams::ENCRYPTED_REASONING;

use rand::{Rng, SeedableRng, rngs::StdRng};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub max_piece: usize,
    /// Stop writing after this many bytes and hold the connection open (a stalled stream).
    pub stall_after: Option<usize>,
    /// Wait this long before answering at all (a model that takes its time).
    pub delay: Option<Duration>,
}

impl Canned {
    /// A response from a fixture's sidecar metadata and body.
    pub fn from_meta(meta: &serde_json::Value, body: &[u8]) -> Self {
        let headers = meta["response"]["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Canned {
            status: meta["response"]["status"].as_u64().unwrap() as u16,
            headers,
            body: body.to_vec(),
            max_piece: 7,
            stall_after: None,
            delay: None,
        }
    }

    /// A JSON response.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Canned {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            max_piece: 64,
            stall_after: None,
            delay: None,
        }
    }

    /// An OpenAI embeddings response with `vectors`, one per input, in order.
    pub fn openai_embeddings(vectors: &[&[f32]]) -> Self {
        let data: Vec<serde_json::Value> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| serde_json::json!({"object": "embedding", "index": i, "embedding": v}))
            .collect();
        Self::json(
            200,
            &serde_json::json!({
                "object": "list",
                "data": data,
                "model": "text-embedding-3-small",
                "usage": {"prompt_tokens": 6, "total_tokens": 6}
            }),
        )
    }

    /// An OpenAI Chat Completions stream answering with `text`.
    pub fn openai_text(text: &str) -> Self {
        Self::openai_stream(&[serde_json::json!({"content": text})], "stop")
    }

    /// [`Canned::openai_text`] from a gateway that prices calls itself: its usage chunk carries
    /// `cost` (USD), as OpenRouter's usage accounting sends it.
    pub fn openai_text_costing(text: &str, cost: f64) -> Self {
        let mut c = Self::openai_text(text);
        let body = String::from_utf8_lossy(&c.body).replace(
            r#""total_tokens":120}"#,
            &format!(r#""total_tokens":120,"cost":{cost}}}"#),
        );
        c.body = body.into_bytes();
        c
    }

    /// An OpenAI Chat Completions stream whose `text` arrives whole, after which the stream
    /// stalls (30 s) before its end: a model call that is under way and cannot finish yet.
    pub fn openai_text_then_stall(text: &str) -> Self {
        let mut c = Self::openai_text(text);
        let body = String::from_utf8_lossy(&c.body).into_owned();
        let event_end = body
            .find(&serde_json::to_string(text).unwrap_or_default())
            .and_then(|at| body[at..].find("\n\n").map(|end| at + end + 2));
        c.stall_after = event_end;
        c
    }

    /// This OpenAI stream reporting `input` and `output` tokens instead of 100 and 20.
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        let body = String::from_utf8_lossy(&self.body)
            .replace(
                r#""prompt_tokens":100"#,
                &format!(r#""prompt_tokens":{input}"#),
            )
            .replace(
                r#""completion_tokens":20"#,
                &format!(r#""completion_tokens":{output}"#),
            )
            .replace(
                r#""total_tokens":120"#,
                &format!(r#""total_tokens":{}"#, input + output),
            );
        self.body = body.into_bytes();
        self
    }

    /// This response, answered only after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// An OpenAI Chat Completions stream asking for tool calls `(id, name, arguments)`.
    pub fn openai_tools(calls: &[(&str, &str, &str)]) -> Self {
        let tool_calls: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (id, name, args))| serde_json::json!({"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
        Self::openai_stream(
            &[serde_json::json!({"tool_calls": tool_calls})],
            "tool_calls",
        )
    }

    /// An OpenAI Chat Completions stream of `deltas` (`content`, `reasoning_content`,
    /// `tool_calls`), one chunk each, ending with `finish`.
    pub fn openai_stream(deltas: &[serde_json::Value], finish: &str) -> Self {
        let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
            format!(
                "data: {}\n\n",
                serde_json::json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let mut body = chunk(
            serde_json::json!({"role": "assistant", "content": ""}),
            serde_json::Value::Null,
        );
        for d in deltas {
            body.push_str(&chunk(d.clone(), serde_json::Value::Null));
        }
        body.push_str(&chunk(serde_json::json!({}), serde_json::json!(finish)));
        body.push_str(&format!(
            "data: {}\n\ndata: [DONE]\n\n",
            serde_json::json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        ));
        Canned {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into_bytes(),
            max_piece: 7,
            stall_after: None,
            delay: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
    /// The body's bytes (a multipart form is not JSON).
    pub raw: Vec<u8>,
    /// Why the provider would refuse it ([`validate`]): it was answered with that 400.
    pub refused: Option<String>,
}

impl Recorded {
    /// The value of header `name` (any case), or `""`.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map_or("", |(_, v)| v.as_str())
    }

    /// The function names of the tools a chat request offered, sorted.
    pub fn offered_tools(&self) -> Vec<String> {
        let mut names: Vec<String> = self.body["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The text of the OpenAI Chat tool message answering `call_id` in this request as it went
    /// on the wire (in its `<data>` block when the operation spotlights), or a panic naming the
    /// call and showing the messages.
    pub fn tool_message(&self, call_id: &str) -> String {
        let messages = &self.body["messages"];
        messages
            .as_array()
            .and_then(|a| a.iter().find(|m| m["tool_call_id"] == call_id))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_else(|| panic!("no result for call {call_id} in {messages}"))
            .to_owned()
    }

    /// What the tool answered `call_id` with, as [`Recorded::tool_message`] carried it, out of
    /// the `<data>` block spotlighting wraps it in ([`data_text`]).
    pub fn tool_result(&self, call_id: &str) -> String {
        data_text(&self.tool_message(call_id))
    }

    /// The conversation an OpenAI Chat request carried, without its system messages: each
    /// message's role and text (empty when its content is not text).
    pub fn conversation(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|m| m["role"] != "system")
                    .map(|m| {
                        (
                            m["role"].as_str().unwrap_or_default().to_owned(),
                            m["content"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The texts of [`Recorded::conversation`], in order.
    pub fn conversation_texts(&self) -> Vec<String> {
        self.conversation().into_iter().map(|(_, t)| t).collect()
    }

    /// The system instructions of a chat request in any protocol (OpenAI Chat's and Ollama's
    /// system messages, Anthropic's `system`, Gemini's `systemInstruction`, the Responses API's
    /// `instructions` and system or developer items), as JSON text, one per line.
    pub fn system_text(&self) -> String {
        let b = &self.body;
        let mut parts: Vec<String> = ["system", "systemInstruction", "instructions"]
            .iter()
            .filter_map(|k| b.get(*k).map(|v| v.to_string()))
            .collect();
        for list in ["messages", "input"] {
            if let Some(items) = b[list].as_array() {
                parts.extend(
                    items
                        .iter()
                        .filter(|m| m["role"] == "system" || m["role"] == "developer")
                        .map(|m| m["content"].to_string()),
                );
            }
        }
        parts.join("\n")
    }

    /// Whether any string in the request's body contains `text` (a protocol-blind search for
    /// what a request carried).
    pub fn carries(&self, text: &str) -> bool {
        fn walk(v: &serde_json::Value, text: &str) -> bool {
            match v {
                serde_json::Value::String(s) => s.contains(text),
                serde_json::Value::Array(a) => a.iter().any(|v| walk(v, text)),
                serde_json::Value::Object(o) => o.values().any(|v| walk(v, text)),
                serde_json::Value::Null
                | serde_json::Value::Bool(_)
                | serde_json::Value::Number(_) => false,
            }
        }
        walk(&self.body, text)
    }
}

/// `text` out of the `<data source="…">` block spotlighting wraps a tool's output in (its
/// escaped closing tags read back); `text` itself when it is no such block.
pub fn data_text(text: &str) -> String {
    match text
        .strip_prefix("<data source=\"")
        .and_then(|rest| rest.split_once("\">\n"))
        .and_then(|(_, body)| body.strip_suffix("</data>"))
    {
        // The closing tag is always on a line of its own.
        Some(body) => body
            .strip_suffix('\n')
            .unwrap_or(body)
            .replace("<\\/data", "</data"),
        None => text.to_owned(),
    }
}

/// What spotlighting sends for `text` from `source` (`tool calculator.evaluate`, `file`): the
/// expected wire form in tests that check a protocol's messages exactly.
pub fn data_block(source: &str, text: &str) -> String {
    format!("<data source=\"{source}\">\n{text}\n</data>")
}

/// The marker of [`Server::route_withdrawn`]'s route.
const WITHDRAWN: &str = "\u{0}tools withdrawn";

/// Whether a chat request lets the model call no tool though its history has tool calls.
fn tools_withdrawn(path: &str, body: &serde_json::Value) -> bool {
    use crate::Protocol;
    match validate::protocol_of(path) {
        Some(Protocol::Anthropic) => body["tool_choice"]["type"] == "none",
        Some(Protocol::OpenaiChat | Protocol::OpenaiResponses) => body["tool_choice"] == "none",
        Some(Protocol::Gemini) => body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE",
        Some(Protocol::Ollama) => {
            body.get("tools").is_none()
                && body["messages"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
        }
        None => false,
    }
}

/// Responses for requests whose system messages contain a marker, in order (see
/// [`Server::route`]).
type Routes = Vec<(String, std::collections::VecDeque<Canned>)>;

pub struct Server {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
    pub queue: Arc<Mutex<std::collections::VecDeque<Canned>>>,
    pub routes: Arc<Mutex<Routes>>,
    /// Answers by turn (see [`Server::by_turn`]).
    pub turns: Arc<Mutex<Vec<Canned>>>,
    /// Gemini context caches made here (`cachedContents/N` → the model it is for).
    pub caches: Arc<Mutex<std::collections::HashMap<String, String>>>,
}

impl Server {
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Forget every Gemini context cache made here, as when they expire: a request naming one
    /// is refused as Gemini refuses it.
    pub fn expire_caches(&self) {
        self.caches.lock().unwrap().clear();
    }

    /// Queue more responses.
    pub fn push(&self, c: Canned) {
        self.queue.lock().unwrap().push_back(c);
    }

    /// Answer requests that withdraw the tools (a forced final answer: a tool choice of none,
    /// or, on Ollama, no tools offered after a tool round) with `responses`, in order, before
    /// any other route and the shared queue.
    pub fn route_withdrawn(&self, responses: Vec<Canned>) {
        self.routes
            .lock()
            .unwrap()
            .insert(0, (WITHDRAWN.to_owned(), responses.into_iter().collect()));
    }

    /// Answer each OpenAI Chat request by its turn: the one carrying N tool results gets
    /// `responses[N]`, however often it is asked (a step run again after a crash asks again
    /// and gets the same answer), after the routes and before the shared queue.
    pub fn by_turn(&self, responses: Vec<Canned>) {
        *self.turns.lock().unwrap() = responses;
    }

    /// Answer requests whose system messages contain `marker` with `responses`, in order,
    /// before the shared queue: concurrent callers (sub-agents) each get their own script
    /// whatever order their requests arrive in.
    pub fn route(&self, marker: &str, responses: Vec<Canned>) {
        self.routes
            .lock()
            .unwrap()
            .push((marker.to_owned(), responses.into_iter().collect()));
    }
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(serde_json::Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        raw: buf[header_end..].to_vec(),
        refused: None,
    })
}

async fn respond(mut sock: tokio::net::TcpStream, canned: Option<Canned>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let Some(c) = canned else {
        let _ = sock.write_all(b"HTTP/1.1 500 Internal Server Error\r\nconnection: close\r\ncontent-length: 0\r\n\r\n").await;
        return;
    };
    if let Some(d) = c.delay {
        tokio::time::sleep(d).await;
    }
    let mut head = format!("HTTP/1.1 {} Canned\r\nconnection: close\r\n", c.status);
    for (k, v) in &c.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if sock.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut rest: &[u8] = &c.body;
    let mut written = 0;
    while !rest.is_empty() {
        if c.stall_after.is_some_and(|s| written >= s) {
            tokio::time::sleep(Duration::from_secs(30)).await;
            break;
        }
        let n = rng.random_range(1..=c.max_piece).min(rest.len());
        if sock.write_all(&rest[..n]).await.is_err() || sock.flush().await.is_err() {
            break;
        }
        written += n;
        rest = &rest[n..];
    }
    let _ = sock.shutdown().await;
}

pub async fn serve(responses: Vec<Canned>, seed: u64) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let queue = Arc::new(Mutex::new(
        responses
            .into_iter()
            .collect::<std::collections::VecDeque<_>>(),
    ));
    let routes: Arc<Mutex<Routes>> = Arc::new(Mutex::new(Vec::new()));
    let turns: Arc<Mutex<Vec<Canned>>> = Arc::default();
    let caches = Arc::new(Mutex::new(std::collections::HashMap::new()));
    let (rec, q, r, t, made) = (
        requests.clone(),
        queue.clone(),
        routes.clone(),
        turns.clone(),
        caches.clone(),
    );
    tokio::spawn(async move {
        let mut rng = StdRng::seed_from_u64(seed);
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let Some(mut req) = read_request(&mut sock).await else {
                continue;
            };
            if req.method == "POST" && req.path.ends_with("/cachedContents") {
                // Gemini's cache store answers on its own, without using up a response.
                let canned = gemini_cache_create(&made, &mut req);
                rec.lock().unwrap().push(req);
                tokio::spawn(respond(sock, Some(canned), 0));
                continue;
            }
            let system = req.system_text();
            // The turn a request is at: how many tool results it carries.
            let results = req.body["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            let withdrawn = tools_withdrawn(&req.path, &req.body);
            let refused = validate::protocol_of(&req.path)
                .and_then(|protocol| {
                    validate::check(protocol, &req.body)
                        .err()
                        .map(|m| (protocol, m.0))
                })
                .or_else(|| {
                    validate::images(&req.path, &req.body)
                        .and_then(|()| validate::audio(&req.path, &req.body, &req.raw))
                        .and_then(|()| validate::image_edits(&req.path, &req.raw))
                        .err()
                        .map(|m| (crate::Protocol::OpenaiChat, m.0))
                })
                .or_else(|| {
                    validate::videos(&req.path, &req.body)
                        .err()
                        .map(|m| (crate::Protocol::Gemini, m.0))
                });
            req.refused = refused.as_ref().map(|(_, m)| m.clone());
            let unknown_cache = req.body["cachedContent"]
                .as_str()
                .filter(|name| !made.lock().unwrap().contains_key(*name))
                .map(str::to_owned);
            if refused.is_none()
                && let Some(name) = unknown_cache
            {
                let message = "CachedContent not found (or permission denied)";
                eprintln!("scripted provider: refused a request naming {name}: {message}");
                req.refused = Some(message.to_owned());
                rec.lock().unwrap().push(req);
                let body = serde_json::json!({"error": {"code": 403, "message": message, "status": "PERMISSION_DENIED"}});
                tokio::spawn(respond(sock, Some(Canned::json(403, &body)), 0));
                continue;
            }
            rec.lock().unwrap().push(req);
            if let Some((protocol, message)) = refused {
                eprintln!("scripted provider: refused {protocol:?} request: {message}");
                // As the provider would: the request is refused and no response is used up.
                let canned = Canned::json(400, &validate::refusal(protocol, &message));
                tokio::spawn(respond(sock, Some(canned), 0));
                continue;
            }
            let routed = r
                .lock()
                .unwrap()
                .iter_mut()
                .find(|(marker, left)| {
                    let hit = if marker == WITHDRAWN {
                        withdrawn
                    } else {
                        system.contains(marker.as_str())
                    };
                    hit && !left.is_empty()
                })
                .and_then(|(_, left)| left.pop_front());
            let canned = routed
                .or_else(|| t.lock().unwrap().get(results).cloned())
                .or_else(|| q.lock().unwrap().pop_front());
            let piece_seed: u64 = rng.random();
            // Each connection is answered on its own task: a stalled stream must not hold up
            // the next request.
            tokio::spawn(respond(sock, canned, piece_seed));
        }
    });
    Server {
        base,
        requests,
        queue,
        routes,
        turns,
        caches,
    }
}

/// Gemini's `cachedContents.create`: the resource, or its 400 (recorded as refused).
fn gemini_cache_create(
    made: &Mutex<std::collections::HashMap<String, String>>,
    req: &mut Recorded,
) -> Canned {
    match validate::gemini_cache(&req.body) {
        Ok(tokens) => {
            let mut made = made.lock().unwrap();
            let name = format!("cachedContents/rein-test-{}", made.len() + 1);
            let model = req.body["model"].as_str().unwrap_or_default().to_owned();
            made.insert(name.clone(), model.clone());
            Canned::json(
                200,
                &serde_json::json!({
                    "name": name,
                    "model": model,
                    "createTime": "2026-12-04T00:00:00.000000Z",
                    "updateTime": "2026-12-04T00:00:00.000000Z",
                    "expireTime": "2026-12-04T00:05:00.000000Z",
                    "usageMetadata": {"totalTokenCount": tokens}
                }),
            )
        }
        Err(refusal) => {
            req.refused = Some(refusal.0.clone());
            Canned::json(400, &validate::refusal(crate::Protocol::Gemini, &refusal.0))
        }
    }
}
