//! Human decisions on a parked operation. Each returns the new state and the context the next
//! step runs in; a decision is single-use (a decided call is no longer pending).

use super::builtin::write_tool_message;
use crate::message::{Message, ToolCall, ToolStatus};
use crate::phase::{
    HumanAbortPayload, HumanApprovedToolPayload, HumanResponsePayload, Phase, RuntimeContext,
    ToolResultPayload,
};
use crate::question::{Answer, Question};
use crate::state::{AgentState, Interruption, Status};
use chrono::Utc;

/// Why a decision was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The operation is not waiting for a human.
    #[error("operation is {0:?}, not waiting for a human decision")]
    NotWaiting(Status),
    /// No pending call has this id (never requested, or already decided).
    #[error("no pending tool call `{0}` (it was never requested or was already decided)")]
    UnknownToolCall(String),
    /// A sub-agent the operation waits for has not ended.
    #[error("sub-agent {0} has not ended")]
    SubAgentRunning(crate::ids::OperationId),
    /// No question is open.
    #[error("no open {0} question")]
    NoQuestion(&'static str),
    /// A question (`ask_user`) is answered, not approved.
    #[error("tool call `{0}` is a question: answer it (approving would leave it unanswered)")]
    QuestionNeedsAnswer(String),
    /// An answer was given for a call that asks nothing.
    #[error("tool call `{0}` is not a question; approve or reject it")]
    NotAQuestion(String),
    /// The answer does not fit the question.
    #[error("answer to `{call}` does not fit: {error}")]
    BadAnswer {
        /// The call.
        call: String,
        /// What is wrong with the answer.
        error: crate::question::AnswerError,
    },
}

/// The question a pending call asks, if it is one (arguments that do not parse are not a
/// question a person can answer: the call is rejected or aborted like any other).
fn question_of(call: &ToolCall) -> Option<Question> {
    Question::of_call(call).and_then(Result::ok)
}

fn take_pending(state: &mut AgentState, tool_call_id: &str) -> Result<ToolCall, DecisionError> {
    if state.status != Status::WaitingForHuman {
        return Err(DecisionError::NotWaiting(state.status));
    }
    let pos = state
        .pending_tool_calls
        .iter()
        .position(|c| &*c.id == tool_call_id)
        .ok_or_else(|| DecisionError::UnknownToolCall(tool_call_id.to_owned()))?;
    state.updated_at = Utc::now();
    Ok(state.pending_tool_calls.remove(pos))
}

/// Approve one pending call: the next step runs it (filling its pending tool message).
pub fn approve_tool_call(
    mut state: AgentState,
    tool_call_id: &str,
) -> Result<(AgentState, RuntimeContext), DecisionError> {
    let call = take_pending(&mut state, tool_call_id)?;
    if question_of(&call).is_some() {
        return Err(DecisionError::QuestionNeedsAnswer(tool_call_id.to_owned()));
    }
    let tool_message_id = state.tool_message_mut(&call.id).map(|m| {
        m.tool_status = Some(ToolStatus::Approved);
        m.id
    });
    state.status = Status::Running;
    let parent_message_id = state.pending_parent_message_id;
    let ctx = RuntimeContext::new(Phase::HumanApprovedTool(HumanApprovedToolPayload {
        tool_call: call,
        parent_message_id,
        tool_message_id,
    }));
    Ok((state, ctx))
}

/// Reject one pending call. With `halt`, the operation stops for good; otherwise the model
/// reads the rejection (once no other call is pending) and continues.
pub fn reject_tool_call(
    mut state: AgentState,
    tool_call_id: &str,
    reason: Option<&str>,
    halt: bool,
) -> Result<(AgentState, Option<RuntimeContext>), DecisionError> {
    let call = take_pending(&mut state, tool_call_id)?;
    let content = rejection(reason);
    let parent = state.pending_parent_message_id;
    let msg_id = write_tool_message(
        &mut state,
        &call,
        parent,
        None,
        ToolStatus::Rejected,
        &content,
    );
    if halt {
        state.status = Status::Interrupted;
        state.interruption = Some(Interruption {
            reason: "human_rejected".into(),
            interrupted_at: Utc::now(),
            interrupted_instruction: None,
            can_resume: false,
            finish_reason: None,
        });
        return Ok((state, None));
    }
    state.status = Status::Running;
    let ctx = RuntimeContext::new(Phase::ToolResult(ToolResultPayload {
        parent_message_id: parent,
        tool_message_id: msg_id,
        tool_call: call,
        status: ToolStatus::Rejected,
        content,
        execution_ms: 0,
        follow_up: None,
    }));
    Ok((state, Some(ctx)))
}

/// What the model reads for a rejected call.
fn rejection(reason: Option<&str>) -> String {
    match reason {
        Some(r) => format!("The user rejected this tool call. Reason: {r}"),
        None => "The user rejected this tool call without giving a reason.".to_owned(),
    }
}

