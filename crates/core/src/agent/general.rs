//! GeneralChatAgent: the default brain. Call the model; run the tools it asks for within scope
//! and policy; park what needs a human; feed refusals back; finish visibly when it cannot go on.

use super::compression::{CompressionConfig, HeuristicEstimator, TokenEstimator, existing_summary};
use super::{Agent, AgentError};
use crate::ids::MessageId;
use crate::instruction::{
    BlockedReason, CallLlmPayload, CallToolPayload, CallToolsBatchPayload, CompressContextPayload,
    ExecSubAgentsPayload, Instruction, ResolveAbortedToolsPayload, ResolveBlockedToolsPayload,
};
use crate::intervention::{Action, ApprovalMode, InterventionChecker, key_listed};
use crate::message::{Role, ToolCall, ToolStatus};
use crate::phase::{LlmResultPayload, Phase, RuntimeContext};
use crate::state::{AgentState, FinishReason, ModelRef, Status};
use crate::tool::mangle;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Identical consecutive tool calls that end an operation with `loop_detected`.
pub const DEFAULT_LOOP_BREAKER: u32 = 5;
/// Rounds of unknown-tool-name feedback before an operation ends with `tool_name_errors`.
pub const DEFAULT_TOOL_NAME_ERROR_ROUNDS: u32 = 3;

/// GeneralChatAgent settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GeneralChatAgentConfig {
    /// Operation scope: `None` = no restriction, `Some(vec![])` = every call blocked.
    /// Entries are `identifier/api` keys or bare identifiers.
    pub allowed_tools: Option<Vec<String>>,
    /// Compression trigger.
    pub compression: CompressionConfig,
    /// End with `loop_detected` after this many identical calls in a row; `None` disables.
    pub loop_breaker: Option<u32>,
    /// Feedback rounds for unknown tool names; the next offending round ends the operation.
    pub max_tool_name_error_rounds: u32,
    /// Model for `call_llm` (the state's model otherwise).
    pub model: Option<ModelRef>,
    /// Progressive disclosure: `Some(always)` sends full schemas only for these tools and the
    /// ones the model activated (see [`crate::tool::schemas_offered`]); `None` sends all.
    pub progressive_tools: Option<Vec<String>>,
}

impl Default for GeneralChatAgentConfig {
    fn default() -> Self {
        Self {
            allowed_tools: None,
            compression: CompressionConfig::default(),
            loop_breaker: Some(DEFAULT_LOOP_BREAKER),
            max_tool_name_error_rounds: DEFAULT_TOOL_NAME_ERROR_ROUNDS,
            model: None,
            progressive_tools: None,
        }
    }
}

/// What the model is sent about tools, as manifests the estimator can count: the schemas the
/// allow-list offers of the tools whose schemas are disclosed, and for each tool only listed by
/// progressive disclosure its name and description.
fn offered(
    state: &AgentState,
    config: &GeneralChatAgentConfig,
) -> Arc<crate::tool::ToolManifestMap> {
    if config.allowed_tools.is_none() && config.progressive_tools.is_none() {
        return Arc::clone(&state.tool_manifests);
    }
    let always = config.progressive_tools.as_deref();
    let narrowed = state
        .tool_manifests
        .iter()
        .filter_map(|(id, m)| {
            let mut apis: Vec<_> = m
                .apis
                .iter()
                .filter(|a| {
                    config
                        .allowed_tools
                        .as_ref()
                        .is_none_or(|l| key_listed(l, &m.identifier, &a.name))
                })
                .cloned()
                .collect();
            if !apis.is_empty() && !crate::tool::schemas_offered(id, always, &state.activated_tools)
            {
                // Listed by name and description only.
                apis = vec![crate::tool::ToolApi {
                    name: id.clone(),
                    description: m.description.clone(),
                    parameters: serde_json::Value::Null,
                    intervention: None,
                    cost: None,
                }];
            }
            (!apis.is_empty()).then(|| {
                let narrowed = crate::tool::ToolManifest {
                    identifier: m.identifier.clone(),
                    kind: m.kind,
                    title: String::new(),
                    description: String::new(),
                    system_role: None,
                    apis,
                    intervention: None,
                };
                (id.clone(), Arc::new(narrowed))
            })
        })
        .collect();
    Arc::new(narrowed)
}

