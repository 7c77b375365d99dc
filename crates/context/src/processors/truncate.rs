//! `history_truncate`: keeps the newest conversation messages within the agent's limit.
//! System messages and compression summaries always stay. The cut never lands between an
//! assistant message and its tool results: it moves forward past tool messages, so no kept
//! result has lost its call.

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
        let pinned = |m: &rein_core::Message| {
            m.role == Role::System || m.kind == MessageKind::CompressionSummary
        };
        let conversation = draft.messages.iter().filter(|m| !pinned(m)).count();
        if conversation <= limit {
            return;
        }
        let mut to_drop = conversation - limit;
        let mut cutting = true;
        draft.messages.retain(|m| {
            if pinned(m) {
                return true;
            }
            if cutting && (to_drop > 0 || m.role == Role::Tool) {
                to_drop = to_drop.saturating_sub(1);
                return false;
            }
            cutting = false;
            true
        });
    }
}
