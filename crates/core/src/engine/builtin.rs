//! Built-in executors. The outer crates override any of them through the executor table; the
//! defaults already do the accounting, message bookkeeping and events every host needs.

use super::executor::{ExecContext, ExecError, ExecOutput, Executor};
use super::ports::{LlmPort, LlmRequest, Summarizer, ToolPort};
use crate::agent::TokenEstimator;
use crate::event::EventKind;
use crate::ids::MessageId;
use crate::instruction::{
    BlockedReason, CallToolPayload, Instruction, InstructionKind, ResolveBlockedToolsPayload,
};
use crate::message::{Message, MessageKind, Role, ToolCall, ToolStatus};
use crate::phase::{
    CompressionResultPayload, LlmResultPayload, Phase, RuntimeContext, ToolResultPayload,
    ToolsBatchResultPayload,
};
use crate::state::{AgentState, Finish, HumanPrompt, HumanSelect, Status};
use crate::tool::resolve_name;
use chrono::Utc;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

fn wrong(kind: InstructionKind, ins: &Instruction) -> ExecError {
    ExecError::new(
        "executor_mismatch",
        format!(
            "{} executor received a {} instruction",
            kind.as_str(),
            ins.kind().as_str()
        ),
    )
}

fn ctx(phase: Phase) -> Option<RuntimeContext> {
    Some(RuntimeContext::new(phase))
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Write a tool result: fill the existing (pending) message when there is one, else append.
pub(crate) fn write_tool_message(
    state: &mut AgentState,
    call: &ToolCall,
    parent: Option<MessageId>,
    existing: Option<MessageId>,
    status: ToolStatus,
    content: &str,
) -> MessageId {
    let existing = existing
        .and_then(|id| state.message_mut(id).map(|m| m.id))
        .or_else(|| state.tool_message_mut(&call.id).map(|m| m.id));
    if let Some(id) = existing
        && let Some(m) = state.message_mut(id)
    {
        m.set_text(content);
        m.tool_status = Some(status);
        return id;
    }
    let m = Message::tool_result(call, parent, status, content);
    let id = m.id;
    state.push_message(m);
    id
}

/// How a tool call ended.
pub(crate) struct Outcome {
    pub(crate) status: ToolStatus,
    pub(crate) content: String,
    /// How long it ran (0 when it did not run).
    pub(crate) duration_ms: u64,
}

/// Answer a tool call: write (or fill in) its result message, emit `tool_result`, and return
/// the phase payload describing it.
pub(crate) fn settle(
    state: &mut AgentState,
    cx: &ExecContext<'_>,
    call: ToolCall,
    parent: Option<MessageId>,
    existing: Option<MessageId>,
    outcome: Outcome,
) -> ToolResultPayload {
    let Outcome {
        status,
        content,
        duration_ms,
    } = outcome;
    let id = write_tool_message(state, &call, parent, existing, status, &content);
    cx.emit(EventKind::ToolResult {
        tool_call_id: call.id.clone(),
        tool_message_id: id,
        status,
        content: content.clone(),
        duration_ms,
    });
    ToolResultPayload {
        parent_message_id: parent,
        tool_message_id: id,
        tool_call: call,
        status,
        content,
        execution_ms: 0,
        follow_up: None,
    }
}

/// `finish`: the operation is done.
pub struct FinishExecutor;

impl Executor for FinishExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::Finish {
                reason,
                reason_detail,
            } = ins
            else {
                return Err(wrong(InstructionKind::Finish, &ins));
            };
            finish(state, cx, reason, reason_detail);
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}

pub(crate) fn finish(
    state: &mut AgentState,
    cx: &ExecContext<'_>,
    reason: crate::state::FinishReason,
    detail: Option<String>,
) {
    state.status = Status::Done;
    state.finish = Some(Finish {
        reason,
        detail: detail.clone(),
    });
    cx.emit(EventKind::Done {
        reason,
        reason_detail: detail,
    });
}