/// The default brain.
#[derive(Clone)]
pub struct GeneralChatAgent {
    config: GeneralChatAgentConfig,
    checker: InterventionChecker,
    estimator: Arc<dyn TokenEstimator>,
}

impl Default for GeneralChatAgent {
    fn default() -> Self {
        Self::new(GeneralChatAgentConfig::default())
    }
}

fn blocked(
    parent: Option<MessageId>,
    calls: Vec<ToolCall>,
    reason: BlockedReason,
    content: Option<String>,
) -> Instruction {
    Instruction::ResolveBlockedTools {
        payload: ResolveBlockedToolsPayload {
            parent_message_id: parent,
            tool_calls: calls,
            blocked_reason: reason,
            blocked_content: content,
        },
    }
}

impl GeneralChatAgent {
    /// An agent with `config`, the default checker and the heuristic token estimator.
    pub fn new(config: GeneralChatAgentConfig) -> Self {
        Self {
            config,
            checker: InterventionChecker::new(),
            estimator: Arc::new(HeuristicEstimator),
        }
    }

    /// Replace the intervention checker (extra dynamic or global audits).
    pub fn with_checker(mut self, checker: InterventionChecker) -> Self {
        self.checker = checker;
        self
    }

    /// Replace the token estimator.
    pub fn with_estimator(mut self, estimator: Arc<dyn TokenEstimator>) -> Self {
        self.estimator = estimator;
        self
    }

    /// The settings.
    pub fn config(&self) -> &GeneralChatAgentConfig {
        &self.config
    }

    fn call_llm(&self, state: &AgentState, parent: Option<MessageId>) -> CallLlmPayload {
        CallLlmPayload {
            parent_message_id: parent.or_else(|| state.messages.last().map(|m| m.id)),
            assistant_message_id: None,
            create_assistant_message: false,
            model: self.config.model.clone(),
            allowed_tools: self.config.allowed_tools.clone(),
            is_first_message: state.is_first_user_turn(),
        }
    }

    /// `call_llm`, or `compress_context` first when the context is over the threshold.
    fn llm_or_compress(&self, state: &AgentState, parent: Option<MessageId>) -> Instruction {
        let c = &self.config.compression;
        if c.enabled && state.messages.len() > 2 {
            let mut tokens = self.estimator.messages(&state.messages);
            if !state.force_finish {
                // Only what the model is offered counts.
                tokens += self.estimator.tools(&offered(state, &self.config));
            }
            let summary = existing_summary(&state.messages);
            if tokens > c.threshold(summary.is_some()) {
                return Instruction::CompressContext {
                    payload: CompressContextPayload {
                        current_token_count: tokens,
                        existing_summary: summary,
                    },
                };
            }
        }
        Instruction::CallLlm {
            payload: self.call_llm(state, parent),
        }
    }

    fn is_allowed(&self, call: &ToolCall) -> bool {
        match &self.config.allowed_tools {
            None => true,
            Some(list) => key_listed(list, &call.identifier, &call.api),
        }
    }

    /// Names the model may use, for feedback.
    fn available_names(&self, state: &AgentState) -> Vec<String> {
        let mut names: Vec<String> = state
            .tool_manifests
            .values()
            .flat_map(|m| m.apis.iter().map(move |a| (m, a)))
            .filter(|(m, a)| {
                self.config
                    .allowed_tools
                    .as_ref()
                    .is_none_or(|l| key_listed(l, &m.identifier, &a.name))
            })
            .map(|(m, a)| mangle(&m.identifier, &a.name))
            .collect();
        names.sort();
        names
    }

