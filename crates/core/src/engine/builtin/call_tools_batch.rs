//! `call_tools_batch`: several calls through the `call_tool` executor that won precedence,
//! concurrently, merged in call order.

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::instruction::{CallToolPayload, CallToolsBatchPayload, Instruction, InstructionKind};
use crate::message::{Role, ToolCall, ToolStatus};
use crate::phase::{Phase, RuntimeContext, ToolsBatchResultPayload};
use crate::state::AgentState;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use std::collections::HashSet;
use std::sync::Arc;

use super::*;

/// `call_tools_batch`: every call runs through the `call_tool` executor that won precedence,
/// concurrently (bounded), each from the same base state; results merge in tool-call order,
/// deduplicated by id, with usage and cost merged as deltas.
pub struct CallToolsBatchExecutor;

impl PayloadExecutor for CallToolsBatchExecutor {
    type Payload = CallToolsBatchPayload;
    const KIND: InstructionKind = InstructionKind::CallToolsBatch;

    payload_of!(CallToolsBatch);

    fn run<'a>(
        &'a self,
        payload: CallToolsBatchPayload,
        base: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Some(exec) = cx.executor(InstructionKind::CallTool) else {
                return Err(ExecError::new(
                    crate::failure::Fault::ExecutorMissing,
                    "no executor found for instruction type call_tool (needed by call_tools_batch)",
                ));
            };
            let mut seen = HashSet::new();
            let calls: Vec<ToolCall> = payload
                .tool_calls
                .into_iter()
                .filter(|c| seen.insert(c.id.clone()))
                .collect();
            let parent = payload.parent_message_id;
            // Every call runs on its own copy of the base state; they never see each other.
            let mut copies: Vec<AgentState> = calls.iter().map(|_| base.clone()).collect();
            let outcomes: Vec<Result<ExecOutput, ExecError>> = {
                let mut runs: Vec<BoxFuture<'_, Result<ExecOutput, ExecError>>> =
                    Vec::with_capacity(calls.len());
                for (call, copy) in calls.iter().zip(copies.iter_mut()) {
                    let ins = Instruction::CallTool {
                        payload: CallToolPayload {
                            parent_message_id: parent,
                            tool_call: call.clone(),
                            existing_tool_message_id: payload
                                .existing_tool_message_ids
                                .get(&*call.id)
                                .copied(),
                        },
                    };
                    runs.push(exec.execute(ins, copy, cx));
                }
                futures::stream::iter(runs)
                    .buffered(cx.tool_concurrency().max(1))
                    .collect()
                    .await
            };

            let (base_usage, base_cost) = (base.usage.clone(), base.cost.clone());
            let base_todos = base.todos.clone();
            let base_delegated = base.delegated.len();
            let merged = base;
            let mut results = Vec::with_capacity(calls.len());
            let mut costs = Vec::with_capacity(calls.len());
            let mut executions = Vec::with_capacity(calls.len());
            // A call rein could not record fails the whole step (its siblings are settled on
            // resume as after a crash: an at-most-once one already recorded is not run again).
            if let Some(Err(e)) = outcomes
                .iter()
                .find(|o| o.as_ref().is_err_and(|e| e.code.is_unrecorded()))
            {
                return Err(e.clone());
            }
            for ((call, outcome), copy) in calls.iter().zip(outcomes).zip(copies) {
                match outcome {
                    Ok(out) => {
                        executions.extend(out.tool_executions);
                        for m in copy.messages.iter().filter(|m| {
                            m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&call.id)
                        }) {
                            merged.upsert_message(Arc::clone(m));
                        }
                        let usage = copy.usage.delta_since(&base_usage);
                        let cost = copy.cost.delta_since(&base_cost);
                        merged.usage.add(&usage);
                        merged.cost.add(&cost);
                        costs.push(cost.tools);
                        // A call that rewrote the plan wins (the last such call in call order).
                        if copy.todos != base_todos {
                            merged.todos = copy.todos.clone();
                        }
                        for id in &copy.async_calls {
                            if !merged.async_calls.contains(id) {
                                merged.async_calls.push(id.clone());
                            }
                        }
                        // Tasks the call delegated, in call order.
                        merged
                            .delegated
                            .extend(copy.delegated.iter().skip(base_delegated).cloned());
                        for t in &copy.activated_tools {
                            if !merged
                                .activated_tools
                                .iter()
                                .any(|a| a.identifier == t.identifier)
                            {
                                merged.activated_tools.push(t.clone());
                            }
                        }
                        for k in &copy.activated_skills {
                            if !merged.activated_skills.iter().any(|s| s.name == k.name) {
                                merged.activated_skills.push(k.clone());
                            }
                        }
                        if let Some(RuntimeContext {
                            phase: Phase::ToolResult(p),
                            ..
                        }) = out.next_context
                        {
                            results.push(p);
                        }
                    }
                    Err(e) => {
                        // One tool's executor failing must not lose its siblings' results.
                        let content = format!("Tool `{}` could not run: {}", call.key(), e.message);
                        merged.usage.record_tool(&call.key(), false, 0);
                        costs.push(crate::usage::Usd::ZERO);
                        let failed = ToolStatus::Failed;
                        results.push(settle(
                            merged,
                            cx,
                            call.clone(),
                            parent,
                            None,
                            Outcome {
                                status: failed,
                                content,
                                media: Vec::new(),
                                duration_ms: 0,
                            },
                        ));
                    }
                }
            }
            let next = ctx(Phase::ToolsBatchResult(ToolsBatchResultPayload {
                parent_message_id: parent,
                results,
            }));
            let mut out = ExecOutput::new(next);
            out.tool_call_costs = costs;
            out.tool_executions = executions;
            Ok(out)
        }
        .boxed()
    }
}
