//! `group_relabel`: in a conversation shared by several agents, a message written by another
//! agent must not read as the model's own words. Another agent's plain answer becomes a user
//! message naming its author; one with tool calls keeps its role (its results must stay paired)
//! and gains an author line. A user-role message with an author (a task from a supervisor
//! agent) is prefixed with who sent it.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{ContentPart, Role};
use std::sync::Arc;

/// Relabels other agents' messages (see the module docs).
pub struct GroupRelabel;

impl Processor for GroupRelabel {
    fn name(&self) -> &'static str {
        "group_relabel"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let me = input.agent.name.as_deref();
        for m in draft.messages.iter_mut() {
            let Some(author) = m.author.as_deref() else {
                continue;
            };
            if Some(author) == me || !matches!(m.role, Role::Assistant | Role::User) {
                continue;
            }
            let (role, prefix) = match m.role {
                Role::Assistant if m.tool_calls.is_empty() => {
                    (Role::User, format!("[Message from agent \"{author}\"]\n"))
                }
                Role::Assistant => (
                    Role::Assistant,
                    format!("[Written by agent \"{author}\"]\n"),
                ),
                _ => (Role::User, format!("[Task from agent \"{author}\"]\n")),
            };
            let msg = Arc::make_mut(m);
            msg.role = role;
            if role == Role::User {
                // Another agent's reasoning signature is meaningless to this model.
                msg.reasoning = None;
            }
            match msg.content.iter_mut().find_map(|p| match p {
                ContentPart::Text { text } => Some(text),
                ContentPart::Image { .. } | ContentPart::File { .. } => None,
            }) {
                Some(text) => text.insert_str(0, &prefix),
                None => msg.content.insert(
                    0,
                    ContentPart::Text {
                        text: prefix.trim_end().to_owned(),
                    },
                ),
            }
        }
    }
}
