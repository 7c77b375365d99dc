//! `tool_result_limit`: one huge tool result must not crowd out the conversation. Results over
//! the agent's limit keep their head and tail (errors and summaries tend to sit at the end)
//! with a marker saying how much was cut.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{ContentPart, Role};
use std::sync::Arc;

/// Caps tool result text (see the module docs).
pub struct ToolResultLimit;

impl Processor for ToolResultLimit {
    fn name(&self) -> &'static str {
        "tool_result_limit"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let Some(limit) = input.agent.max_tool_result_chars else {
            return;
        };
        for m in draft.messages.iter_mut() {
            if m.role != Role::Tool || !m.content.iter().any(|p| text_len(p) > limit) {
                continue;
            }
            for part in Arc::make_mut(m).content.iter_mut() {
                if let ContentPart::Text { text } = part
                    && text.len() > limit
                {
                    *text = head_and_tail(text, limit);
                }
            }
        }
    }
}

fn text_len(p: &ContentPart) -> usize {
    match p {
        ContentPart::Text { text } => text.len(),
        ContentPart::Image { .. } | ContentPart::File { .. } => 0,
    }
}

/// At most about `limit` bytes: the first and last halves, cut on char boundaries.
fn head_and_tail(text: &str, limit: usize) -> String {
    let half = limit / 2;
    let mut head_end = half.min(text.len());
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len().saturating_sub(half).max(head_end);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let cut = tail_start - head_end;
    format!(
        "{}\n[... {cut} bytes of tool output omitted ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::head_and_tail;

    #[test]
    fn keeps_head_and_tail_on_char_boundaries() {
        let text = "é".repeat(100);
        let out = head_and_tail(&text, 21);
        assert!(out.starts_with("éééé"));
        assert!(out.ends_with("éééé"));
        assert!(out.contains("bytes of tool output omitted"));
    }
}
