//! An in-process provider for benchmarks: it asks for the calculator until `rounds` results
//! are in the conversation, then answers, each turn with the same small usage. No network, no
//! parsing: what is measured is what runs around the model.

use crate::provider::EventStream;
use crate::{ChatRequest, ModelError, ModelEvent, ModelProvider, ModelResponse, StopReason};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use rein_core::{Role, TokenUsage};
use serde_json::Value;

/// Asks for the calculator until `rounds` results are in, then answers.
pub struct ToolLoop {
    /// Calculator calls before the answer.
    pub rounds: usize,
}

fn turn(req: &ChatRequest, rounds: usize) -> Vec<ModelEvent> {
    let results = req.messages.iter().filter(|m| m.role == Role::Tool).count();
    let usage = ModelEvent::Usage {
        usage: TokenUsage {
            input: 200,
            output: 20,
            total: 220,
            ..Default::default()
        },
    };
    let mut out = vec![ModelEvent::Start {
        response_id: None,
        model: Some("loop".into()),
    }];
    if results < rounds {
        out.push(ModelEvent::ToolCallStart {
            index: 0,
            id: Some(format!("call_{results}")),
            name: "calculator__evaluate".into(),
            thought_signature: None,
        });
        out.push(ModelEvent::ToolCallDelta {
            index: 0,
            arguments: format!("{{\"expression\":\"6*7+{results}\"}}"),
        });
        out.push(ModelEvent::ToolCallEnd { index: 0 });
        out.push(usage);
        out.push(ModelEvent::Stop {
            reason: StopReason::ToolUse,
            raw: None,
        });
    } else {
        out.push(ModelEvent::TextDelta {
            text: "The answer is 42.".into(),
        });
        out.push(usage);
        out.push(ModelEvent::Stop {
            reason: StopReason::EndTurn,
            raw: None,
        });
    }
    out
}

impl ModelProvider for ToolLoop {
    fn id(&self) -> &str {
        "bench"
    }
    fn chat(&self, req: ChatRequest) -> EventStream {
        futures::stream::iter(turn(&req, self.rounds)).boxed()
    }
    fn complete(&self, req: ChatRequest) -> BoxFuture<'static, ModelResponse> {
        let events = turn(&req, self.rounds);
        async move { crate::collect(futures::stream::iter(events)).await }.boxed()
    }
    fn generate_object(
        &self,
        _: ChatRequest,
        _: &str,
        _: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>> {
        async {
            Err(ModelError::new(
                crate::ErrorKind::Unsupported,
                "bench model",
            ))
        }
        .boxed()
    }
    fn embed(
        &self,
        _: &str,
        _: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>> {
        async {
            Err(ModelError::new(
                crate::ErrorKind::Unsupported,
                "bench model",
            ))
        }
        .boxed()
    }
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        async { Ok(vec!["loop".into()]) }.boxed()
    }
}