/// `call_llm` over an [`LlmPort`].
pub struct CallLlmExecutor {
    /// The model port.
    pub port: Arc<dyn LlmPort>,
}

impl Executor for CallLlmExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::CallLlm { payload } = ins else {
                return Err(wrong(InstructionKind::CallLlm, &ins));
            };
            let assistant_id = payload
                .assistant_message_id
                .or(if payload.create_assistant_message {
                    None
                } else {
                    state.pending_assistant_message_id
                })
                .unwrap_or_default();
            let model = payload.model.clone().or_else(|| state.model.clone());
            let model_key = model.as_ref().map(|m| m.key());
            state.status = Status::Running;
            cx.emit(EventKind::LlmStart {
                assistant_message_id: assistant_id,
                model: model_key.clone(),
            });
            let on_chunk = move |progress| match progress {
                super::ports::LlmProgress::Chunk(chunk) => cx.emit(EventKind::LlmStream {
                    assistant_message_id: assistant_id,
                    chunk,
                }),
                super::ports::LlmProgress::Retry {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_kind,
                } => cx.emit(EventKind::StreamRetry {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_kind,
                }),
            };
            let started = Instant::now();
            let request = LlmRequest {
                state,
                payload: &payload,
                model: model.as_ref(),
                assistant_message_id: assistant_id,
                force_finish: state.force_finish,
            };
            let mut out =
                self.port.call(request, &on_chunk).await.map_err(|e| {
                    ExecError::new(e.code, format!("model call failed: {}", e.message))
                })?;
            let elapsed = if out.elapsed_ms > 0 {
                out.elapsed_ms
            } else {
                elapsed_ms(started)
            };

            let tool_calls: Vec<ToolCall> = std::mem::take(&mut out.tool_calls)
                .into_iter()
                .map(|raw| {
                    let mut call = match resolve_name(&state.tool_manifests, &raw.name) {
                        Some((identifier, api)) => {
                            ToolCall::new(raw.id, identifier, api, raw.arguments)
                        }
                        None => ToolCall::unresolved(raw.id, raw.name, raw.arguments),
                    };
                    call.thought_signature = raw.thought_signature.map(Arc::from);
                    call
                })
                .collect();

            let key = model_key
                .clone()
                .unwrap_or_else(|| "unknown/unknown".into());
            state.usage.record_llm(&key, &out.usage, elapsed);
            state.cost.record_llm(&key, out.cost);

            let parent = payload.parent_message_id.or_else(|| {
                state
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.id != assistant_id)
                    .map(|m| m.id)
            });
            if state.message(assistant_id).is_none() {
                let mut m = Message::assistant("");
                m.id = assistant_id;
                state.push_message(m);
            }
            let Some(message) = state.message_mut(assistant_id) else {
                return Err(ExecError::new("internal", "assistant message vanished"));
            };
            message.role = Role::Assistant;
            message.set_text(&out.content);
            message.reasoning = out.reasoning.clone();
            message.tool_calls = tool_calls.clone();
            message.parent_id = parent;
            message.model = model_key;
            message.usage = Some(out.usage);
            message.created_at = Utc::now();

            cx.emit(EventKind::LlmResult {
                assistant_message_id: assistant_id,
                content: out.content.clone(),
                tool_calls: tool_calls.clone(),
                usage: out.usage,
                cost: out.cost,
            });
            let next = ctx(Phase::LlmResult(LlmResultPayload {
                assistant_message_id: assistant_id,
                content: out.content,
                tool_calls,
                stop_reason: out.stop_reason,
                final_call: state.force_finish,
            }));
            Ok(ExecOutput::new(next))
        }
        .boxed()
    }
}

/// `call_tool` over a [`ToolPort`].
pub struct CallToolExecutor {
    /// The tool port.
    pub port: Arc<dyn ToolPort>,
}

