//! An operation's events read as a front-end protocol needs them ([`Beat`]s): text and
//! reasoning opened, continued and closed (each closed before anything else is said), each
//! tool call announced once with its whole arguments and then its result, the plan as it
//! changes, steps, and how the run stopped. AG-UI (`agui.rs`) and the AI SDK's UI message
//! stream (`ui_stream.rs`) each only spell these beats in their own wire format.
//!
//! Events come from [`super::follow`]: previews and then the same events committed. Each
//! sequence number is read once (the first time it is seen), so what a preview said is not
//! said again when its step commits; how a step ended is read only from the commit.

use crate::routes::follow::Seen;
use rein_core::event::{EventKind, StreamChunk};
use rein_core::message::ToolStatus;
use rein_core::state::{FinishReason, Status, TodoItem};
use rein_core::{AgentEvent, OperationId};
use std::collections::HashSet;

/// One thing a front-end shows.
#[derive(Clone, Debug, PartialEq)]
pub enum Beat {
    /// A step began (1-based).
    StepStarted(u32),
    /// It ended.
    StepFinished(u32),
    /// The model began writing an answer text (`id`: its message).
    TextStart(String),
    /// More of it.
    TextDelta(String, String),
    /// It is complete.
    TextEnd(String),
    /// The model began reasoning (`id`: its message's reasoning).
    ReasoningStart(String),
    /// More of it.
    ReasoningDelta(String, String),
    /// It is complete.
    ReasoningEnd(String),
    /// A tool call, with its arguments as JSON text.
    ToolCall {
        /// The call's id.
        id: String,
        /// `tool/api`.
        name: String,
        /// Its arguments (a JSON text).
        arguments: String,
        /// The assistant message that asked for it.
        parent: Option<String>,
    },
    /// Its result.
    ToolResult {
        /// The call's id.
        id: String,
        /// The tool message holding it.
        message: String,
        /// How the call ended (`Rejected`: a person said no).
        status: ToolStatus,
        /// The result's text.
        content: String,
    },
    /// Calls shown before the cursor were decided without a result event (rejected, or a
    /// question answered): their results are in the operation's messages.
    Decided(Vec<String>),
    /// The plan changed (the whole plan before and after).
    Plan(Vec<TodoItem>, Vec<TodoItem>),
    /// A sub-agent started or ended (the event as rein records it).
    SubAgent(serde_json::Value),
    /// The operation parked on decisions (approvals or questions).
    Parked,
    /// It finished: why, and the detail.
    Finished(FinishReason, Option<String>),
    /// It failed.
    Failed(String, String),
    /// It was cancelled or interrupted.
    Interrupted(String),
}

/// A `todo/write` call's arguments.
#[derive(serde::Deserialize)]
struct Written {
    items: Vec<TodoItem>,
}

impl Beat {
    /// Whether it says how the run stopped (nothing more is said of it).
    pub fn is_end(&self) -> bool {
        match self {
            Beat::Parked | Beat::Finished(..) | Beat::Failed(..) | Beat::Interrupted(_) => true,
            Beat::StepStarted(_)
            | Beat::StepFinished(_)
            | Beat::TextStart(_)
            | Beat::TextDelta(..)
            | Beat::TextEnd(_)
            | Beat::ReasoningStart(_)
            | Beat::ReasoningDelta(..)
            | Beat::ReasoningEnd(_)
            | Beat::ToolCall { .. }
            | Beat::ToolResult { .. }
            | Beat::Decided(_)
            | Beat::Plan(..)
            | Beat::SubAgent(_) => false,
        }
    }
}

/// What has been said of one operation.
pub struct Beats {
    id: OperationId,
    /// The last sequence number read.
    read: Option<u64>,
    step: Option<u32>,
    writing: Option<String>,
    text: Option<String>,
    reasoning: Option<String>,
    announced: HashSet<String>,
    /// Calls shown before the cursor whose results have not been read.
    awaiting: HashSet<String>,
    /// Plan calls asked for, by call id: the plan they write.
    plans: Vec<(String, Vec<TodoItem>)>,
    plan: Vec<TodoItem>,
}

impl Beats {
    /// Beats of operation `id` after event `cursor`, its plan standing at `plan`, tool calls
    /// `shown` already announced.
    pub fn new(
        id: OperationId,
        cursor: Option<u64>,
        plan: Vec<TodoItem>,
        shown: Vec<String>,
    ) -> Self {
        Self {
            id,
            read: cursor,
            step: None,
            writing: None,
            text: None,
            reasoning: None,
            awaiting: shown.iter().cloned().collect(),
            announced: shown.into_iter().collect(),
            plans: Vec::new(),
            plan,
        }
    }

    /// The plan as it stands.
    pub fn plan(&self) -> &[TodoItem] {
        &self.plan
    }

