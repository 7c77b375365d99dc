//! The compression summarizer: a (configurable) model condenses older messages into notes the
//! agent continues from. Nothing it is given is dropped: a transcript longer than the model's
//! window is summarized in chunks, each merged into the notes of the chunks before it, and a
//! chunk the model still refuses as too long is split again (a single message cut shorter).

use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use rein_core::Usd;
use rein_core::engine::ports::{PortError, Summarizer, Summary};
use rein_core::message::{ContentPart, Message, MessageKind, Role};
use rein_core::usage::TokenUsage;
use rein_model::{ChatRequest, ErrorKind, ModelError, ModelProvider};
use std::collections::VecDeque;
use std::fmt::Write;
use std::ops::Range;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The instructions the summarizing model gets.
pub const SUMMARY_INSTRUCTIONS: &str = "You compress conversations for an AI agent that will continue the work from your notes alone. Summarize the conversation you are given. Keep: the user's goal and constraints; decisions made; facts and results found (numbers, names, file paths, URLs, errors); which tool calls mattered and what they returned; what remains to do. Write compact notes, not a dialogue. If a previous summary is given, merge it into yours.";

/// A tool result longer than this is cut in the transcript sent for summarizing.
const MAX_RESULT_CHARS: usize = 8_000;
/// Bytes of transcript counted as one token when chunking: fewer than the ~4 of English text,
/// so a chunk estimated to fit does.
const BYTES_PER_TOKEN: u64 = 3;
/// Summary calls one compression may make (chunks and their retries) before it gives up.
const MAX_CALLS: usize = 32;
/// A single message is not cut shorter than this to make it fit.
const MIN_MESSAGE_CHARS: usize = 500;

/// Summarizes with one model of one provider.
pub struct ModelSummarizer {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// Provider id (for pricing and the usage key).
    pub provider_id: String,
    /// Model id.
    pub model: String,
    /// The model's context window in tokens, when the catalog knows it: transcripts longer
    /// than half of it are summarized in chunks from the start.
    pub window_tokens: Option<u64>,
    /// What its calls cost.
    pub pricing: crate::pricing::Pricing,
    /// Cancels the call with the operation.
    pub cancel: CancellationToken,
}

/// `text` cut to at most `max` bytes (on a character boundary), marked when cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push_str(" [...]");
    }
    text
}

/// One message as transcript lines. Tool results are cut to [`MAX_RESULT_CHARS`]; every
/// message to `limit` when given.
fn line(m: &Message, limit: Option<usize>) -> String {
    let label = match (m.role, m.kind) {
        (_, MessageKind::CompressionSummary) => "earlier summary",
        (Role::System, _) => "system",
        (Role::User, _) => "user",
        (Role::Assistant, _) => "assistant",
        (Role::Tool, _) => "tool result",
    };
    let mut text = String::new();
    for p in &m.content {
        match p {
            ContentPart::Text { text: t } => text.push_str(t),
            ContentPart::Image { .. } => text.push_str("[image]"),
            file @ ContentPart::File { .. } => {
                text.push_str(&file.file_text(Some(MAX_RESULT_CHARS)).unwrap_or_default());
            }
        }
    }
    if m.role == Role::Tool {
        text = cut(text, MAX_RESULT_CHARS);
    }
    if let Some(limit) = limit {
        text = cut(text, limit);
    }
    let mut out = match m.tool_status {
        Some(status) => format!("[{label}, {status:?}] {text}\n"),
        None => format!("[{label}] {text}\n"),
    };
    for c in &m.tool_calls {
        let _ = writeln!(out, "[assistant called {}({})]", c.key(), c.arguments);
    }
    out
}

/// The messages as plain text, oldest first.
fn transcript(messages: &[Arc<Message>], limit: Option<usize>) -> String {
    messages.iter().map(|m| line(m, limit)).collect()
}

/// Consecutive ranges of `messages` whose transcripts fit `budget` bytes each (a message larger
/// than the budget is a range of its own).
fn chunks(messages: &[Arc<Message>], budget: u64) -> VecDeque<Range<usize>> {
    let mut out = VecDeque::new();
    let (mut start, mut size) = (0, 0u64);
    for (i, m) in messages.iter().enumerate() {
        let len = line(m, None).len() as u64;
        if i > start && size + len > budget {
            out.push_back(start..i);
            (start, size) = (i, 0);
        }
        size += len;
    }
    if start < messages.len() {
        out.push_back(start..messages.len());
    }
    out
}

/// A piece of the summary's work: messages, and how long any one of them may be.
struct Piece {
    range: Range<usize>,
    limit: Option<usize>,
}

impl ModelSummarizer {
    async fn once(
        &self,
        transcript: &str,
        notes: Option<&str>,
    ) -> Result<(String, TokenUsage, Usd), ModelError> {
        let mut body = String::new();
        if let Some(s) = notes {
            let _ = write!(body, "Previous summary:\n{s}\n\n");
        }
        let _ = write!(
            body,
            "Conversation to summarize:\n<conversation>\n{transcript}</conversation>"
        );
        let mut req = ChatRequest::new(
            self.model.clone(),
            vec![
                Arc::new(Message::system(SUMMARY_INSTRUCTIONS)),
                Arc::new(Message::user(body)),
            ],
        );
        req.cancel = self.cancel.child_token();
        let mut stream = self.provider.chat(req);
        let mut collector = rein_model::Collector::new();
        while let Some(event) = stream.next().await {
            collector.push(&event);
        }
        let r = collector.finish();
        if let Some(e) = r.error {
            return Err(e);
        }
        let text = r.text.trim().to_owned();
        if text.is_empty() {
            return Err(ModelError::new(
                ErrorKind::EmptyCompletion,
                "the summarizing model returned an empty summary",
            ));
        }
        let usage = r.usage.unwrap_or_default();
        let cost = self
            .pricing
            .cost(&self.provider_id, &self.model, &usage, r.reported_cost)
            .unwrap_or(Usd::ZERO);
        Ok((text, usage, cost))
    }