impl Executor for CallToolExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::CallTool { payload } = ins else {
                return Err(wrong(InstructionKind::CallTool, &ins));
            };
            let CallToolPayload {
                parent_message_id,
                tool_call: call,
                existing_tool_message_id,
            } = payload;
            cx.emit(EventKind::ToolPending {
                tool_calls: vec![call.clone()],
            });
            let started = Instant::now();
            let output = if !call.is_resolved() {
                super::ports::ToolOutput::failed(format!("Tool `{}` does not exist.", call.api))
            } else if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments) {
                super::ports::ToolOutput::failed(format!(
                    "Invalid arguments for `{}`: not valid JSON ({e}). Call it again with a JSON \
                     object that matches its parameters.",
                    call.key()
                ))
            } else {
                match self.port.call(&call, state).await {
                    Ok(out) => out,
                    Err(e) => super::ports::ToolOutput::failed(format!(
                        "Tool `{}` failed: {}",
                        call.key(),
                        e.message
                    )),
                }
            };
            let ms = elapsed_ms(started);
            let status = if output.success {
                ToolStatus::Succeeded
            } else {
                ToolStatus::Failed
            };
            if output.success
                && let Some(todos) = &output.todos
            {
                state.todos = todos.clone();
            }
            if output.success {
                for identifier in &output.activate {
                    let installed = state.tool_manifests.contains_key(identifier);
                    let active = state
                        .activated_tools
                        .iter()
                        .any(|a| &a.identifier == identifier);
                    if installed && !active {
                        state.activated_tools.push(crate::tool::ActivatedTool {
                            identifier: identifier.clone(),
                            activated_at_step: state.step_count,
                            source: "discovery".into(),
                        });
                    }
                }
            }
            let key = call.key();
            state.usage.record_tool(&key, output.success, ms);
            state.cost.record_tool(&key, output.cost);
            let mut result = settle(
                state,
                cx,
                call,
                parent_message_id,
                existing_tool_message_id,
                Outcome {
                    status,
                    content: output.content,
                    duration_ms: ms,
                },
            );
            result.execution_ms = ms;
            result.follow_up = output.follow_up;
            let next = ctx(Phase::ToolResult(result));
            let mut out = ExecOutput::new(next);
            out.tool_call_costs = vec![output.cost];
            out.tool_executions = output.execution.into_iter().collect();
            Ok(out)
        }
        .boxed()
    }
}

/// `call_tools_batch`: every call runs through the `call_tool` executor that won precedence,
/// concurrently (bounded), each from the same base state; results merge in tool-call order,
/// deduplicated by id, with usage and cost merged as deltas.
pub struct CallToolsBatchExecutor;

