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

/// `compress_context` over a [`Summarizer`]: leading system messages stay; the newest messages
/// within `keep_recent_tokens` stay verbatim, and always the newest tool round whole (the
/// assistant's calls with their results: the kept tail never starts at a tool result, so no
/// result loses its call); the person's latest instruction stays verbatim wherever it was;
/// everything else becomes one summary message. The compressed history reads: system
/// messages, the summary, the latest instruction, the kept tail — a request every provider
/// takes (a user turn after the system prompt, every call with its result). Any failure (or no
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

/// What a compression keeps and what it replaces: the one decision, made over the messages
/// (see [`CompressContextExecutor`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// The leading system messages: `..head`.
    pub head: usize,
    /// The first message of the tail kept verbatim (`messages.len()` when none is).
    pub end: usize,
    /// The person's message kept between the summary and the tail when the tail does not open
    /// with one: the latest instruction when it falls before the tail. Kept, not summarized.
    pub instruction: Option<usize>,
}

impl Kept {
    /// Decide over `messages`: the tail within `keep_recent_tokens` as `estimator` counts
    /// it, and always the newest tool round whole.
    pub fn of(
        messages: &[Arc<Message>],
        keep_recent_tokens: u64,
        estimator: &dyn TokenEstimator,
    ) -> Self {
        let head = messages
            .iter()
            .take_while(|m| m.role == Role::System)
            .count();
        let mut end = messages.len();
        let mut used = 0u64;
        for i in (head..messages.len()).rev() {
            let m = &messages[i];
            let cost = estimator.messages(std::slice::from_ref(m));
            let trailing_user = i + 1 == messages.len() && m.role == Role::User;
            if !trailing_user && used + cost > keep_recent_tokens {
                break;
            }
            used += cost;
            end = i;
        }
        // The newest tool round is kept whole, whatever it costs: the model continues from it.
        if messages.last().is_some_and(|m| m.role == Role::Tool)
            && let Some(round) = (head..messages.len()).rev().find(|&i| {
                messages[i].role == Role::Assistant && !messages[i].tool_calls.is_empty()
            })
        {
            end = end.min(round);
        }
        // A kept tool result whose call would be summarized away is an orphan: summarize it too.
        while messages.get(end).is_some_and(|m| m.role == Role::Tool) {
            end += 1;
        }
        // The conversation after the summary opens with a person's message: the tail's first,
        // or else the last one before the tail (the latest instruction, when it is there).
        let person = |m: &Message| m.role == Role::User && m.kind == MessageKind::Normal;
        let instruction = if messages.get(end).is_some_and(|m| person(m)) {
            None
        } else {
            (head..end).rev().find(|&i| person(&messages[i]))
        };
        Self {
            head,
            end,
            instruction,
        }
    }

    /// The messages the summary replaces, in order.
    pub fn replaced(&self, messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
        (self.head..self.end.min(messages.len()))
            .filter(|&i| Some(i) != self.instruction)
            .map(|i| Arc::clone(&messages[i]))
            .collect()
    }

    /// Put `summary` in place of what it replaces: system messages, the summary, the latest
    /// instruction, the kept tail.
    pub fn apply(&self, messages: &mut Vec<Arc<Message>>, summary: Message) {
        let kept = self.instruction.map(|i| Arc::clone(&messages[i]));
        let end = self.end.min(messages.len());
        messages.splice(
            self.head..end,
            std::iter::once(Arc::new(summary)).chain(kept),
        );
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
            let kept = Kept::of(&state.messages, self.keep_recent_tokens, &*self.estimator);
            let replaced = kept.replaced(&state.messages);
            if replaced.len() < 2 {
                return skipped(cx, "nothing to compress".into());
            }
            let summary = match summarizer
                .summarize(&replaced, payload.existing_summary.as_deref())
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
            msg.summarizes = replaced.iter().map(|m| m.id).collect();
            msg.parent_id = kept
                .head
                .checked_sub(1)
                .and_then(|i| state.messages.get(i))
                .map(|m| m.id);
            let summary_id = msg.id;
            let compressed = replaced.len();
            kept.apply(&mut state.messages, msg);
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
