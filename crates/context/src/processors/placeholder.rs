//! `placeholder_filter`: drops what is not yet (or never became) content: tool messages still
//! waiting for a human or for execution, and assistant messages left empty by an abandoned
//! stream. A call whose placeholder is dropped is answered later by tool-call pairing.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{Role, ToolStatus};

/// Drops placeholders (see the module docs).
pub struct PlaceholderFilter;

impl Processor for PlaceholderFilter {
    fn name(&self) -> &'static str {
        "placeholder_filter"
    }

    fn process(&self, _input: &ContextInput<'_>, draft: &mut Draft) {
        draft.messages.retain(|m| match m.role {
            Role::Tool => !matches!(
                m.tool_status,
                Some(ToolStatus::Pending) | Some(ToolStatus::Approved)
            ),
            Role::Assistant => {
                !(m.tool_calls.is_empty()
                    && m.reasoning.is_none()
                    && m.content.iter().all(is_blank))
            }
            _ => true,
        });
    }
}

fn is_blank(p: &rein_core::message::ContentPart) -> bool {
    matches!(p, rein_core::message::ContentPart::Text { text } if text.trim().is_empty())
}