impl Executor for CallToolsBatchExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        base: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::CallToolsBatch { payload } = ins else {
                return Err(wrong(InstructionKind::CallToolsBatch, &ins));
            };
            let Some(exec) = cx.executor(InstructionKind::CallTool) else {
                return Err(ExecError::new(
                    "executor_missing",
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
            let merged = base;
            let mut results = Vec::with_capacity(calls.len());
            let mut costs = Vec::with_capacity(calls.len());
            let mut executions = Vec::with_capacity(calls.len());
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
                        for t in &copy.activated_tools {
                            if !merged
                                .activated_tools
                                .iter()
                                .any(|a| a.identifier == t.identifier)
                            {
                                merged.activated_tools.push(t.clone());
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

/// Default text of a blocked result.
pub fn blocked_text(reason: BlockedReason) -> &'static str {
    match reason {
        BlockedReason::Security => {
            "Blocked by security policy: this call needs human approval and no human is available in this run."
        }
        BlockedReason::ToolNotAllowed => {
            "Tool execution blocked because the tool is not allowed in the current execution scope."
        }
        BlockedReason::UnknownToolName => "This tool does not exist.",
        BlockedReason::StepLimit => {
            "Not run: the step limit was reached. Answer now with what you have, without tools."
        }
    }
}

/// `resolve_blocked_tools`: answer refused calls so the model can read why.
pub struct ResolveBlockedToolsExecutor;

impl Executor for ResolveBlockedToolsExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::ResolveBlockedTools { payload } = ins else {
                return Err(wrong(InstructionKind::ResolveBlockedTools, &ins));
            };
            let ResolveBlockedToolsPayload {
                parent_message_id,
                tool_calls,
                blocked_reason,
                blocked_content,
            } = payload;
            let content =
                blocked_content.unwrap_or_else(|| blocked_text(blocked_reason).to_owned());
            let mut results = Vec::with_capacity(tool_calls.len());
            for call in tool_calls {
                let blocked = ToolStatus::Blocked;
                results.push(settle(
                    state,
                    cx,
                    call,
                    parent_message_id,
                    None,
                    Outcome {
                        status: blocked,
                        content: content.clone(),
                        duration_ms: 0,
                    },
                ));
            }
            let next = ctx(Phase::ToolsBatchResult(ToolsBatchResultPayload {
                parent_message_id,
                results,
            }));
            Ok(ExecOutput::new(next))
        }
        .boxed()
    }
}

/// `resolve_aborted_tools`: settle pending calls as aborted.
pub struct ResolveAbortedToolsExecutor;

impl Executor for ResolveAbortedToolsExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::ResolveAbortedTools { payload } = ins else {
                return Err(wrong(InstructionKind::ResolveAbortedTools, &ins));
            };
            let reason = payload
                .reason
                .unwrap_or_else(|| "the operation was cancelled".into());
            let content = format!("Tool call aborted: {reason}.");
            for call in &payload.tool_calls {
                let existing = payload.existing_tool_message_ids.get(&*call.id).copied();
                let (parent, aborted) = (payload.parent_message_id, ToolStatus::Aborted);
                settle(
                    state,
                    cx,
                    call.clone(),
                    parent,
                    existing,
                    Outcome {
                        status: aborted,
                        content: content.clone(),
                        duration_ms: 0,
                    },
                );
            }
            let settled: HashSet<&str> = payload.tool_calls.iter().map(|c| c.id.as_ref()).collect();
            state
                .pending_tool_calls
                .retain(|c| !settled.contains(c.id.as_ref()));
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}

/// `request_human_approve`, `request_human_prompt`, `request_human_select`: park.
pub struct RequestHumanExecutor;

impl Executor for RequestHumanExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            match ins {
                Instruction::RequestHumanApprove {
                    pending_tool_calls,
                    parent_message_id,
                    skip_create_tool_message,
                    ..
                } => {
                    for call in &pending_tool_calls {
                        let exists = state.tool_message_mut(&call.id).is_some();
                        if !skip_create_tool_message || !exists {
                            write_tool_message(
                                state,
                                call,
                                parent_message_id,
                                None,
                                ToolStatus::Pending,
                                "",
                            );
                        }
                    }
                    if !skip_create_tool_message {
                        state.usage.human.approval_requests += 1;
                    }
                    state.pending_tool_calls = pending_tool_calls.clone();
                    state.pending_parent_message_id = parent_message_id;
                    state.status = Status::WaitingForHuman;
                    cx.emit(EventKind::HumanApproveRequired {
                        pending_tool_calls,
                        parent_message_id,
                    });
                }
                Instruction::RequestHumanPrompt {
                    prompt,
                    reason,
                    metadata,
                } => {
                    let p = HumanPrompt {
                        prompt,
                        reason,
                        metadata,
                    };
                    state.usage.human.prompt_requests += 1;
                    state.pending_human_prompt = Some(p.clone());
                    state.status = Status::WaitingForHuman;
                    cx.emit(EventKind::HumanPromptRequired { prompt: p });
                }
                Instruction::RequestHumanSelect {
                    options,
                    multi,
                    prompt,
                    reason,
                    metadata,
                } => {
                    let s = HumanSelect {
                        options,
                        multi,
                        prompt,
                        reason,
                        metadata,
                    };
                    state.usage.human.select_requests += 1;
                    state.pending_human_select = Some(s.clone());
                    state.status = Status::WaitingForHuman;
                    cx.emit(EventKind::HumanSelectRequired { select: s });
                }
                other => return Err(wrong(InstructionKind::RequestHumanApprove, &other)),
            }
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}

