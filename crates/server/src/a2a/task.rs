//! A task is one rein operation: its id the operation's, its context the operation's topic.
//! This file says what a task looks like (state, status message, answer, history) from the
//! operation's record and state, and turns a client's reply into decisions on what it waits on.

use super::rpc::A2aError;
use super::wire::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
use crate::AppState;
use crate::routes::operations::{DecisionIn, DecisionKind};
use rein_core::question::Question;
use rein_core::state::{FinishReason, Status};
use rein_store::{Intervention, OperationRecord, Store as _};
use serde_json::{Value, json};

/// The artifact id of a task's answer.
pub const ANSWER: &str = "answer";

/// What a client sees of a task at one moment: its state and what rein says about it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The task's state.
    pub state: TaskState,
    /// What it waits for (input-required) or why it ended (failed, canceled).
    pub message: Option<Message>,
    /// Its answer (completed).
    pub answer: Option<String>,
}

/// The caller's task `id` (an operation of theirs at the top of its tree; anything else, a
/// sub-agent's or another user's, is not found).
pub async fn owned(
    app: &AppState,
    user: &rein_store::User,
    id: &str,
) -> Result<OperationRecord, A2aError> {
    let record = crate::routes::owned_record(app, user, id)
        .await
        .map_err(|e| {
            if e.status.is_client_error() {
                // Not an operation id, or not the caller's: either way not a task of theirs.
                A2aError::TaskNotFound(id.to_owned())
            } else {
                A2aError::from(e)
            }
        })?;
    if record.parent_operation.is_some() {
        return Err(A2aError::TaskNotFound(id.to_owned()));
    }
    Ok(record)
}

/// Where operation `record` stands as a task, with the calls its tree waits on when parked
/// and its answer when completed.
pub async fn look(app: &AppState, record: &OperationRecord) -> Result<Seen, A2aError> {
    look_with(app, record, true).await
}

/// [`look`], the answer read only when `answer` (reading it loads the operation's state).
pub async fn look_with(
    app: &AppState,
    record: &OperationRecord,
    answer: bool,
) -> Result<Seen, A2aError> {
    let id = record.id;
    let said = |state, text: String| Seen {
        state,
        message: Some(agent_message(record, vec![Part::text(text)])),
        answer: None,
    };
    let plain = |state| Seen {
        state,
        message: None,
        answer: None,
    };
    Ok(match record.status {
        Status::Idle | Status::Queued => plain(TaskState::Submitted),
        Status::Running | Status::WaitingForAsyncTool => plain(TaskState::Working),
        Status::WaitingForHuman | Status::WaitingForSubAgents => {
            let pending = crate::routes::front_turn::waiting(app, id).await?;
            if pending.is_empty() {
                plain(TaskState::Working)
            } else {
                Seen {
                    state: TaskState::InputRequired,
                    message: Some(agent_message(record, asks(&pending))),
                    answer: None,
                }
            }
        }
        Status::Interrupted if record.cancel_requested => said(
            TaskState::Canceled,
            crate::routes::operations::why_ended(record),
        ),
        Status::Interrupted | Status::Error => said(
            TaskState::Failed,
            crate::routes::operations::why_ended(record),
        ),
        Status::Done => match record.finish_reason {
            Some(r) if r.is_success() => {
                let answer = if answer {
                    Some(
                        app.store
                            .load_operation(id)
                            .await?
                            .and_then(|op| op.state.final_answer())
                            .unwrap_or_default(),
                    )
                } else {
                    None
                };
                Seen {
                    state: TaskState::Completed,
                    message: None,
                    answer,
                }
            }
            Some(FinishReason::UserRequested | FinishReason::UserAborted) => said(
                TaskState::Canceled,
                crate::routes::operations::why_ended(record),
            ),
            _ => said(
                TaskState::Failed,
                crate::routes::operations::why_ended(record),
            ),
        },
    })
}

