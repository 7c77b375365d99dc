//! [`ModelProvider`]: the interface the agent loop calls, and [`Provider`], its one
//! implementation over any [`Protocol`] and [`Transport`], with retries, cancellation, hooks
//! and capability checks.

use crate::catalog::{Capabilities, Catalog, check_capabilities};
use crate::error::{ErrorKind, ModelError};
use crate::event::ModelEvent;
use crate::framing::Decoder;
use crate::hooks::{Hooks, NoHooks, soft};
use crate::protocol::Protocol;
use crate::registry::ProviderConfig;
use crate::request::{ChatRequest, ResponseFormat, ToolChoice, ToolSpec};
use crate::response::{Collector, ModelResponse};
use crate::transport::{HttpCall, HttpResponse, Method, RetryPolicy, Transport};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// A stream of normalized events.
pub type EventStream = BoxStream<'static, ModelEvent>;

/// One model provider.
pub trait ModelProvider: Send + Sync {
    /// Provider id.
    fn id(&self) -> &str;
    /// Stream a chat response. The stream always ends with `Stop` or `Error`.
    fn chat(&self, request: ChatRequest) -> EventStream;
    /// A chat response without streaming.
    fn complete(&self, request: ChatRequest) -> BoxFuture<'static, ModelResponse>;
    /// A JSON value matching `schema`: native structured output where the protocol has it,
    /// otherwise a forced tool call whose arguments are the value.
    fn generate_object(
        &self,
        request: ChatRequest,
        name: &str,
        schema: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>>;
    /// Embeddings of `inputs`.
    fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>>;
    /// Model ids the provider serves.
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>>;
    /// `source` changed as `request.prompt` says (a provider without image editing refuses).
    fn edit_images(
        &self,
        request: crate::images::ImageRequest,
        source: crate::images::SourceImage,
    ) -> BoxFuture<'static, Result<crate::images::GeneratedImages, ModelError>> {
        let _ = (request, source);
        unsupported("this provider does not edit images")
    }
    /// `request` spoken (a provider without a speech endpoint refuses).
    fn speak(
        &self,
        request: crate::audio::SpeechRequest,
    ) -> BoxFuture<'static, Result<crate::audio::Speech, ModelError>> {
        let _ = request;
        unsupported("this provider does not speak")
    }
    /// `request`'s audio written down (a provider without a transcription endpoint refuses).
    fn transcribe(
        &self,
        request: crate::audio::TranscriptionRequest,
    ) -> BoxFuture<'static, Result<crate::audio::Transcript, ModelError>> {
        let _ = request;
        unsupported("this provider does not transcribe")
    }
    /// Images drawn for `request` (a provider without image output refuses).
    fn generate_images(
        &self,
        request: crate::images::ImageRequest,
    ) -> BoxFuture<'static, Result<crate::images::GeneratedImages, ModelError>> {
        let _ = request;
        unsupported("this provider does not generate images")
    }
    /// Start rendering `request`; the job's name, to poll (a provider without video refuses).
    fn submit_video(
        &self,
        request: crate::video::VideoRequest,
    ) -> BoxFuture<'static, Result<String, ModelError>> {
        let _ = request;
        unsupported("this provider does not generate videos")
    }
    /// Where the render `job` stands.
    fn video_progress(
        &self,
        job: String,
    ) -> BoxFuture<'static, Result<crate::video::VideoProgress, ModelError>> {
        let _ = job;
        unsupported("this provider does not generate videos")
    }
    /// The bytes of a finished video at `address` (from [`crate::video::VideoProgress::Done`]).
    fn download_video(&self, address: String) -> BoxFuture<'static, Result<Vec<u8>, ModelError>> {
        let _ = address;
        unsupported("this provider does not generate videos")
    }
}

/// The images of an image call's `answer`, or why there are none (the model's words when it
/// answered only with text).
fn drawn(
    wire: &dyn crate::protocol::wire::Wire,
    answer: &Value,
) -> Result<crate::images::GeneratedImages, ModelError> {
    match wire.images(answer) {
        Some(images) if !images.images.is_empty() => Ok(images),
        Some(images) => Err(ModelError::new(
            ErrorKind::MalformedStream,
            format!(
                "the model drew no image{}",
                images
                    .text
                    .map(|t| format!(" (it said: {t})"))
                    .unwrap_or_default()
            ),
        )),
        None => Err(ModelError::new(
            ErrorKind::MalformedStream,
            "the image response has an unexpected shape",
        )),
    }
}