    fn unknown_feedback(&self, state: &AgentState, call: &ToolCall) -> String {
        let names = self.available_names(state);
        if names.is_empty() {
            format!(
                "Tool `{}` does not exist, and no tools are available in this run. Answer without calling tools.",
                call.api
            )
        } else {
            format!(
                "Tool `{}` does not exist. Available tools: {}. Call one of these exact names, or answer without tools.",
                call.api,
                names.join(", ")
            )
        }
    }

    fn on_llm_result(&self, p: &LlmResultPayload, state: &AgentState) -> Vec<Instruction> {
        let parent = Some(p.assistant_message_id);
        if !p.has_tool_calls() {
            // `max_steps_completed` only for the answer the limit forced; a model that
            // answered on its own completed.
            return vec![if p.final_call {
                Instruction::finish(
                    FinishReason::MaxStepsCompleted,
                    "Final answer after reaching the step limit",
                )
            } else {
                Instruction::finish(FinishReason::Completed, "Model answered without tool calls")
            }];
        }
        if state.force_finish && p.final_call {
            // The final, tool-less call asked for tools anyway: it was the last call.
            return vec![Instruction::finish(
                FinishReason::MaxStepsCompleted,
                format!(
                    "Step limit reached; the model asked for {} more tool call(s), which were not run",
                    p.tool_calls.len()
                ),
            )];
        }
        if state.force_finish {
            // The limit was crossed on a step that asked for tools: answer each call (not
            // run); the next step makes the final call without tools, so the user still gets
            // an answer.
            return vec![blocked(
                parent,
                p.tool_calls.clone(),
                BlockedReason::StepLimit,
                None,
            )];
        }
        let (resolved, unresolved): (Vec<ToolCall>, Vec<ToolCall>) = p
            .tool_calls
            .iter()
            .cloned()
            .partition(ToolCall::is_resolved);
        let mut out = Vec::new();

        if !unresolved.is_empty() {
            if state.tool_name_error_rounds >= self.config.max_tool_name_error_rounds {
                let names: Vec<&str> = unresolved.iter().map(|c| c.api.as_ref()).collect();
                return vec![Instruction::finish(
                    FinishReason::ToolNameErrors,
                    format!(
                        "The model kept calling tools that do not exist after {} rounds of feedback: {}",
                        state.tool_name_error_rounds,
                        names.join(", ")
                    ),
                )];
            }
            // One result per call, each naming its own bad name.
            for call in unresolved {
                let feedback = self.unknown_feedback(state, &call);
                out.push(blocked(
                    parent,
                    vec![call],
                    BlockedReason::UnknownToolName,
                    Some(feedback),
                ));
            }
        }

        let (allowed, not_allowed): (Vec<ToolCall>, Vec<ToolCall>) =
            resolved.into_iter().partition(|c| self.is_allowed(c));
        if !not_allowed.is_empty() {
            out.push(blocked(
                parent,
                not_allowed,
                BlockedReason::ToolNotAllowed,
                None,
            ));
        }

        let mut execute = Vec::new();
        let mut approve = Vec::new();
        let mut reasons = BTreeMap::new();
        let mut refuse = Vec::new();
        let nobody = state.intervention.approval_mode == ApprovalMode::Headless
            || state.intervention.unattended;
        for call in allowed {
            // A question waits for a person in every mode that has one (nothing else can
            // answer it); in a headless or unattended run the tool itself says nobody is there.
            // Arguments that do not fit run too: the tool's validation tells the model why.
            if let Some(question) = crate::question::Question::of_call(&call) {
                if nobody || question.is_err() {
                    execute.push(call);
                } else {
                    approve.push(call);
                }
                continue;
            }
            match self.checker.check(&call, state) {
                Action::Execute => execute.push(call),
                Action::RequireApproval => {
                    // Whoever decides sees why it asks.
                    let d = self.checker.explain(&call, state);
                    reasons.insert(call.id.to_string(), d.approval_reason());
                    approve.push(call);
                }
                Action::Block => {
                    // Say which rule refused it (and on what), so the model can change course.
                    let d = self.checker.explain(&call, state);
                    let why = match (d.matched_rule, d.node) {
                        (Some(rule), Some(node)) => format!(" ({rule} on {node})"),
                        (Some(rule), None) => format!(" ({rule})"),
                        _ => String::new(),
                    };
                    refuse.push((call, why));
                }
            }
        }

        if let Some(limit) = self.config.loop_breaker {
            let mut tracker = state.tool_repeat.clone();
            for call in &execute {
                tracker.record(call);
                if tracker.count >= limit {
                    return vec![Instruction::finish(
                        FinishReason::LoopDetected,
                        format!(
                            "`{}` was called {} times in a row with identical arguments",
                            call.key(),
                            tracker.count
                        ),
                    )];
                }
            }
        }

        for (call, why) in refuse {
            let text = format!(
                "Blocked by security policy{why}: this call needs human approval and no human is available in this run."
            );
            out.push(blocked(
                parent,
                vec![call],
                BlockedReason::Security,
                Some(text),
            ));
        }
        match execute.len() {
            0 => {}
            1 => out.push(Instruction::CallTool {
                payload: CallToolPayload {
                    parent_message_id: parent,
                    tool_call: execute.remove(0),
                    existing_tool_message_id: None,
                },
            }),
            _ => out.push(Instruction::CallToolsBatch {
                payload: CallToolsBatchPayload {
                    parent_message_id: parent,
                    tool_calls: execute,
                    existing_tool_message_ids: BTreeMap::new(),
                },
            }),
        }
        if !approve.is_empty() {
            out.push(Instruction::RequestHumanApprove {
                pending_tool_calls: approve,
                reason: Some("human_intervention_required".into()),
                parent_message_id: parent,
                skip_create_tool_message: false,
                reasons,
            });
        }
        out
    }