    /// Summarize `messages` into `existing` notes, chunk by chunk, splitting what overflows.
    async fn rolling(
        &self,
        messages: &[Arc<Message>],
        existing: Option<&str>,
    ) -> Result<Summary, ModelError> {
        let budget = self
            .window_tokens
            .map_or(u64::MAX, |w| w / 2 * BYTES_PER_TOKEN);
        let mut todo: VecDeque<Piece> = chunks(messages, budget)
            .into_iter()
            .map(|range| Piece { range, limit: None })
            .collect();
        let mut notes = existing.map(str::to_owned);
        let (mut usage, mut cost, mut calls) = (TokenUsage::default(), Usd::ZERO, 0);
        while let Some(piece) = todo.pop_front() {
            calls += 1;
            if calls > MAX_CALLS {
                return Err(ModelError::new(
                    ErrorKind::ContextLengthExceeded,
                    format!(
                        "the conversation did not fit {} in {MAX_CALLS} summary requests",
                        self.model
                    ),
                ));
            }
            let text = transcript(&messages[piece.range.clone()], piece.limit);
            match self.once(&text, notes.as_deref()).await {
                Ok((text, u, c)) => {
                    notes = Some(text);
                    usage.add(&u);
                    cost += c;
                }
                Err(e) if e.kind == ErrorKind::ContextLengthExceeded => {
                    let Range { start, end } = piece.range;
                    if end - start > 1 {
                        let mid = start + (end - start) / 2;
                        todo.push_front(Piece {
                            range: mid..end,
                            limit: piece.limit,
                        });
                        todo.push_front(Piece {
                            range: start..mid,
                            limit: piece.limit,
                        });
                    } else {
                        let now = piece.limit.unwrap_or(text.len());
                        if now / 2 < MIN_MESSAGE_CHARS {
                            return Err(e);
                        }
                        todo.push_front(Piece {
                            range: start..end,
                            limit: Some(now / 2),
                        });
                    }
                    tracing::warn!(
                        messages = end - start,
                        "summary request too long for {}; summarizing it in smaller pieces",
                        self.model
                    );
                }
                Err(e) => return Err(e),
            }
        }
        let Some(text) = notes else {
            return Err(ModelError::new(
                ErrorKind::EmptyCompletion,
                "there was nothing to summarize",
            ));
        };
        Ok(Summary {
            text,
            usage,
            cost,
            model_key: format!("{}/{}", self.provider_id, self.model),
        })
    }
}

impl Summarizer for ModelSummarizer {
    fn summarize<'a>(
        &'a self,
        messages: &'a [Arc<Message>],
        existing_summary: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Summary, PortError>> {
        async move {
            self.rolling(messages, existing_summary)
                .await
                .map_err(|e| PortError::new(e.kind, e.message))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::message::{ToolCall, ToolStatus};

    #[test]
    fn transcript_names_roles_calls_and_outcomes() {
        let call = ToolCall::new("c1", "calculator", "evaluate", r#"{"expression":"2+2"}"#);
        let mut a = Message::assistant("let me compute");
        a.tool_calls.push(call.clone());
        let messages = vec![
            Arc::new(Message::user("what is 2+2?")),
            Arc::new(a),
            Arc::new(Message::tool_result(
                &call,
                None,
                ToolStatus::Succeeded,
                "x".repeat(MAX_RESULT_CHARS + 10),
            )),
        ];
        let t = transcript(&messages, None);
        assert!(t.starts_with("[user] what is 2+2?"));
        assert!(t.contains(r#"[assistant called calculator/evaluate({"expression":"2+2"})]"#));
        assert!(t.contains("[tool result, Succeeded] xxx"));
        assert!(t.contains(" [...]"));
        assert!(t.len() < MAX_RESULT_CHARS + 300);
    }

    #[test]
    fn chunks_fill_the_budget_in_order_and_keep_an_oversized_message_alone() {
        let messages: Vec<_> = [
            "a".repeat(40),
            "b".repeat(40),
            "c".repeat(200),
            "d".repeat(10),
        ]
        .into_iter()
        .map(|t| Arc::new(Message::user(t)))
        .collect();
        // Each line is the text plus "[user] " and a newline (8 bytes).
        assert_eq!(chunks(&messages, 100), [0..2, 2..3, 3..4]);
        let whole = chunks(&messages, u64::MAX);
        assert_eq!((whole.len(), whole.front()), (1, Some(&(0..4))));
        assert_eq!(chunks(&messages, 1), [0..1, 1..2, 2..3, 3..4]);
        assert!(chunks(&[], 100).is_empty());
        let short = line(&messages[2], Some(50));
        assert_eq!(short, format!("[user] {} [...]\n", "c".repeat(50)));
    }
}
