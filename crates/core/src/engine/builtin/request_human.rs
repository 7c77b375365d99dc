//! `request_human_approve`, `request_human_prompt`, `request_human_select`: park the
//! operation until a human answers.

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::event::EventKind;
use crate::ids::MessageId;
use crate::instruction::{Instruction, InstructionKind};
use crate::message::{ToolCall, ToolStatus};
use crate::state::{AgentState, HumanPrompt, HumanSelect, Status};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::*;

/// `request_human_approve`, `request_human_prompt`, `request_human_select`: park.
pub struct RequestHumanExecutor;

/// What a request-human instruction asks.
pub enum HumanRequest {
    /// Approve or reject calls.
    Approve {
        /// The calls needing a decision.
        pending_tool_calls: Vec<ToolCall>,
        /// Assistant message that owns the calls.
        parent_message_id: Option<MessageId>,
        /// The pending tool messages already exist (re-park).
        skip_create_tool_message: bool,
        /// Why each call asks, by tool call id.
        reasons: std::collections::BTreeMap<String, crate::intervention::ApprovalReason>,
    },
    /// Answer a free-text question.
    Prompt(HumanPrompt),
    /// Choose among options.
    Select(HumanSelect),
}

impl PayloadExecutor for RequestHumanExecutor {
    type Payload = HumanRequest;
    const KIND: InstructionKind = InstructionKind::RequestHumanApprove;

    fn payload(ins: Instruction) -> Result<HumanRequest, Instruction> {
        Ok(match ins {
            Instruction::RequestHumanApprove {
                pending_tool_calls,
                parent_message_id,
                skip_create_tool_message,
                reasons,
                ..
            } => HumanRequest::Approve {
                pending_tool_calls,
                parent_message_id,
                skip_create_tool_message,
                reasons,
            },
            Instruction::RequestHumanPrompt {
                prompt,
                reason,
                metadata,
            } => HumanRequest::Prompt(HumanPrompt {
                prompt,
                reason,
                metadata,
            }),
            Instruction::RequestHumanSelect {
                options,
                multi,
                prompt,
                reason,
                metadata,
            } => HumanRequest::Select(HumanSelect {
                options,
                multi,
                prompt,
                reason,
                metadata,
            }),
            other => return Err(other),
        })
    }

    fn run<'a>(
        &'a self,
        request: HumanRequest,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let mut out = ExecOutput::new(None);
            match request {
                HumanRequest::Approve {
                    pending_tool_calls,
                    parent_message_id,
                    skip_create_tool_message,
                    reasons,
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
                    out.approvals = pending_tool_calls
                        .iter()
                        .map(|call| crate::engine::Approval {
                            call: call.clone(),
                            reason: reasons.get(&*call.id).cloned(),
                        })
                        .collect();
                    cx.emit(EventKind::HumanApproveRequired {
                        pending_tool_calls,
                        parent_message_id,
                        reasons,
                    });
                }
                HumanRequest::Prompt(p) => {
                    state.usage.human.prompt_requests += 1;
                    state.pending_human_prompt = Some(p.clone());
                    state.status = Status::WaitingForHuman;
                    cx.emit(EventKind::HumanPromptRequired { prompt: p });
                }
                HumanRequest::Select(s) => {
                    state.usage.human.select_requests += 1;
                    state.pending_human_select = Some(s.clone());
                    state.status = Status::WaitingForHuman;
                    cx.emit(EventKind::HumanSelectRequired { select: s });
                }
            }
            Ok(out)
        }
        .boxed()
    }
}