/// A message of rein's about task `record`.
pub fn agent_message(record: &OperationRecord, parts: Vec<Part>) -> Message {
    Message {
        message_id: format!("{}-{}", record.id, record.commit_seq),
        context_id: Some(record.topic_id.clone()),
        task_id: Some(record.id.to_string()),
        role: Role::Agent,
        parts,
        metadata: None,
    }
}

/// What a parked tree waits on, as parts: a sentence and a data part for each call.
fn asks(pending: &[Intervention]) -> Vec<Part> {
    let mut parts = Vec::with_capacity(pending.len() * 2);
    for w in pending {
        let call = &w.call;
        match Question::of_call(call) {
            Some(Ok(q)) => {
                parts.push(Part::text(q.question.clone()));
                parts.push(Part::data(json!({
                    "kind": "question",
                    "toolCallId": call.id.to_string(),
                    "question": q.question,
                    "options": q.options.iter().map(|o| json!({"key": o.key, "label": o.label})).collect::<Vec<_>>(),
                })));
            }
            Some(Err(_)) | None => {
                let why = w.reason.as_ref().map(|r| r.line());
                parts.push(Part::text(format!(
                    "rein asks before running {} with {}{}: reply with a data part {{\"decision\": \"approve\"}} or {{\"decision\": \"reject\", \"reason\": \"…\"}}",
                    call.key(),
                    call.arguments,
                    why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default()
                )));
                parts.push(Part::data(json!({
                    "kind": "approval",
                    "toolCallId": call.id.to_string(),
                    "tool": call.key(),
                    "arguments": serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::String(call.arguments.to_string())),
                    "reason": why,
                })));
            }
        }
    }
    parts
}

/// The task operation `record` is, seen as `seen`, with at most `history` messages of its
/// history (all when `None`) and its answer as an artifact when `artifacts`.
pub fn task(record: &OperationRecord, seen: &Seen, history: Option<u32>, artifacts: bool) -> Task {
    let id = record.id.to_string();
    let mut messages = Vec::new();
    if let Some(prompt) = &record.prompt {
        messages.push(Message {
            message_id: format!("{id}-prompt"),
            context_id: Some(record.topic_id.clone()),
            task_id: Some(id.clone()),
            role: Role::User,
            parts: vec![Part::text(prompt.clone())],
            metadata: None,
        });
    }
    if let Some(answer) = &seen.answer {
        messages.push(Message {
            message_id: format!("{id}-answer"),
            context_id: Some(record.topic_id.clone()),
            task_id: Some(id.clone()),
            role: Role::Agent,
            parts: vec![Part::text(answer.clone())],
            metadata: None,
        });
    }
    if let Some(n) = history {
        let keep = messages.len().saturating_sub(n as usize);
        messages.drain(..keep);
    }
    Task {
        id,
        context_id: record.topic_id.clone(),
        status: TaskStatus {
            state: seen.state,
            message: seen.message.clone(),
            timestamp: Some(record.updated_at.to_rfc3339()),
        },
        artifacts: match (&seen.answer, artifacts) {
            (Some(a), true) => vec![answer_artifact(a)],
            _ => Vec::new(),
        },
        history: messages,
        metadata: Some(json!({
            "rein": {
                "status": record.status,
                "agent": record.agent,
                "steps": record.step_count,
                "totalTokens": record.total_tokens,
                "cost": record.cost,
            }
        })),
    }
}

/// A task's answer as its artifact.
pub fn answer_artifact(answer: &str) -> Artifact {
    Artifact {
        artifact_id: ANSWER.into(),
        name: Some("answer".into()),
        parts: vec![Part::text(answer)],
    }
}

/// What a client's message says, read at the edge: its text, and its data parts (objects).
pub struct Said {
    /// The text parts, joined by blank lines.
    pub text: String,
    /// The data parts.
    pub data: Vec<serde_json::Map<String, Value>>,
}

