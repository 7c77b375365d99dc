//! Builders and a stable text rendering of messages for snapshots.
#![allow(dead_code)]

use chrono::{TimeZone, Utc};
use rein_context::{ContextInput, ContextOutput, Pipeline, StepFacts};
use rein_core::message::{ContentPart, Message, Role, ToolCall, ToolStatus};
use std::fmt::Write;
use std::sync::Arc;

pub fn user(text: &str) -> Arc<Message> {
    Arc::new(Message::user(text))
}

pub fn assistant(text: &str) -> Arc<Message> {
    Arc::new(Message::assistant(text))
}

pub fn system(text: &str) -> Arc<Message> {
    Arc::new(Message::system(text))
}

/// An assistant message calling `calls` (ids), each `calculator/evaluate`.
pub fn calling(text: &str, ids: &[&str]) -> Arc<Message> {
    let mut m = Message::assistant(text);
    m.tool_calls = ids
        .iter()
        .map(|id| ToolCall::new(*id, "calculator", "evaluate", r#"{"expression":"1+1"}"#))
        .collect();
    Arc::new(m)
}

pub fn result(id: &str, status: ToolStatus, text: &str) -> Arc<Message> {
    let call = ToolCall::new(id, "calculator", "evaluate", "{}");
    Arc::new(Message::tool_result(&call, None, status, text))
}

pub fn step() -> StepFacts {
    StepFacts {
        now: Utc.with_ymd_and_hms(2026, 11, 29, 21, 40, 0).single(),
        ..StepFacts::default()
    }
}

/// One line per message: role, kind, tool ids/status, text (newlines shown as ⏎).
pub fn render(messages: &[Arc<Message>]) -> String {
    let mut s = String::new();
    for m in messages {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let _ = write!(s, "{role}");
        if m.kind != Default::default() {
            let _ = write!(s, " ({:?})", m.kind);
        }
        if let Some(id) = &m.tool_call_id {
            let _ = write!(s, " [{id} {:?}]", m.tool_status);
        }
        for c in &m.tool_calls {
            let _ = write!(s, " ->{}", c.id);
        }
        let _ = write!(s, ":");
        for p in &m.content {
            match p {
                ContentPart::Text { text } => {
                    let _ = write!(s, " {}", text.replace('\n', "⏎"));
                }
                ContentPart::Image { url, .. } => {
                    let _ = write!(s, " <image {url}>");
                }
                ContentPart::File { name, .. } => {
                    let _ = write!(s, " <file {name}>");
                }
            }
        }
        s.push('\n');
    }
    s
}

pub fn run(pipeline: &Pipeline, input: &ContextInput<'_>) -> ContextOutput {
    pipeline.run(input)
}
