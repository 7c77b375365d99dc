//! `summary_placement`: a compression summary stands for everything before it. It goes right
//! after the head system block, as a system message that says what it is, so the model treats
//! it as background rather than as something the user just said.

use super::leading_system;
use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{Message, MessageKind};
use std::sync::Arc;

/// Places and labels the compression summary (see the module docs).
pub struct SummaryPlacement;

impl Processor for SummaryPlacement {
    fn name(&self) -> &'static str {
        "summary_placement"
    }

    fn process(&self, _input: &ContextInput<'_>, draft: &mut Draft) {
        if !draft
            .messages
            .iter()
            .any(|m| m.kind == MessageKind::CompressionSummary)
        {
            return;
        }
        let mut summaries = Vec::new();
        draft.messages.retain(|m| {
            if m.kind == MessageKind::CompressionSummary {
                summaries.push(m.text_content());
                false
            } else {
                true
            }
        });
        let text = format!(
            "Summary of the earlier conversation (older messages were compressed into it):\n\n{}",
            summaries.join("\n\n")
        );
        let mut msg = Message::system(text);
        msg.kind = MessageKind::CompressionSummary;
        let at = leading_system(&draft.messages);
        draft.messages.insert(at, Arc::new(msg));
    }
}
