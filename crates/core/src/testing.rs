//! In-memory ports for tests, benchmarks and examples: a scripted model that replays canned
//! turns and records what it was asked, and tools backed by closures. Real hosts use the model
//! runtime and tool registry crates instead.

use crate::engine::ports::{
    LlmOutput, LlmPort, LlmProgress, LlmRequest, PortError, RawToolCall, ToolOutput, ToolPort,
};
use crate::event::StreamChunk;
use crate::message::ToolCall;
use crate::state::AgentState;
use crate::tool::{ToolApi, ToolKind, ToolManifest};
use crate::usage::{TokenUsage, Usd};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// One canned model turn.
#[derive(Clone, Debug)]
pub enum ScriptedTurn {
    /// Answer with text.
    Text(String),
    /// Ask for tools: `(call id, model-facing name, arguments)`.
    ToolCalls(Vec<(String, String, String)>),
    /// Fail the call.
    Fail(PortError),
}

impl ScriptedTurn {
    /// A text answer.
    pub fn text(t: impl Into<String>) -> Self {
        Self::Text(t.into())
    }

    /// One tool call.
    pub fn tool(id: impl Into<String>, name: impl Into<String>, args: impl Into<String>) -> Self {
        Self::ToolCalls(vec![(id.into(), name.into(), args.into())])
    }
}

/// What a scripted model saw on one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenRequest {
    /// Messages in the state.
    pub message_count: usize,
    /// Whether tools were withheld (step limit crossed).
    pub force_finish: bool,
}

/// A model that replays turns in order and streams their text in two chunks.
pub struct ScriptedLlm {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    seen: Mutex<Vec<SeenRequest>>,
    usage: TokenUsage,
    cost: Usd,
}

impl ScriptedLlm {
    /// A model that answers with `turns`, each call using `usage` tokens and costing `cost`.
    pub fn new(
        turns: impl IntoIterator<Item = ScriptedTurn>,
        usage: TokenUsage,
        cost: Usd,
    ) -> Self {
        Self {
            turns: Mutex::new(turns.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
            usage,
            cost,
        }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Turns not yet used.
    pub fn remaining(&self) -> usize {
        self.turns.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl LlmPort for ScriptedLlm {
    fn call<'a>(
        &'a self,
        request: LlmRequest<'a>,
        on_chunk: &'a (dyn Fn(LlmProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<LlmOutput, PortError>> {
        let turn = self
            .turns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(SeenRequest {
                message_count: request.state.messages.len(),
                force_finish: request.force_finish,
            });
        let (usage, cost) = (self.usage, self.cost);
        async move {
            let mut out = LlmOutput {
                usage,
                cost,
                elapsed_ms: 1,
                ..Default::default()
            };
            match turn {
                None => {
                    return Err(PortError::new(
                        crate::failure::Fault::ScriptExhausted,
                        "the scripted model has no turns left",
                    ));
                }
                Some(ScriptedTurn::Fail(e)) => return Err(e),
                Some(ScriptedTurn::Text(t)) => {
                    let mid = t
                        .char_indices()
                        .nth(t.chars().count() / 2)
                        .map_or(t.len(), |(i, _)| i);
                    for part in [&t[..mid], &t[mid..]] {
                        if !part.is_empty() {
                            on_chunk(LlmProgress::Chunk(StreamChunk::Text {
                                text: part.to_owned(),
                            }));
                        }
                    }
                    out.content = t;
                    out.stop_reason = Some("end_turn".into());
                }
                Some(ScriptedTurn::ToolCalls(calls)) => {
                    for (i, (id, name, args)) in calls.into_iter().enumerate() {
                        on_chunk(LlmProgress::Chunk(StreamChunk::ToolCall {
                            index: u32::try_from(i).unwrap_or(u32::MAX),
                            id: Some(id.clone()),
                            name: Some(name.clone()),
                            arguments: args.clone(),
                        }));
                        out.tool_calls.push(RawToolCall {
                            id,
                            name,
                            arguments: args,
                            thought_signature: None,
                        });
                    }
                    out.stop_reason = Some("tool_use".into());
                }
            }
            Ok(out)
        }
        .boxed()
    }
}

type ToolFn = Box<dyn Fn(&serde_json::Value) -> Result<ToolOutput, PortError> + Send + Sync>;

/// Tools backed by closures, keyed `identifier/api`.
#[derive(Default)]
pub struct FnTools {
    tools: HashMap<String, ToolFn>,
    calls: Mutex<Vec<String>>,
}

impl FnTools {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `identifier/api`.
    pub fn with(
        mut self,
        key: impl Into<String>,
        f: impl Fn(&serde_json::Value) -> Result<ToolOutput, PortError> + Send + Sync + 'static,
    ) -> Self {
        self.tools.insert(key.into(), Box::new(f));
        self
    }

    /// Keys of the calls made, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ToolPort for FnTools {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        _state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let key = call.key();
            self.calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(key.clone());
            let f = self.tools.get(&key).ok_or_else(|| {
                PortError::new(
                    crate::failure::Fault::ToolNotFound,
                    format!("no implementation for `{key}`"),
                )
            })?;
            let args = serde_json::from_str(&call.arguments).map_err(|e| {
                PortError::new(crate::failure::Fault::InvalidArguments, e.to_string())
            })?;
            f(&args)
        }
        .boxed()
    }
}

/// A manifest with one API per name, each taking any object.
pub fn manifest(identifier: &str, apis: &[&str]) -> ToolManifest {
    ToolManifest {
        identifier: identifier.into(),
        kind: ToolKind::Builtin,
        title: identifier.into(),
        description: String::new(),
        system_role: None,
        apis: apis
            .iter()
            .map(|a| ToolApi {
                name: (*a).into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
                intervention: None,
                cost: None,
            })
            .collect(),
        intervention: None,
    }
}
