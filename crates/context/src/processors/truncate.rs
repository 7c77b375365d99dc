//! `history_truncate`: keeps the newest conversation messages within the agent's limit.
//! System messages, compression summaries and the person's latest instruction always stay (a
//! request must open with a user turn, and the model must see what it was asked). The cut
//! never lands between an assistant message and its tool results: it moves forward past tool
//! messages, so no kept result has lost its call; before the instruction it also moves past
//! the model's turns, so the kept conversation opens with a person's message.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{MessageKind, Role};

/// Keeps the newest messages (see the module docs).
pub struct HistoryTruncate;

impl Processor for HistoryTruncate {
    fn name(&self) -> &'static str {
        "history_truncate"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let Some(limit) = input.agent.history_limit else {
            return;
        };
        let instruction_at = draft
            .messages
            .iter()
            .rposition(|m| m.role == Role::User && m.kind == MessageKind::Normal);
        let instruction = instruction_at.map(|i| draft.messages[i].id);
        let pinned = |m: &rein_core::Message| {
            m.role == Role::System
                || m.kind == MessageKind::CompressionSummary
                || Some(m.id) == instruction
        };
        let conversation = draft.messages.iter().filter(|m| !pinned(m)).count();
        if conversation <= limit {
            return;
        }
        let mut to_drop = conversation - limit;
        let mut cutting = true;
        let mut at = 0;
        draft.messages.retain(|m| {
            let here = at;
            at += 1;
            if pinned(m) {
                return true;
            }
            // Before the instruction the kept part must open with a person's message: a
            // conversation cannot start with the model's turn.
            let opens_badly = m.role == Role::Tool
                || (m.role != Role::User && instruction_at.is_some_and(|i| here < i));
            if cutting && (to_drop > 0 || opens_badly) {
                to_drop = to_drop.saturating_sub(1);
                return false;
            }
            cutting = false;
            true
        });
    }
}