/// The answer of a provider that does not do what was asked: `Unsupported`, saying `what`.
fn unsupported<T: Send + 'static>(what: &'static str) -> BoxFuture<'static, Result<T, ModelError>> {
    Box::pin(async move { Err(ModelError::new(ErrorKind::Unsupported, what)) })
}

struct Inner {
    config: ProviderConfig,
    transport: Arc<dyn Transport>,
    retry: RetryPolicy,
    hooks: Arc<dyn Hooks>,
    catalog: Option<Arc<Catalog>>,
    /// Gemini's explicit context caches this provider made (the `context_cache_min_tokens`
    /// quirk).
    context_caches: crate::context_cache::ContextCaches,
}

/// A provider over a protocol and a transport.
#[derive(Clone)]
pub struct Provider {
    inner: Arc<Inner>,
}

impl Provider {
    /// A provider for `config` sending through `transport`.
    pub fn new(config: ProviderConfig, transport: Arc<dyn Transport>) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                transport,
                retry: RetryPolicy::default(),
                hooks: Arc::new(NoHooks),
                catalog: None,
                context_caches: Default::default(),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            f(inner);
        }
        self
    }

    /// Builder: retry policy.
    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        self.edit(|i| i.retry = retry)
    }

    /// Builder: hooks.
    pub fn with_hooks(self, hooks: Arc<dyn Hooks>) -> Self {
        self.edit(|i| i.hooks = hooks)
    }

    /// Builder: catalog used for capability checks.
    pub fn with_catalog(self, catalog: Arc<Catalog>) -> Self {
        self.edit(|i| i.catalog = Some(catalog))
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.inner.config
    }
}