impl Said {
    /// Read `message`'s parts; a file part (rein takes uploads through `POST /v1/files`) or a
    /// data part that is not an object is refused, naming it.
    pub fn of(message: &Message) -> Result<Self, A2aError> {
        if message.role != Role::User {
            return Err(A2aError::InvalidParams(
                "message.role: a client's message is ROLE_USER".into(),
            ));
        }
        let mut texts = Vec::new();
        let mut data = Vec::new();
        for (i, p) in message.parts.iter().enumerate() {
            match (&p.text, &p.data, p.raw.is_some() || p.url.is_some()) {
                (Some(t), None, false) => texts.push(t.clone()),
                (None, Some(Value::Object(d)), false) => data.push(d.clone()),
                (None, Some(_), false) => {
                    return Err(A2aError::InvalidParams(format!(
                        "message.parts[{i}].data: rein reads data parts that are JSON objects"
                    )));
                }
                (None, None, true) => {
                    return Err(A2aError::ContentType(format!(
                        "message.parts[{i}]: rein takes text and data parts, not files (upload a file with POST /v1/files and name it in the text)"
                    )));
                }
                _ => {
                    return Err(A2aError::InvalidParams(format!(
                        "message.parts[{i}]: a part is exactly one of text, data, raw or url"
                    )));
                }
            }
        }
        Ok(Self {
            text: texts.join("\n\n"),
            data,
        })
    }
}

/// The decisions a reply to a parked task makes on each call it waits on: an approval takes a
/// data part `{"decision": "approve" | "reject", "reason"?, "toolCallId"?}` (without a call id
/// it decides every approval asked); a question takes a data part `{"answer"}` or
/// `{"option"}` (with an optional `toolCallId`), or the message's text.
pub fn decisions(pending: &[Intervention], said: &Said) -> Result<Vec<DecisionIn>, A2aError> {
    let for_call = |id: &str, key: &str| {
        said.data.iter().find(|d| {
            d.contains_key(key)
                && d.get("toolCallId")
                    .and_then(Value::as_str)
                    .is_none_or(|c| c == id)
        })
    };
    let text_of = |d: &serde_json::Map<String, Value>, key: &str| {
        d.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .filter(|s| !s.trim().is_empty())
    };
    let mut out = Vec::with_capacity(pending.len());
    for w in pending {
        let id = w.call.id.to_string();
        let blank = DecisionIn {
            tool_call_id: id.clone(),
            decision: DecisionKind::Reject,
            reason: None,
            halt: false,
            text: None,
            option: None,
            grant: None,
        };
        if Question::of_call(&w.call).is_some() {
            let decided = if let Some(d) = for_call(&id, "option") {
                DecisionIn {
                    decision: DecisionKind::Select,
                    option: text_of(d, "option"),
                    ..blank
                }
            } else if let Some(d) = for_call(&id, "answer") {
                DecisionIn {
                    decision: DecisionKind::Answer,
                    text: text_of(d, "answer"),
                    ..blank
                }
            } else if !said.text.trim().is_empty() {
                DecisionIn {
                    decision: DecisionKind::Answer,
                    text: Some(said.text.clone()),
                    ..blank
                }
            } else {
                return Err(A2aError::InvalidParams(format!(
                    "the task waits for an answer to question {id}: reply with text, or a data part {{\"answer\": \"…\"}} or {{\"option\": \"KEY\"}}"
                )));
            };
            out.push(decided);
            continue;
        }
        let Some(d) = for_call(&id, "decision") else {
            return Err(A2aError::InvalidParams(format!(
                "the task waits for an approval of tool call {id} ({}): reply with a data part {{\"decision\": \"approve\"}} or {{\"decision\": \"reject\", \"reason\": \"…\"}}",
                w.call.key()
            )));
        };
        let decision = match d.get("decision").and_then(Value::as_str) {
            Some("approve") => DecisionKind::Approve,
            Some("reject") => DecisionKind::Reject,
            other => {
                return Err(A2aError::InvalidParams(format!(
                    "decision: \"approve\" or \"reject\", not {}",
                    other.map_or_else(|| "a non-string".to_owned(), |o| format!("\"{o}\""))
                )));
            }
        };
        out.push(DecisionIn {
            decision,
            reason: text_of(d, "reason"),
            ..blank
        });
    }
    Ok(out)
}