    /// What `seen` adds (nothing if its number was read already). A preview is read only when
    /// it follows the last number read and does not end a step: how a step ended (parked,
    /// finished) is acted on once it is committed, with what the commit wrote (a parked
    /// step's interventions) readable.
    pub fn read(&mut self, seen: &Seen) -> Vec<Beat> {
        let e = seen.event();
        if e.operation_id != self.id {
            return Vec::new();
        }
        let ends = matches!(
            e.kind,
            EventKind::StepComplete { .. }
                | EventKind::Done { .. }
                | EventKind::Error { .. }
                | EventKind::Interrupted { .. }
        );
        if self.read.is_some_and(|r| e.seq <= r) {
            // A step re-run after a crash commits its own events under numbers previews of
            // the lost run took: what they said stays said, but how the step ended is read.
            if ends && matches!(seen, Seen::Committed(_)) {
                let mut out = Vec::new();
                self.event(e, &mut out);
                return out;
            }
            return Vec::new();
        }
        if let Seen::Preview(_) = seen {
            let next = self.read.map_or(0, |r| r + 1);
            if e.seq != next || ends {
                return Vec::new();
            }
        }
        self.read = Some(e.seq);
        let mut out = Vec::new();
        self.event(e, &mut out);
        out
    }

    fn close_reasoning(&mut self, out: &mut Vec<Beat>) {
        if let Some(id) = self.reasoning.take() {
            out.push(Beat::ReasoningEnd(id));
        }
    }

    fn close(&mut self, out: &mut Vec<Beat>) {
        self.close_reasoning(out);
        if let Some(id) = self.text.take() {
            out.push(Beat::TextEnd(id));
        }
    }

    fn close_step(&mut self, out: &mut Vec<Beat>) {
        self.close(out);
        if let Some(n) = self.step.take() {
            out.push(Beat::StepFinished(n));
        }
    }

    fn announce(&mut self, call: &rein_core::message::ToolCall, out: &mut Vec<Beat>) {
        if !self.announced.insert(call.id.to_string()) {
            return;
        }
        if call.key() == "todo/write"
            && let Ok(plan) = serde_json::from_str::<Written>(&call.arguments)
        {
            self.plans.push((call.id.to_string(), plan.items));
        }
        out.push(Beat::ToolCall {
            id: call.id.to_string(),
            name: call.key(),
            arguments: call.arguments.to_string(),
            parent: self.writing.clone(),
        });
    }