impl Inner {
    fn headers(&self) -> Vec<(String, String)> {
        let c = &self.config;
        let mut h = vec![("content-type".to_owned(), "application/json".to_owned())];
        let wire = c.protocol.wire();
        if let Some(key) = &c.api_key {
            match c.quirks.auth_header.as_deref() {
                Some(name) => h.push((name.to_owned(), key.clone())),
                None => {
                    let (name, value) = wire.auth_header(key);
                    h.push((name.to_owned(), value));
                }
            }
        }
        h.extend(
            wire.fixed_headers()
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        h.extend(c.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        h
    }

    /// Build the wire call, applying the provider's quirks.
    fn call(&self, req: &ChatRequest, stream: bool) -> HttpCall {
        let wire = self.config.protocol.build(req, stream);
        let mut body = wire.body;
        let q = &self.config.quirks;
        if let (Some(field), Some(obj)) = (&q.max_tokens_field, body.as_object_mut())
            && let Some(v) = obj.remove("max_tokens")
        {
            obj.insert(field.clone(), v);
        }
        if q.stream_options == Some(false)
            && let Some(obj) = body.as_object_mut()
        {
            obj.remove("stream_options");
        }
        if q.prompt_cache_key == Some(true)
            && let Some(key) = req.prompt_cache.as_ref().and_then(|c| c.key.as_ref())
            && let Some(obj) = body.as_object_mut()
        {
            obj.insert(
                "prompt_cache_key".into(),
                serde_json::Value::String(key.clone()),
            );
        }
        let path = match &q.api_version {
            // Azure's deployment scheme: the deployment is in the path, not the body.
            Some(v) => {
                if let Some(obj) = body.as_object_mut() {
                    obj.remove("model");
                }
                format!(
                    "/openai/deployments/{}{}?api-version={v}",
                    req.model, wire.path
                )
            }
            None => wire.path,
        };
        HttpCall {
            method: Method::Post,
            base_url: self.config.base_url.clone(),
            path,
            headers: self.headers(),
            body,
            raw: None,
        }
    }

    /// With the `context_cache_min_tokens` quirk, make Gemini call `call` name an explicit
    /// cache of its system instruction and tools (see [`crate::context_cache`]); `None` when
    /// it is sent whole. Only calls that ask for prompt caching (not cassette runs).
    async fn name_context_cache(
        &self,
        req: &ChatRequest,
        call: &mut HttpCall,
    ) -> Option<crate::context_cache::Named> {
        let min_tokens = self.config.quirks.context_cache_min_tokens?;
        let asked = req.prompt_cache.as_ref()?;
        if self.config.protocol != Protocol::Gemini {
            return None;
        }
        let setup = crate::context_cache::Setup {
            model: &req.model,
            min_tokens,
            ttl: Duration::from_secs(if asked.long_ttl { 3600 } else { 300 }),
        };
        self.context_caches
            .prepare(&setup, call, |create| async move {
                let made = self.json(create).await?;
                crate::context_cache::created_name(&made).ok_or_else(|| {
                    ModelError::new(
                        ErrorKind::MalformedStream,
                        "the cachedContents response has no name",
                    )
                })
            })
            .await
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        let mut caps = self
            .catalog
            .as_ref()
            .and_then(|c| c.lookup(&self.config.id, model))
            .map_or(Capabilities::ASSUMED, |m| m.capabilities);
        if self.config.quirks.tools == Some(false) {
            caps.tools = false;
        }
        caps
    }
}

/// How one attempt ended.
enum Attempt {
    Done,
    /// Failed; `produced` says whether content already reached the caller (no retry then).
    Failed {
        error: ModelError,
        produced: bool,
    },
}

fn is_content(e: &ModelEvent) -> bool {
    matches!(
        e,
        ModelEvent::TextDelta { .. }
            | ModelEvent::ReasoningDelta { .. }
            | ModelEvent::RefusalDelta { .. }
            | ModelEvent::ToolCallStart { .. }
            | ModelEvent::ToolCallDelta { .. }
    )
}

/// Read a whole (error or non-streamed) body, up to 4 MiB.
async fn read_all(resp: &mut HttpResponse) -> Result<Vec<u8>, ModelError> {
    let mut body = Vec::new();
    while let Some(piece) = resp.body.next().await {
        body.extend_from_slice(&piece?);
        if body.len() > 4 << 20 {
            break;
        }
    }
    Ok(body)
}

/// Sends events to the caller; `false` once the caller has gone away.
struct Sink<'a> {
    tx: &'a mpsc::Sender<ModelEvent>,
    collector: &'a mut Collector,
}

impl Sink<'_> {
    async fn send(&mut self, e: ModelEvent) -> bool {
        self.collector.push(&e);
        self.tx.send(e).await.is_ok()
    }
}

