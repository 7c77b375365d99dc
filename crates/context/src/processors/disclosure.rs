//! `tool_disclosure`: with progressive disclosure, inactive tools cost one line each instead of
//! a full schema. The model sees their names and descriptions and activates what it needs with
//! `activate_tools`; the schemas arrive from the next step on.

use super::leading_system;
use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::Message;
use std::fmt::Write;
use std::sync::Arc;

/// Lists inactive tools (see the module docs).
pub struct ToolDisclosure;

impl Processor for ToolDisclosure {
    fn name(&self) -> &'static str {
        "tool_disclosure"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        if input.step.inactive_tools.is_empty() || input.step.force_finish {
            return;
        }
        let mut text = String::from(
            "More tools are available. To use any of them, call `activate_tools` with their names; \
             they can be called from your next step on:\n",
        );
        for t in &input.step.inactive_tools {
            let _ = writeln!(
                text,
                "- {}: {}",
                t.name,
                t.description.lines().next().unwrap_or("")
            );
        }
        let at = leading_system(&draft.messages);
        draft
            .messages
            .insert(at, Arc::new(Message::system(text.trim_end())));
    }
}
