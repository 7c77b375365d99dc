//! `system_role`: one system message in the head system block (after any stored system
//! messages, which are the agent's own instructions): the agent's role, its name, the date, the
//! model's identity, workspace facts, the instructions of the tools this call offers
//! (their manifests' system roles), and what data blocks are (`spotlight`). The date is given to the day, not the second: the
//! head of the prompt stays byte-identical within a day, so provider prompt caches keep hitting.

use super::leading_system;
use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::Message;
use std::fmt::Write;
use std::sync::Arc;

/// Assembles the head system message (see the module docs).
pub struct SystemRole;

impl Processor for SystemRole {
    fn name(&self) -> &'static str {
        "system_role"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let mut text = String::new();
        if let Some(role) = input.agent.system_role.as_deref().map(str::trim)
            && !role.is_empty()
        {
            text.push_str(role);
            text.push_str("\n\n");
        }
        if let Some(name) = &input.agent.name {
            let _ = writeln!(text, "Your name is {name}.");
        }
        if let Some(now) = input.step.now {
            let _ = writeln!(text, "Current date: {} (UTC).", now.format("%Y-%m-%d, %A"));
        }
        if !input.model.id.is_empty() {
            let _ = writeln!(text, "You are the model {}.", input.model.id);
        }
        if let Some(wd) = &input.step.working_directory {
            let _ = writeln!(text, "Working directory: {}", wd.display());
        }
        if let Some(os) = &input.step.os {
            let _ = writeln!(text, "Operating system: {os}");
        }
        for (tool, role) in &input.agent.tool_roles {
            let role = role.trim();
            if !role.is_empty() {
                let _ = write!(text, "\n<tool name=\"{tool}\">\n{role}\n</tool>\n");
            }
        }
        if super::spotlight::applies(input) {
            let _ = write!(text, "\n{}\n", super::spotlight::NOTICE);
        }
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        // After any stored system messages: those are the agent's own instructions.
        let at = leading_system(&draft.messages);
        draft.messages.insert(at, Arc::new(Message::system(text)));
    }
}