/// `compress_context` over a [`Summarizer`]: leading system messages, the trailing user message
/// and the newest messages within `keep_recent_tokens` stay verbatim (the kept tail never
/// starts at a tool result, so no result loses its call); everything between becomes one
/// summary message. Any failure (or no
/// summarizer) reports `compression_error` and continues uncompressed: never a loop, never a
/// lost message.
pub struct CompressContextExecutor {
    /// The summarizer, if configured.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// Token budget of the newest messages kept verbatim.
    pub keep_recent_tokens: u64,
    /// Measures messages for the budget.
    pub estimator: Arc<dyn TokenEstimator>,
}

impl CompressContextExecutor {
    /// Index of the first message kept verbatim at the end (`messages.len()` when none).
    fn kept_tail(&self, messages: &[Arc<Message>], head: usize) -> usize {
        let mut start = messages.len();
        let mut used = 0u64;
        for i in (head..messages.len()).rev() {
            let m = &messages[i];
            let cost = self.estimator.messages(std::slice::from_ref(m));
            let trailing_user = i + 1 == messages.len() && m.role == Role::User;
            if !trailing_user && used + cost > self.keep_recent_tokens {
                break;
            }
            used += cost;
            start = i;
        }
        // A kept tool result whose call would be summarized away is an orphan: summarize it too.
        while messages.get(start).is_some_and(|m| m.role == Role::Tool) {
            start += 1;
        }
        start
    }
}

impl Executor for CompressContextExecutor {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::CompressContext { payload } = ins else {
                return Err(wrong(InstructionKind::CompressContext, &ins));
            };
            let parent = state.messages.last().map(|m| m.id);
            let skipped = |cx: &ExecContext<'_>, why: String| {
                cx.emit(EventKind::CompressionError { message: why });
                let next = ctx(Phase::CompressionResult(CompressionResultPayload {
                    parent_message_id: parent,
                    summary_message_id: None,
                    skipped: true,
                }));
                Ok(ExecOutput::new(next))
            };
            let Some(summarizer) = &self.summarizer else {
                return skipped(cx, "no summarizer is configured".into());
            };
            let head = state
                .messages
                .iter()
                .take_while(|m| m.role == Role::System)
                .count();
            let end = self.kept_tail(&state.messages, head);
            if end <= head + 1 {
                return skipped(cx, "nothing to compress".into());
            }
            let summary = match summarizer
                .summarize(
                    &state.messages[head..end],
                    payload.existing_summary.as_deref(),
                )
                .await
            {
                Ok(s) => s,
                Err(e) => return skipped(cx, format!("summarizer failed: {}", e.message)),
            };
            state
                .usage
                .record_llm(&summary.model_key, &summary.usage, 0);
            state.cost.record_llm(&summary.model_key, summary.cost);
            let mut msg = Message::user(summary.text);
            msg.kind = MessageKind::CompressionSummary;
            msg.model = Some(summary.model_key.clone());
            msg.usage = Some(summary.usage);
            msg.summarizes = state.messages[head..end].iter().map(|m| m.id).collect();
            msg.parent_id = head
                .checked_sub(1)
                .and_then(|i| state.messages.get(i))
                .map(|m| m.id);
            let summary_id = msg.id;
            let compressed = end - head;
            state.messages.splice(head..end, [Arc::new(msg)]);
            cx.emit(EventKind::CompressionComplete {
                summary_message_id: summary_id,
                compressed_count: u32::try_from(compressed).unwrap_or(u32::MAX),
            });
            let next = ctx(Phase::CompressionResult(CompressionResultPayload {
                parent_message_id: state.messages.last().map(|m| m.id),
                summary_message_id: Some(summary_id),
                skipped: false,
            }));
            Ok(ExecOutput::new(next))
        }
        .boxed()
    }
}