/// Answer a pending question (`ask_user`): the answer, checked against the question, becomes
/// the call's result and the model reads it (once no other call is pending).
pub fn answer_tool_call(
    mut state: AgentState,
    tool_call_id: &str,
    answer: &Answer,
) -> Result<(AgentState, RuntimeContext), DecisionError> {
    let call = take_pending(&mut state, tool_call_id)?;
    let question =
        question_of(&call).ok_or_else(|| DecisionError::NotAQuestion(tool_call_id.to_owned()))?;
    let content = question
        .answered(answer)
        .map_err(|error| DecisionError::BadAnswer {
            call: tool_call_id.to_owned(),
            error,
        })?;
    Ok(settle_question(state, call, content))
}

/// Settle a pending question nobody answered in time (`why`: "the question expired at …"):
/// the default, when it has one, or a note that nobody answered, is the call's result.
pub fn expire_question(
    mut state: AgentState,
    tool_call_id: &str,
    why: &str,
) -> Result<(AgentState, RuntimeContext), DecisionError> {
    let call = take_pending(&mut state, tool_call_id)?;
    let question =
        question_of(&call).ok_or_else(|| DecisionError::NotAQuestion(tool_call_id.to_owned()))?;
    let content = question.unanswered(why);
    Ok(settle_question(state, call, content))
}

fn settle_question(
    mut state: AgentState,
    call: ToolCall,
    content: String,
) -> (AgentState, RuntimeContext) {
    let parent = state.pending_parent_message_id;
    let msg_id = write_tool_message(
        &mut state,
        &call,
        parent,
        None,
        ToolStatus::Succeeded,
        &content,
    );
    state.status = Status::Running;
    let ctx = RuntimeContext::new(Phase::ToolResult(ToolResultPayload {
        parent_message_id: parent,
        tool_message_id: msg_id,
        tool_call: call,
        status: ToolStatus::Succeeded,
        content,
        execution_ms: 0,
        follow_up: None,
    }));
    (state, ctx)
}

/// Whether a pending call is a question a person answers (`ask_user`).
pub fn is_question(call: &ToolCall) -> bool {
    question_of(call).is_some()
}

/// Reject every pending call with `reason` (the model would read it, but nothing more runs:
/// the caller interrupts the operation for good next). A question is declined the same way.
pub fn reject_pending(mut state: AgentState, reason: &str) -> AgentState {
    let parent = state.pending_parent_message_id;
    let content = rejection(Some(reason));
    for call in std::mem::take(&mut state.pending_tool_calls) {
        write_tool_message(
            &mut state,
            &call,
            parent,
            None,
            ToolStatus::Rejected,
            &content,
        );
    }
    state.pending_human_prompt = None;
    state.pending_human_select = None;
    state.updated_at = Utc::now();
    state
}

/// Abort everything pending: the next step settles the calls as aborted and finishes.
pub fn abort_pending(mut state: AgentState, reason: &str) -> (AgentState, RuntimeContext) {
    let tool_calls = std::mem::take(&mut state.pending_tool_calls);
    state.pending_human_prompt = None;
    state.pending_human_select = None;
    state.status = Status::Running;
    state.updated_at = Utc::now();
    let ctx = RuntimeContext::new(Phase::HumanAbort(HumanAbortPayload {
        parent_message_id: state.pending_parent_message_id,
        reason: reason.to_owned(),
        tool_calls,
    }));
    (state, ctx)
}

fn answer(mut state: AgentState, text: String) -> (AgentState, RuntimeContext) {
    let text = match crate::text::visible_controls(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(shown) => shown,
    };
    let mut m = Message::user(text);
    m.parent_id = state.messages.last().map(|l| l.id);
    let id = m.id;
    state.push_message(m);
    state.status = Status::Running;
    state.updated_at = Utc::now();
    let ctx = RuntimeContext::new(Phase::HumanResponse(HumanResponsePayload {
        message_id: Some(id),
    }));
    (state, ctx)
}

/// Answer the open free-text question; the answer becomes a user message.
pub fn answer_prompt(
    mut state: AgentState,
    text: &str,
) -> Result<(AgentState, RuntimeContext), DecisionError> {
    if state.status != Status::WaitingForHuman {
        return Err(DecisionError::NotWaiting(state.status));
    }
    if state.pending_human_prompt.take().is_none() {
        return Err(DecisionError::NoQuestion("prompt"));
    }
    Ok(answer(state, text.to_owned()))
}

/// Answer the open selection with the chosen values.
pub fn answer_select(
    mut state: AgentState,
    values: &[String],
) -> Result<(AgentState, RuntimeContext), DecisionError> {
    if state.status != Status::WaitingForHuman {
        return Err(DecisionError::NotWaiting(state.status));
    }
    if state.pending_human_select.take().is_none() {
        return Err(DecisionError::NoQuestion("selection"));
    }
    Ok(answer(state, values.join(", ")))
}
