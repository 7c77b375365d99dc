//! `cleanup`, last: empty text parts go; a message left with nothing to say goes (a tool result
//! stays, saying it produced no output, because its call needs an answer); adjacent system
//! messages merge into one; adjacent user messages merge when the model requires alternating
//! roles.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{ContentPart, Message, Role};
use std::sync::Arc;

/// Final cleanup (see the module docs).
pub struct Cleanup;

impl Processor for Cleanup {
    fn name(&self) -> &'static str {
        "cleanup"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let messages = std::mem::take(&mut draft.messages);
        let mut out: Vec<Arc<Message>> = Vec::with_capacity(messages.len());
        for mut m in messages {
            if m.content.iter().any(is_empty_text) {
                Arc::make_mut(&mut m).content.retain(|p| !is_empty_text(p));
            }
            if m.content.is_empty() {
                match m.role {
                    Role::Tool => Arc::make_mut(&mut m).content.push(ContentPart::Text {
                        text: "(no output)".into(),
                    }),
                    Role::Assistant if !m.tool_calls.is_empty() || m.reasoning.is_some() => {}
                    _ => continue,
                }
            }
            let merge = out.last().is_some_and(|prev| {
                prev.role == m.role
                    && (m.role == Role::System
                        || (m.role == Role::User && input.model.alternating_roles))
            });
            match out.last_mut() {
                Some(prev) if merge => {
                    let prev = Arc::make_mut(prev);
                    prev.content.push(ContentPart::Text {
                        text: "\n\n".into(),
                    });
                    prev.content.extend(m.content.iter().cloned());
                    join_adjacent_text(&mut prev.content);
                }
                _ => out.push(m),
            }
        }
        draft.messages = out;
    }
}

fn is_empty_text(p: &ContentPart) -> bool {
    matches!(p, ContentPart::Text { text } if text.is_empty())
}

/// Consecutive text parts become one (a merged system message reads as one block).
fn join_adjacent_text(parts: &mut Vec<ContentPart>) {
    let mut joined: Vec<ContentPart> = Vec::with_capacity(parts.len());
    for p in parts.drain(..) {
        match (joined.last_mut(), p) {
            (Some(ContentPart::Text { text: a }), ContentPart::Text { text: b }) => a.push_str(&b),
            (_, p) => joined.push(p),
        }
    }
    *parts = joined;
}
