//! A model in the test process: each request answered with the events a function makes of it
//! (the same request, the same answer, so a call re-issued after a crash or a failed commit
//! gets the same answer), optionally after waiting for something (a simulation's gate).

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use rein_model::provider::EventStream;
use rein_model::{ChatRequest, ModelError, ModelEvent, ModelProvider, ModelResponse};
use serde_json::Value;
use std::sync::Arc;

/// What a request is answered with.
pub type Turn = Arc<dyn Fn(&ChatRequest) -> Vec<ModelEvent> + Send + Sync>;
/// What each answer waits for first.
pub type Before = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// The provider `openai` (model `gpt-4o-mini`), answering from [`Turn`].
pub struct InProcessModel {
    pub turn: Turn,
    pub before: Option<Before>,
}

impl InProcessModel {
    pub fn new(turn: impl Fn(&ChatRequest) -> Vec<ModelEvent> + Send + Sync + 'static) -> Self {
        Self {
            turn: Arc::new(turn),
            before: None,
        }
    }

    /// Each answer waits for `before()` first.
    pub fn waiting(
        mut self,
        before: impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Self {
        self.before = Some(Arc::new(before));
        self
    }

    fn wait(&self) -> BoxFuture<'static, ()> {
        match &self.before {
            Some(before) => before(),
            None => async {}.boxed(),
        }
    }
}

/// A whole answer: its start, `body`, 100 input and 10 output tokens, and its stop.
pub fn answer(body: Vec<ModelEvent>, reason: rein_model::StopReason) -> Vec<ModelEvent> {
    let mut out = vec![ModelEvent::Start {
        response_id: None,
        model: Some("script".into()),
    }];
    out.extend(body);
    out.push(ModelEvent::Usage {
        usage: rein_core::TokenUsage {
            input: 100,
            output: 10,
            total: 110,
            ..Default::default()
        },
    });
    out.push(ModelEvent::Stop { reason, raw: None });
    out
}

/// One streamed tool call of `name` (`identifier__api`) with `args`.
pub fn tool_call(id: &str, name: &str, args: &str) -> Vec<ModelEvent> {
    vec![
        ModelEvent::ToolCallStart {
            index: 0,
            id: Some(id.into()),
            name: name.into(),
            thought_signature: None,
        },
        ModelEvent::ToolCallDelta {
            index: 0,
            arguments: args.into(),
        },
        ModelEvent::ToolCallEnd { index: 0 },
    ]
}

fn unsupported<T: Send + 'static>() -> BoxFuture<'static, Result<T, ModelError>> {
    async {
        Err(ModelError::new(
            rein_model::ErrorKind::Unsupported,
            "in-process model",
        ))
    }
    .boxed()
}

impl ModelProvider for InProcessModel {
    fn id(&self) -> &str {
        "openai"
    }
    fn chat(&self, req: ChatRequest) -> EventStream {
        let (events, wait) = ((self.turn)(&req), self.wait());
        // A cancelled call ends as a real provider's does: with a `Cancelled` error.
        let cancel = req.cancel.clone();
        futures::stream::once(async move {
            tokio::select! {
                () = wait => futures::stream::iter(events).boxed(),
                () = cancel.cancelled() => {
                    let mut error = ModelError::new(rein_model::ErrorKind::Cancelled, "the call was cancelled");
                    error.retryable = false;
                    futures::stream::iter(vec![ModelEvent::Error { error }]).boxed()
                }
            }
        })
        .flatten()
        .boxed()
    }
    fn complete(&self, req: ChatRequest) -> BoxFuture<'static, ModelResponse> {
        let (events, wait) = ((self.turn)(&req), self.wait());
        async move {
            wait.await;
            rein_model::collect(futures::stream::iter(events)).await
        }
        .boxed()
    }
    fn generate_object(
        &self,
        _: ChatRequest,
        _: &str,
        _: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>> {
        unsupported()
    }
    fn embed(
        &self,
        _: &str,
        _: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>> {
        unsupported()
    }
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        async { Ok(vec!["gpt-4o-mini".into()]) }.boxed()
    }
}