    /// Pending calls of the current turn (older turns' leftovers never park the loop).
    fn pending_in_turn(state: &AgentState) -> (Option<MessageId>, Vec<ToolCall>) {
        let Some(turn) = state.current_tool_turn() else {
            return (None, Vec::new());
        };
        // A delegating call's result is pending on its sub-agents, an async call's on its
        // device, not on a human.
        let delegating = |id: &str| {
            state
                .delegated
                .iter()
                .any(|t| t.tool_call_id.as_deref() == Some(id))
                || state.sub_agents.iter().any(|r| r.tool_call_id == id)
                || state.async_calls.iter().any(|c| c == id)
        };
        let pending = state
            .messages
            .iter()
            .filter(|m| {
                m.role == Role::Tool
                    && m.parent_id == Some(turn.id)
                    && m.tool_status == Some(ToolStatus::Pending)
                    && !m.tool_call_id.as_deref().is_some_and(delegating)
            })
            .filter_map(|m| {
                let id = m.tool_call_id.as_deref()?;
                turn.tool_calls.iter().find(|c| &*c.id == id).cloned()
            })
            .collect();
        (Some(turn.id), pending)
    }

    fn after_tools(&self, ctx: &RuntimeContext, state: &AgentState) -> Vec<Instruction> {
        let (turn, pending) = Self::pending_in_turn(state);
        if !pending.is_empty() {
            return vec![Instruction::RequestHumanApprove {
                pending_tool_calls: pending,
                reason: Some("Some tools are still pending approval".into()),
                parent_message_id: turn,
                skip_create_tool_message: true,
                reasons: BTreeMap::new(),
            }];
        }
        if !state.delegated.is_empty() {
            // The turn's tools have all run or been decided: start what they delegated.
            return vec![Instruction::ExecSubAgents {
                payload: ExecSubAgentsPayload {
                    parent_message_id: turn,
                    tasks: state.delegated.clone(),
                },
            }];
        }
        if ctx.step.has_queued_messages {
            return vec![Instruction::finish(
                FinishReason::QueuedMessageInterrupt,
                "A queued user message takes over",
            )];
        }
        vec![self.llm_or_compress(state, None)]
    }