impl Inner {
    async fn attempt(
        &self,
        call: &HttpCall,
        req: &ChatRequest,
        stream: bool,
        mut keys: Option<&mut crate::protocol::keys::KeyMap>,
        sink: &mut Sink<'_>,
    ) -> Attempt {
        // Arguments of tools whose parameter names were renamed for the wire go back to the
        // names the tool declared before anything else sees them.
        let mut declared = |events: Vec<ModelEvent>| match keys.as_mut() {
            Some(k) => k.incoming(events),
            None => events,
        };
        let cancel = &req.cancel;
        let sent = tokio::select! {
            r = self.transport.send(call.clone()) => r,
            () = cancel.cancelled() => return Attempt::Failed { error: cancelled(), produced: false },
        };
        let mut resp = match sent {
            Ok(r) => r,
            Err(error) => {
                return Attempt::Failed {
                    error,
                    produced: false,
                };
            }
        };
        let protocol = self.config.protocol;
        if !(200..300).contains(&resp.status) {
            let body = read_all(&mut resp).await.unwrap_or_default();
            let error = protocol.http_error(resp.status, &resp.headers, &body);
            return Attempt::Failed {
                error: where_not_found(error, resp.status, protocol, call),
                produced: false,
            };
        }
        let mut produced = false;
        if !stream {
            let body = match read_all(&mut resp).await {
                Ok(b) => b,
                Err(error) => return Attempt::Failed { error, produced },
            };
            let mut failure = None;
            if !Self::forward(
                declared(protocol.parse_body(&body)),
                sink,
                &mut produced,
                &mut failure,
            )
            .await
            {
                return Attempt::Failed {
                    error: cancelled(),
                    produced,
                };
            }
            return match failure {
                Some(error) => Attempt::Failed { error, produced },
                None => Attempt::Done,
            };
        }
        let mut decoder = Decoder::new(protocol.framing());
        let mut parser = protocol.parser();
        let mut events = Vec::new();
        let mut failure: Option<ModelError> = None;
        loop {
            let piece = tokio::select! {
                p = resp.body.next() => p,
                () = cancel.cancelled() => return Attempt::Failed { error: cancelled(), produced },
            };
            let mut on_frame = |f: crate::framing::Frame<'_>| parser.frame(f, &mut events);
            let (broken, ended) = match piece {
                Some(Ok(bytes)) => {
                    decoder.push(&bytes, &mut on_frame);
                    (None, false)
                }
                Some(Err(error)) => (Some(error), true),
                None => {
                    decoder.finish(&mut on_frame);
                    (None, true)
                }
            };
            if ended && broken.is_none() {
                parser.finish(&mut events);
            }
            // Everything received before a failure reaches the caller first.
            if !Self::forward(
                declared(std::mem::take(&mut events)),
                sink,
                &mut produced,
                &mut failure,
            )
            .await
            {
                return Attempt::Failed {
                    error: cancelled(),
                    produced,
                };
            }
            if let Some(error) = broken {
                return Attempt::Failed {
                    error: failure.unwrap_or(error),
                    produced,
                };
            }
            if ended {
                return match failure {
                    Some(error) => Attempt::Failed { error, produced },
                    None => Attempt::Done,
                };
            }
        }
    }

    /// Send events to the caller. The first error is kept in `failure` instead of sent (the
    /// caller decides whether to retry or report it); after it only the stop and usage still
    /// pass, so a provider's closing frame (`response.failed`) is not lost. `false` when the
    /// caller has gone away.
    async fn forward(
        events: Vec<ModelEvent>,
        sink: &mut Sink<'_>,
        produced: &mut bool,
        failure: &mut Option<ModelError>,
    ) -> bool {
        for e in events {
            match e {
                ModelEvent::Error { error } => {
                    failure.get_or_insert(error);
                    continue;
                }
                ModelEvent::Stop { .. } | ModelEvent::Usage { .. } | ModelEvent::Cost { .. } => {}
                _ if failure.is_some() => continue,
                _ => {}
            }
            *produced |= is_content(&e);
            if !sink.send(e).await {
                return false;
            }
        }
        true
    }

