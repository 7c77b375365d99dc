//! `compress_context`: older messages summarized into one, the newest kept verbatim.

use crate::agent::TokenEstimator;
use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::engine::ports::Summarizer;
use crate::event::EventKind;
use crate::instruction::{CompressContextPayload, Instruction, InstructionKind};
use crate::message::{Message, MessageKind, Role};
use crate::phase::{CompressionResultPayload, Phase};
use crate::state::AgentState;
use futures::FutureExt;
use futures::future::BoxFuture;
use std::sync::Arc;

use super::*;

/// `compress_context` over a [`Summarizer`]: leading system messages, the trailing user message
/// and the newest messages within `keep_recent_tokens` stay verbatim (the kept tail never
/// starts at a tool result, so no result loses its call); everything between becomes one
/// summary message. Any failure (or no
/// summarizer) reports `compression_error` and continues uncompressed: never a loop, never a
/// lost message.
pub struct CompressContextExecutor {
    /// The summarizer, if configured.
    pub summarizer: Option<Arc<dyn Summarizer>>,
    /// Token budget of the newest messages kept verbatim.
    pub keep_recent_tokens: u64,
    /// Measures messages for the budget.
    pub estimator: Arc<dyn TokenEstimator>,
}

impl CompressContextExecutor {
    /// Index of the first message kept verbatim at the end (`messages.len()` when none).
    fn kept_tail(&self, messages: &[Arc<Message>], head: usize) -> usize {
        let mut start = messages.len();
        let mut used = 0u64;
        for i in (head..messages.len()).rev() {
            let m = &messages[i];
            let cost = self.estimator.messages(std::slice::from_ref(m));
            let trailing_user = i + 1 == messages.len() && m.role == Role::User;
            if !trailing_user && used + cost > self.keep_recent_tokens {
                break;
            }
            used += cost;
            start = i;
        }
        // A kept tool result whose call would be summarized away is an orphan: summarize it too.
        while messages.get(start).is_some_and(|m| m.role == Role::Tool) {
            start += 1;
        }
        start
    }
}

impl PayloadExecutor for CompressContextExecutor {
    type Payload = CompressContextPayload;
    const KIND: InstructionKind = InstructionKind::CompressContext;

    payload_of!(CompressContext);

    fn run<'a>(
        &'a self,
        payload: CompressContextPayload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let parent = state.messages.last().map(|m| m.id);
            let skipped = |cx: &ExecContext<'_>, why: String| {
                cx.emit(EventKind::CompressionError { message: why });
                let next = ctx(Phase::CompressionResult(CompressionResultPayload {
                    parent_message_id: parent,
                    summary_message_id: None,
                    skipped: true,
                }));
                Ok(ExecOutput::new(next))
            };
            let Some(summarizer) = &self.summarizer else {
                return skipped(cx, "no summarizer is configured".into());
            };
            let head = state
                .messages
                .iter()
                .take_while(|m| m.role == Role::System)
                .count();
            let end = self.kept_tail(&state.messages, head);
            if end <= head + 1 {
                return skipped(cx, "nothing to compress".into());
            }
            let summary = match summarizer
                .summarize(
                    &state.messages[head..end],
                    payload.existing_summary.as_deref(),
                )
                .await
            {
                Ok(s) => s,
                Err(e) => return skipped(cx, format!("summarizer failed: {}", e.message)),
            };
            state
                .usage
                .record_llm(&summary.model_key, &summary.usage, 0);
            state.cost.record_llm(&summary.model_key, summary.cost);
            let mut msg = Message::user(summary.text);
            msg.kind = MessageKind::CompressionSummary;
            msg.model = Some(summary.model_key.clone());
            msg.usage = Some(summary.usage);
            msg.summarizes = state.messages[head..end].iter().map(|m| m.id).collect();
            msg.parent_id = head
                .checked_sub(1)
                .and_then(|i| state.messages.get(i))
                .map(|m| m.id);
            let summary_id = msg.id;
            let compressed = end - head;
            state.messages.splice(head..end, [Arc::new(msg)]);
            cx.emit(EventKind::CompressionComplete {
                summary_message_id: summary_id,
                compressed_count: u32::try_from(compressed).unwrap_or(u32::MAX),
            });
            let next = ctx(Phase::CompressionResult(CompressionResultPayload {
                parent_message_id: state.messages.last().map(|m| m.id),
                summary_message_id: Some(summary_id),
                skipped: false,
            }));
            Ok(ExecOutput::new(next))
        }
        .boxed()
    }
}