    /// Every pending call anywhere in the conversation or the state.
    fn all_pending(state: &AgentState) -> Vec<ToolCall> {
        let mut calls: Vec<ToolCall> = state.pending_tool_calls.clone();
        for m in &state.messages {
            if m.role == Role::Tool
                && m.tool_status == Some(ToolStatus::Pending)
                && let Some(id) = m.tool_call_id.as_deref()
                && !calls.iter().any(|c| &*c.id == id)
                && let Some(call) = state
                    .messages
                    .iter()
                    .flat_map(|a| a.tool_calls.iter())
                    .find(|c| &*c.id == id)
            {
                calls.push(call.clone());
            }
        }
        calls
    }

    fn settle(
        parent: Option<MessageId>,
        calls: Vec<ToolCall>,
        reason: &str,
        finish: FinishReason,
    ) -> Vec<Instruction> {
        let mut out = Vec::new();
        if !calls.is_empty() {
            out.push(Instruction::ResolveAbortedTools {
                payload: ResolveAbortedToolsPayload {
                    parent_message_id: parent,
                    tool_calls: calls,
                    reason: Some(reason.to_owned()),
                    existing_tool_message_ids: BTreeMap::new(),
                },
            });
        }
        out.push(Instruction::finish(finish, reason));
        out
    }

    fn handle_abort(ctx: &RuntimeContext, state: &AgentState) -> Vec<Instruction> {
        let reason = state.interruption.as_ref().map_or_else(
            || "Operation cancelled by user".to_owned(),
            |i| i.reason.clone(),
        );
        let finish = state
            .interruption
            .as_ref()
            .and_then(|i| i.finish_reason)
            .unwrap_or(FinishReason::UserRequested);
        let (parent, calls) = match &ctx.phase {
            Phase::LlmResult(p) => (
                Some(p.assistant_message_id),
                p.tool_calls
                    .iter()
                    .filter(|c| c.is_resolved())
                    .cloned()
                    .collect(),
            ),
            Phase::HumanAbort(p) => (p.parent_message_id, p.tool_calls.clone()),
            _ => (state.pending_parent_message_id, Self::all_pending(state)),
        };
        Self::settle(parent, calls, &reason, finish)
    }
}

impl Agent for GeneralChatAgent {
    fn runner(
        &self,
        ctx: &RuntimeContext,
        state: &AgentState,
    ) -> Result<Vec<Instruction>, AgentError> {
        if state.status == Status::Interrupted {
            return Ok(Self::handle_abort(ctx, state));
        }
        Ok(match &ctx.phase {
            Phase::Init | Phase::UserInput(_) | Phase::HumanResponse(_) => {
                vec![self.llm_or_compress(state, None)]
            }
            Phase::LlmResult(p) => self.on_llm_result(p, state),
            Phase::SubAgentResult(_) => self.after_tools(ctx, state),
            Phase::ToolResult(_) | Phase::ToolsBatchResult(_) | Phase::SubAgentsBatchResult(_) => {
                self.after_tools(ctx, state)
            }
            Phase::CompressionResult(p) => {
                let mut payload = self.call_llm(state, p.parent_message_id);
                payload.create_assistant_message = state.pending_assistant_message_id.is_none();
                payload.assistant_message_id = state.pending_assistant_message_id;
                vec![Instruction::CallLlm { payload }]
            }
            Phase::HumanAbort(p) => Self::settle(
                p.parent_message_id,
                p.tool_calls.clone(),
                &p.reason,
                FinishReason::UserAborted,
            ),
            Phase::HumanApprovedTool(p) => vec![Instruction::CallTool {
                payload: CallToolPayload {
                    parent_message_id: p.parent_message_id,
                    tool_call: p.tool_call.clone(),
                    existing_tool_message_id: p.tool_message_id,
                },
            }],
            Phase::Error(p) => vec![Instruction::finish(
                FinishReason::ErrorRecovery,
                p.message.clone(),
            )],
        })
    }
}