    fn event(&mut self, e: &AgentEvent, out: &mut Vec<Beat>) {
        match &e.kind {
            EventKind::StepStart { .. } => {
                self.close_step(out);
                self.step = Some(e.step);
                out.push(Beat::StepStarted(e.step));
            }
            EventKind::LlmStart {
                assistant_message_id,
                ..
            } => {
                self.close(out);
                self.writing = Some(assistant_message_id.to_string());
            }
            EventKind::LlmStream {
                assistant_message_id,
                chunk,
            } => match chunk {
                StreamChunk::Reasoning { text } if !text.is_empty() => {
                    let id = format!("{assistant_message_id}-reasoning");
                    if self.reasoning.as_ref().is_some_and(|open| *open != id) {
                        self.close(out);
                    }
                    if self.reasoning.is_none() {
                        out.push(Beat::ReasoningStart(id.clone()));
                        self.reasoning = Some(id.clone());
                    }
                    out.push(Beat::ReasoningDelta(id, text.clone()));
                }
                StreamChunk::Text { text } if !text.is_empty() => {
                    // The reasoning comes before the answer it leads to.
                    self.close_reasoning(out);
                    let id = assistant_message_id.to_string();
                    // Another message's text (a step begun without its start read) closes
                    // what was open.
                    if self.text.as_ref().is_some_and(|open| *open != id) {
                        self.close(out);
                    }
                    if self.text.is_none() {
                        out.push(Beat::TextStart(id.clone()));
                        self.text = Some(id.clone());
                    }
                    out.push(Beat::TextDelta(id, text.clone()));
                }
                StreamChunk::Reasoning { .. }
                | StreamChunk::Text { .. }
                | StreamChunk::ToolCall { .. } => {}
            },
            EventKind::LlmResult { tool_calls, .. } => {
                self.close(out);
                for c in tool_calls {
                    self.announce(c, out);
                }
            }
            EventKind::ToolPending { tool_calls } => {
                self.close(out);
                for c in tool_calls {
                    self.announce(c, out);
                }
            }
            EventKind::HumanApproveRequired {
                pending_tool_calls, ..
            } => {
                self.close(out);
                for c in pending_tool_calls {
                    self.announce(c, out);
                }
            }
            EventKind::ToolResult {
                tool_call_id,
                tool_message_id,
                status,
                content,
                ..
            } => {
                self.close(out);
                let ok = *status == ToolStatus::Succeeded;
                self.awaiting.remove(&**tool_call_id);
                out.push(Beat::ToolResult {
                    id: tool_call_id.to_string(),
                    message: tool_message_id.to_string(),
                    status: *status,
                    content: content.to_string(),
                });
                if let Some(at) = self.plans.iter().position(|(id, _)| **id == **tool_call_id) {
                    let (_, plan) = self.plans.swap_remove(at);
                    if ok && plan != self.plan {
                        let before = std::mem::replace(&mut self.plan, plan.clone());
                        out.push(Beat::Plan(before, plan));
                    }
                }
            }
            EventKind::SubAgentStarted { .. } | EventKind::SubAgentEnded { .. } => {
                if let Ok(v) = serde_json::to_value(e) {
                    out.push(Beat::SubAgent(v));
                }
            }
            EventKind::StepComplete { status, .. } => {
                self.close_step(out);
                if !self.awaiting.is_empty() {
                    let mut ids: Vec<String> = self.awaiting.drain().collect();
                    ids.sort();
                    out.push(Beat::Decided(ids));
                }
                if matches!(status, Status::WaitingForHuman) {
                    out.push(Beat::Parked);
                }
            }
            EventKind::Done {
                reason,
                reason_detail,
            } => {
                self.close_step(out);
                out.push(Beat::Finished(*reason, reason_detail.clone()));
            }
            EventKind::Error { code, message } => {
                self.close_step(out);
                out.push(Beat::Failed(code.as_str().to_owned(), message.clone()));
            }
            EventKind::Interrupted { reason, .. } => {
                self.close_step(out);
                out.push(Beat::Interrupted(reason.clone()));
            }
            EventKind::ContextReport { .. }
            | EventKind::StreamRetry { .. }
            | EventKind::HumanPromptRequired { .. }
            | EventKind::HumanSelectRequired { .. }
            | EventKind::CompressionComplete { .. }
            | EventKind::CompressionError { .. }
            | EventKind::BudgetExceeded { .. }
            | EventKind::Resumed { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::MessageId;

    fn at(id: OperationId, seq: u64, kind: EventKind) -> AgentEvent {
        AgentEvent {
            operation_id: id,
            step: 1,
            seq,
            kind,
        }
    }

    fn text(writing: MessageId, t: &str) -> EventKind {
        EventKind::LlmStream {
            assistant_message_id: writing,
            chunk: StreamChunk::Text { text: t.into() },
        }
    }

    fn parked() -> EventKind {
        EventKind::StepComplete {
            status: Status::WaitingForHuman,
            instructions: Vec::new(),
        }
    }

    #[test]
    fn previews_are_said_once_and_a_step_ends_only_when_committed() {
        let id = OperationId::new();
        let m = MessageId::new();
        let mut beats = Beats::new(id, None, Vec::new(), Vec::new());
        let start = EventKind::StepStart {
            phase: "user_input".into(),
        };
        let said = beats.read(&Seen::Preview(at(id, 0, start.clone())));
        assert_eq!(said, [Beat::StepStarted(1)]);
        assert_eq!(
            beats.read(&Seen::Preview(at(id, 1, text(m, "Hel")))),
            [
                Beat::TextStart(m.to_string()),
                Beat::TextDelta(m.to_string(), "Hel".into())
            ]
        );
        // How the step ended is not taken from a preview, nor anything after it.
        assert!(beats.read(&Seen::Preview(at(id, 2, parked()))).is_empty());
        assert!(
            beats
                .read(&Seen::Preview(at(id, 3, start.clone())))
                .is_empty()
        );
        // The commit: what the previews said is not said again; the end is.
        assert!(beats.read(&Seen::Committed(at(id, 0, start))).is_empty());
        assert!(
            beats
                .read(&Seen::Committed(at(id, 1, text(m, "Hel"))))
                .is_empty()
        );
        assert_eq!(
            beats.read(&Seen::Committed(at(id, 2, parked()))),
            [
                Beat::TextEnd(m.to_string()),
                Beat::StepFinished(1),
                Beat::Parked
            ]
        );
    }

    #[test]
    fn a_step_rerun_under_previewed_numbers_still_says_how_it_ended() {
        let id = OperationId::new();
        let (lost, rerun) = (MessageId::new(), MessageId::new());
        let mut beats = Beats::new(id, None, Vec::new(), Vec::new());
        for (seq, t) in [(0, "a"), (1, "b"), (2, "c")] {
            assert!(
                !beats
                    .read(&Seen::Preview(at(id, seq, text(lost, t))))
                    .is_empty()
            );
        }
        // The process died; the step ran again and committed two events.
        assert!(
            beats
                .read(&Seen::Committed(at(id, 0, text(rerun, "x"))))
                .is_empty()
        );
        let end = beats.read(&Seen::Committed(at(id, 1, parked())));
        assert_eq!(end.last(), Some(&Beat::Parked), "{end:?}");
    }
}