    async fn run(
        self: Arc<Self>,
        mut req: ChatRequest,
        stream: bool,
        tx: mpsc::Sender<ModelEvent>,
    ) -> ModelResponse {
        let mut collector = Collector::new();
        let fail = |error: ModelError| ModelEvent::Error { error };
        if let Err(reason) = self.hooks.before_call(&req) {
            let error =
                ModelError::new(ErrorKind::Vetoed, format!("the call was vetoed: {reason}"));
            soft("on_error", self.hooks.on_error(&error));
            let e = fail(error);
            collector.push(&e);
            let _ = tx.send(e).await;
            return collector.finish();
        }
        let model_id = format!("{}/{}", self.config.id, req.model);
        let caps = self.capabilities(&req.model);
        if let Err(error) = check_capabilities(&mut req, &model_id, &caps) {
            soft("on_error", self.hooks.on_error(&error));
            let e = fail(error);
            collector.push(&e);
            let _ = tx.send(e).await;
            return collector.finish();
        }
        let mut keys = crate::protocol::keys::KeyMap::of(self.config.protocol, &req);
        let mut call = match &keys {
            Some(k) => self.call(&k.outgoing(&req), stream),
            None => self.call(&req, stream),
        };
        let whole = call.clone();
        let mut named = self.name_context_cache(&req, &mut call).await;
        let policy = self.retry;
        let mut waited = std::time::Duration::ZERO;
        let mut attempt = 1;
        loop {
            let outcome = {
                let mut sink = Sink {
                    tx: &tx,
                    collector: &mut collector,
                };
                if let Some(k) = keys.as_mut() {
                    k.restart();
                }
                self.attempt(&call, &req, stream, keys.as_mut(), &mut sink)
                    .await
            };
            let outcome = match outcome {
                // A stop with nothing in it is a failed call, not an answer.
                Attempt::Done if collector_is_empty(&collector) => Attempt::Failed {
                    error: ModelError::new(
                        ErrorKind::EmptyCompletion,
                        "the model returned an empty completion",
                    ),
                    produced: false,
                },
                other => other,
            };
            let error = match outcome {
                Attempt::Done => break,
                // Gemini no longer knows the cache the call named (it expired or was deleted
                // early): send the call whole, as one more try of the same attempt.
                Attempt::Failed {
                    error,
                    produced: false,
                } if named.is_some() && matches!(error.http_status, Some(403 | 404)) => {
                    tracing::warn!(error = %error, "Gemini's context cache is gone; sending the prefix whole");
                    if let Some(n) = named.take() {
                        self.context_caches.forget(n);
                    }
                    call = whole.clone();
                    continue;
                }
                Attempt::Failed { error, produced } => {
                    let delay = policy.delay(attempt + 1, error.retry_after_ms);
                    let can_retry = error.retryable
                        && !produced
                        && attempt < policy.max_attempts
                        && waited + delay <= policy.max_total_delay;
                    if !can_retry {
                        Some(error)
                    } else {
                        attempt += 1;
                        waited += delay;
                        let retry = ModelEvent::Retry {
                            attempt,
                            max_attempts: policy.max_attempts,
                            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                            error,
                        };
                        collector.push(&retry);
                        if tx.send(retry).await.is_err() {
                            return collector.finish();
                        }
                        tokio::select! {
                            () = tokio::time::sleep(delay) => None,
                            () = req.cancel.cancelled() => Some(cancelled()),
                        }
                    }
                }
            };
            if let Some(error) = error {
                soft("on_error", self.hooks.on_error(&error));
                let e = fail(error);
                collector.push(&e);
                let _ = tx.send(e).await;
                return collector.finish();
            }
        }
        let response = collector.finish();
        if let Some(u) = &response.usage {
            soft("on_usage", self.hooks.on_usage(u));
        }
        soft("on_completion", self.hooks.on_completion(&response));
        response
    }
}

fn collector_is_empty(c: &Collector) -> bool {
    let r = c.peek();
    r.text.is_empty()
        && r.tool_calls_pending == 0
        && r.refusal.is_none()
        && r.reasoning.is_none()
        && r.stop_reason != Some(crate::event::StopReason::MaxTokens)
        && r.stop_reason != Some(crate::event::StopReason::ContentFilter)
}

fn cancelled() -> ModelError {
    let mut e = ModelError::new(ErrorKind::Cancelled, "the call was cancelled");
    e.retryable = false;
    e
}

fn channel_stream(rx: mpsc::Receiver<ModelEvent>) -> EventStream {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }).boxed()
}

impl ModelProvider for Provider {
    fn id(&self) -> &str {
        &self.inner.config.id
    }

