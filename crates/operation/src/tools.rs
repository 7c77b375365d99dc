//! The tool host: executes tool calls for the engine and makes every execution durable.
//!
//! Before a tool with side effects runs, its execution is recorded `running`; right after, its
//! result is recorded `succeeded`/`failed`. When a step is re-run after a crash, a succeeded
//! call returns its stored result (never runs twice); a call found `running` is re-run if its
//! tool is pure or idempotent (with the same idempotency key), and otherwise settled as
//! interrupted with a result the model can read.

use crate::calculator;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput, ToolPort};
use rein_core::tool::ToolManifest;
use rein_core::{AgentState, ToolCall};
use rein_store::{Effect, ExecStatus, Store, ToolExecution};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A tool implementation.
pub trait Tool: Send + Sync {
    /// Its manifest.
    fn manifest(&self) -> ToolManifest;
    /// How repeating `api` behaves.
    fn effect(&self, api: &str) -> Effect;
    /// Run `api` with parsed `args`; `idempotency_key` is stable across re-runs of one call.
    fn call<'a>(
        &'a self,
        api: &'a str,
        args: serde_json::Value,
        idempotency_key: &'a str,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>>;
}

/// The built-in calculator tool.
pub struct Calculator;

impl Tool for Calculator {
    fn manifest(&self) -> ToolManifest {
        calculator::manifest()
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::Pure
    }

    fn call<'a>(
        &'a self,
        _api: &'a str,
        args: serde_json::Value,
        _key: &'a str,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let Some(expr) = args.get("expression").and_then(|e| e.as_str()) else {
                return Ok(ToolOutput::failed(
                    "Missing required argument `expression` (a string such as \"2 * (3 + 4)\").",
                ));
            };
            Ok(match calculator::evaluate(expr) {
                Ok(v) => ToolOutput::ok(calculator::format(v)),
                Err(e) => ToolOutput::failed(format!("Cannot evaluate `{expr}`: {e}")),
            })
        }
        .boxed()
    }
}

/// Tools by identifier, executing through the store.
pub struct ToolHost {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    store: Arc<dyn Store>,
    finished: Mutex<Vec<ToolExecution>>,
}

impl ToolHost {
    /// A host with the built-in tools.
    pub fn new(store: Arc<dyn Store>) -> Self {
        let mut host = Self {
            tools: BTreeMap::new(),
            store,
            finished: Mutex::new(Vec::new()),
        };
        host.register(Arc::new(Calculator));
        host
    }

    /// Add a tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.manifest().identifier, tool);
    }

    /// Manifests of every tool.
    pub fn manifests(&self) -> Vec<ToolManifest> {
        self.tools.values().map(|t| t.manifest()).collect()
    }

    /// Executions finished since the last call (they go into the step's commit).
    pub fn take_finished(&self) -> Vec<ToolExecution> {
        std::mem::take(&mut *self.finished.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn finish(&self, exec: ToolExecution) {
        self.finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(exec);
    }
}

fn store_err(e: rein_store::StoreError) -> PortError {
    PortError::new("store_error", e.to_string())
}

impl ToolPort for ToolHost {
    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let Some(tool) = self.tools.get(&*call.identifier) else {
                return Ok(ToolOutput::failed(format!("Tool `{}` is not installed.", call.identifier)));
            };
            let op = state.operation_id;
            let effect = tool.effect(&call.api);
            let key = format!("{op}:{}", call.id);
            let mut exec = ToolExecution {
                operation_id: op,
                tool_call_id: call.id.to_string(),
                step_index: u64::from(state.step_count),
                tool: call.key(),
                effect,
                status: ExecStatus::Running,
                result: None,
            };
            if let Some(prior) = self.store.tool_execution(op, &call.id).await.map_err(store_err)? {
                match (prior.status, prior.effect) {
                    (ExecStatus::Succeeded | ExecStatus::Failed, _) => {
                        // Finished before a crash: report the same result, never run again.
                        let ok = prior.status == ExecStatus::Succeeded;
                        let content = prior.result.clone().unwrap_or_default();
                        self.finish(prior);
                        return Ok(if ok { ToolOutput::ok(content) } else { ToolOutput::failed(content) });
                    }
                    (ExecStatus::Running, Effect::AtMostOnce) | (ExecStatus::Interrupted, _) => {
                        let content = format!(
                            "The call to `{}` was interrupted (the process stopped while it ran); it may or may not have taken effect, and it was not repeated. Check before trying again.",
                            call.key()
                        );
                        exec.status = ExecStatus::Interrupted;
                        exec.result = Some(content.clone());
                        self.store.record_tool_execution(&exec).await.map_err(store_err)?;
                        self.finish(exec);
                        return Ok(ToolOutput::failed(content));
                    }
                    _ => {}
                }
            }
            if effect != Effect::Pure {
                self.store.record_tool_execution(&exec).await.map_err(store_err)?;
            }
            crate::driver::pause_point(&format!("tool:{}", call.id)).await;
            let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
            let out = match tool.call(&call.api, args, &key).await {
                Ok(out) => out,
                Err(e) => ToolOutput::failed(format!("Tool `{}` failed: {}", call.key(), e.message)),
            };
            exec.status = if out.success { ExecStatus::Succeeded } else { ExecStatus::Failed };
            exec.result = Some(out.content.clone());
            if effect != Effect::Pure {
                self.store.record_tool_execution(&exec).await.map_err(store_err)?;
            }
            self.finish(exec);
            Ok(out)
        }
        .boxed()
    }
}