    fn chat(&self, request: ChatRequest) -> EventStream {
        let (tx, rx) = mpsc::channel(256);
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            inner.run(request, true, tx).await;
        });
        channel_stream(rx)
    }

    fn complete(&self, request: ChatRequest) -> BoxFuture<'static, ModelResponse> {
        let inner = Arc::clone(&self.inner);
        async move {
            let (tx, mut rx) = mpsc::channel(256);
            let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
            let response = inner.run(request, false, tx).await;
            let _ = drain.await;
            response
        }
        .boxed()
    }

    fn generate_object(
        &self,
        mut request: ChatRequest,
        name: &str,
        schema: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>> {
        let provider = self.clone();
        let name = name.to_owned();
        async move {
            let caps = provider.inner.capabilities(&request.model);
            let native = caps.structured_output
                && provider
                    .inner
                    .config
                    .protocol
                    .wire()
                    .native_structured_output();
            if native {
                request.response_format = ResponseFormat::JsonSchema {
                    name: name.clone(),
                    schema,
                    strict: true,
                };
                let r = provider.complete(request).await;
                if let Some(e) = r.error {
                    return Err(e);
                }
                serde_json::from_str(r.text.trim()).map_err(|e| {
                    ModelError::new(
                        ErrorKind::MalformedStream,
                        format!("the model's structured output is not JSON: {e}"),
                    )
                })
            } else {
                request.tools = vec![ToolSpec {
                    name: name.clone(),
                    description: format!("Return the {name} object."),
                    parameters: schema,
                }];
                request.tool_choice = ToolChoice::Tool(name.clone());
                let r = provider.complete(request).await;
                if let Some(e) = r.error {
                    return Err(e);
                }
                let call = r
                    .tool_calls
                    .into_iter()
                    .find(|c| c.name == name)
                    .ok_or_else(|| {
                        ModelError::new(
                            ErrorKind::EmptyCompletion,
                            format!("the model did not call `{name}` to return the object"),
                        )
                    })?;
                call.arguments.ok_or_else(|| {
                    ModelError::new(
                        ErrorKind::MalformedStream,
                        call.arguments_error
                            .unwrap_or_else(|| "no arguments".into()),
                    )
                })
            }
        }
        .boxed()
    }

    fn edit_images(
        &self,
        request: crate::images::ImageRequest,
        source: crate::images::SourceImage,
    ) -> BoxFuture<'static, Result<crate::images::GeneratedImages, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            let protocol = inner.config.protocol;
            let (call, wire) = match protocol {
                Protocol::OpenaiChat | Protocol::OpenaiResponses => {
                    let fields = crate::images::openai_edit_fields(&request);
                    let fields: Vec<(&str, &str)> =
                        fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    let (kind, form) = crate::audio::multipart(
                        &fields,
                        ("image", &source.name, &source.media_type, &source.bytes),
                    );
                    let mut headers = inner.headers();
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
                    headers.push(("content-type".into(), kind));
                    let call = HttpCall {
                        method: Method::Post,
                        base_url: inner.config.base_url.clone(),
                        path: "/images/edits".into(),
                        headers,
                        body: Value::Null,
                        raw: Some(form.into()),
                    };
                    (call, protocol.wire())
                }
                Protocol::Gemini => {
                    let w = crate::images::gemini_edit_request(&request, &source);
                    let call = HttpCall {
                        method: Method::Post,
                        base_url: inner.config.base_url.clone(),
                        path: w.path,
                        headers: inner.headers(),
                        body: w.body,
                        raw: None,
                    };
                    (call, protocol.wire())
                }
                Protocol::Anthropic | Protocol::Ollama => {
                    return Err(ModelError::new(
                        ErrorKind::Unsupported,
                        format!("{} has no image editing endpoint", inner.config.id),
                    ));
                }
            };
            drawn(wire, &inner.json(call).await?)
        }
        .boxed()
    }

    fn speak(
        &self,
        request: crate::audio::SpeechRequest,
    ) -> BoxFuture<'static, Result<crate::audio::Speech, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            inner.audio_endpoint("speech")?;
            let format = request.format.clone().unwrap_or_else(|| "mp3".into());
            let call = HttpCall {
                method: Method::Post,
                base_url: inner.config.base_url.clone(),
                path: "/audio/speech".into(),
                headers: inner.headers(),
                body: crate::audio::speech_body(&request),
                raw: None,
            };
            let bytes = inner.bytes(call).await?;
            Ok(crate::audio::Speech {
                media_type: crate::audio::format_media_type(&format).to_owned(),
                bytes,
            })
        }
        .boxed()
    }

    fn transcribe(
        &self,
        request: crate::audio::TranscriptionRequest,
    ) -> BoxFuture<'static, Result<crate::audio::Transcript, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            inner.audio_endpoint("transcription")?;
            let mut fields = vec![
                ("model", request.model.as_str()),
                ("response_format", "json"),
            ];
            if let Some(l) = &request.language {
                fields.push(("language", l.as_str()));
            }
            let (kind, form) = crate::audio::multipart(
                &fields,
                (
                    "file",
                    &request.file_name,
                    &request.media_type,
                    &request.bytes,
                ),
            );
            let mut headers = inner.headers();
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
            headers.push(("content-type".into(), kind));
            let call = HttpCall {
                method: Method::Post,
                base_url: inner.config.base_url.clone(),
                path: "/audio/transcriptions".into(),
                headers,
                body: serde_json::Value::Null,
                raw: Some(form.into()),
            };
            crate::audio::transcript(&inner.json(call).await?)
        }
        .boxed()
    }

    fn generate_images(
        &self,
        request: crate::images::ImageRequest,
    ) -> BoxFuture<'static, Result<crate::images::GeneratedImages, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            let wire = inner.config.protocol.wire();
            let Some(wire_request) = wire.image_generation(&request) else {
                return Err(ModelError::new(
                    ErrorKind::Unsupported,
                    format!("{} has no image generation endpoint", inner.config.id),
                ));
            };
            let call = HttpCall {
                method: Method::Post,
                base_url: inner.config.base_url.clone(),
                path: wire_request.path,
                headers: inner.headers(),
                body: wire_request.body,
                raw: None,
            };
            drawn(wire, &inner.json(call).await?)
        }
        .boxed()
    }

    fn submit_video(
        &self,
        request: crate::video::VideoRequest,
    ) -> BoxFuture<'static, Result<String, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            inner.video_endpoint()?;
            let wire = crate::video::gemini_request(&request);
            let call = HttpCall {
                method: Method::Post,
                base_url: inner.config.base_url.clone(),
                path: wire.path,
                headers: inner.headers(),
                body: wire.body,
                raw: None,
            };
            let answer = inner.json(call).await?;
            crate::video::gemini_job(&answer).ok_or_else(|| {
                ModelError::new(
                    ErrorKind::MalformedStream,
                    "the video answer names no operation to poll",
                )
            })
        }
        .boxed()
    }

    fn video_progress(
        &self,
        job: String,
    ) -> BoxFuture<'static, Result<crate::video::VideoProgress, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            inner.video_endpoint()?;
            let call = HttpCall {
                method: Method::Get,
                base_url: inner.config.base_url.clone(),
                path: format!("/{job}"),
                headers: inner.headers(),
                body: Value::Null,
                raw: None,
            };
            let answer = inner.json(call).await?;
            crate::video::gemini_progress(&answer).ok_or_else(|| {
                ModelError::new(
                    ErrorKind::MalformedStream,
                    "the video operation has an unexpected shape",
                )
            })
        }
        .boxed()
    }

    fn download_video(&self, address: String) -> BoxFuture<'static, Result<Vec<u8>, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            inner.video_endpoint()?;
            // The key goes only where the provider itself serves the file.
            let origin = |u: &str| -> Option<String> {
                let parsed = reqwest::Url::parse(u).ok()?;
                Some(parsed.origin().ascii_serialization())
            };
            let own = matches!(
                (origin(&address), origin(&inner.config.base_url)),
                (Some(a), Some(b)) if a == b
            );
            let headers = if own { inner.headers() } else { Vec::new() };
            let call = HttpCall {
                method: Method::Get,
                base_url: address,
                path: String::new(),
                headers,
                body: Value::Null,
                raw: None,
            };
            inner.bytes(call).await
        }
        .boxed()
    }

    fn embed(
        &self,
        model: &str,
        inputs: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>> {
        let inner = Arc::clone(&self.inner);
        let model = model.to_owned();
        async move {
            let wire = inner.config.protocol.wire();
            let Some(request) = wire.embeddings(&model, &inputs) else {
                return Err(ModelError::new(
                    ErrorKind::Unsupported,
                    format!("{} has no embeddings endpoint", inner.config.id),
                ));
            };
            let call = HttpCall {
                method: Method::Post,
                base_url: inner.config.base_url.clone(),
                path: request.path,
                headers: inner.headers(),
                body: request.body,
                raw: None,
            };
            let vectors = wire.vectors(&inner.json(call).await?);
            vectors.filter(|v| v.len() == inputs.len()).ok_or_else(|| {
                ModelError::new(
                    ErrorKind::MalformedStream,
                    "the embeddings response has an unexpected shape",
                )
            })
        }
        .boxed()
    }

    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        let inner = Arc::clone(&self.inner);
        async move {
            let path = inner.config.protocol.wire().models_path();
            let call = HttpCall {
                method: Method::Get,
                base_url: inner.config.base_url.clone(),
                path: path.into(),
                headers: inner.headers(),
                body: Value::Null,
                raw: None,
            };
            let v = inner.json(call).await?;
            let list = v
                .get("data")
                .or_else(|| v.get("models"))
                .and_then(|l| l.as_array())
                .cloned()
                .unwrap_or_default();
            Ok(list
                .iter()
                .filter_map(|m| {
                    m.get("id")
                        .or_else(|| m.get("name"))
                        .and_then(|x| x.as_str())
                })
                .map(|id| id.trim_start_matches("models/").to_owned())
                .collect())
        }
        .boxed()
    }
}

/// A 404 says which URL was called and the other base-URL form to try (with or without the
/// version segment): the usual cause is a base URL given in the other convention.
fn where_not_found(
    mut error: ModelError,
    status: u16,
    protocol: Protocol,
    call: &HttpCall,
) -> ModelError {
    if status == 404 {
        error.message = format!(
            "{} (at {}; if the base URL is wrong, try {})",
            error.message,
            call.url(),
            protocol.other_base_url(&call.base_url)
        );
    }
    error
}

impl Inner {
    /// Refuse a `what` call where the protocol has no OpenAI-compatible audio endpoints.
    fn audio_endpoint(&self, what: &str) -> Result<(), ModelError> {
        match self.config.protocol {
            crate::Protocol::OpenaiChat | crate::Protocol::OpenaiResponses => Ok(()),
            crate::Protocol::Anthropic | crate::Protocol::Gemini | crate::Protocol::Ollama => {
                Err(ModelError::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{} has no {what} endpoint (rein speaks and transcribes through OpenAI-compatible audio endpoints)",
                        self.config.id
                    ),
                ))
            }
        }
    }

    /// Refuses unless the protocol renders videos (Gemini's Veo).
    fn video_endpoint(&self) -> Result<(), ModelError> {
        match self.config.protocol {
            crate::Protocol::Gemini => Ok(()),
            crate::Protocol::OpenaiChat
            | crate::Protocol::OpenaiResponses
            | crate::Protocol::Anthropic
            | crate::Protocol::Ollama => Err(ModelError::new(
                ErrorKind::Unsupported,
                format!(
                    "{} has no video endpoint (rein renders videos with Gemini's Veo models)",
                    self.config.id
                ),
            )),
        }
    }

    /// The body of a successful call, at most 64 MiB (audio); an error answer read as the
    /// protocol's error.
    async fn bytes(&self, call: HttpCall) -> Result<Vec<u8>, ModelError> {
        const MAX: usize = 64 << 20;
        let mut resp = self.transport.send(call.clone()).await?;
        if !(200..300).contains(&resp.status) {
            let body = read_all(&mut resp).await?;
            let protocol = self.config.protocol;
            let error = protocol.http_error(resp.status, &resp.headers, &body);
            return Err(where_not_found(error, resp.status, protocol, &call));
        }
        let mut body = Vec::new();
        while let Some(piece) = resp.body.next().await {
            body.extend_from_slice(&piece?);
            if body.len() > MAX {
                return Err(ModelError::new(
                    ErrorKind::MalformedStream,
                    format!("the answer is over {} MiB", MAX >> 20),
                ));
            }
        }
        Ok(body)
    }

    async fn json(&self, call: HttpCall) -> Result<Value, ModelError> {
        let mut resp = self.transport.send(call.clone()).await?;
        let body = read_all(&mut resp).await?;
        if !(200..300).contains(&resp.status) {
            let protocol = self.config.protocol;
            let error = protocol.http_error(resp.status, &resp.headers, &body);
            return Err(where_not_found(error, resp.status, protocol, &call));
        }
        serde_json::from_slice(&body).map_err(|e| {
            ModelError::new(
                ErrorKind::MalformedStream,
                format!("response is not JSON: {e}"),
            )
        })
    }
}
