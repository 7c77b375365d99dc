//! The compression summarizer: a (configurable) model condenses older messages into notes the
//! agent continues from. When the summary request itself is too long for that model, the
//! oldest half of what is left is dropped and the request retried, a few times at most.

use futures::FutureExt;
use futures::StreamExt;
use futures::future::BoxFuture;
use rein_core::Usd;
use rein_core::engine::ports::{PortError, Summarizer, Summary};
use rein_core::message::{ContentPart, Message, MessageKind, Role};
use rein_model::{ChatRequest, ErrorKind, ModelError, ModelProvider};
use std::fmt::Write;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The instructions the summarizing model gets.
pub const SUMMARY_INSTRUCTIONS: &str = "You compress conversations for an AI agent that will continue the work from your notes alone. Summarize the conversation you are given. Keep: the user's goal and constraints; decisions made; facts and results found (numbers, names, file paths, URLs, errors); which tool calls mattered and what they returned; what remains to do. Write compact notes, not a dialogue. If a previous summary is given, merge it into yours.";

/// Halvings of the input tried when the summary request overflows the model's window.
const MAX_SHRINKS: u32 = 4;
/// A tool result longer than this is cut in the transcript sent for summarizing.
const MAX_RESULT_CHARS: usize = 8_000;

/// Summarizes with one model of one provider.
pub struct ModelSummarizer {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// Provider id (for pricing and the usage key).
    pub provider_id: String,
    /// Model id.
    pub model: String,
    /// What its calls cost.
    pub pricing: crate::pricing::Pricing,
    /// Cancels the call with the operation.
    pub cancel: CancellationToken,
}

/// The messages as plain text, oldest first.
fn transcript(messages: &[Arc<Message>], dropped: usize) -> String {
    let mut out = String::new();
    if dropped > 0 {
        let _ = writeln!(
            out,
            "[{dropped} older messages did not fit and are not shown]\n"
        );
    }
    for m in messages {
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
        if m.role == Role::Tool && text.len() > MAX_RESULT_CHARS {
            let mut cut = MAX_RESULT_CHARS;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(" [...]");
        }
        match m.tool_status {
            Some(status) => {
                let _ = writeln!(out, "[{label}, {status:?}] {text}");
            }
            None => {
                let _ = writeln!(out, "[{label}] {text}");
            }
        }
        for c in &m.tool_calls {
            let _ = writeln!(out, "[assistant called {}({})]", c.key(), c.arguments);
        }
    }
    out
}

impl ModelSummarizer {
    async fn once(
        &self,
        messages: &[Arc<Message>],
        existing: Option<&str>,
        dropped: usize,
    ) -> Result<Summary, ModelError> {
        let mut body = String::new();
        if let Some(s) = existing {
            let _ = write!(body, "Previous summary:\n{s}\n\n");
        }
        let _ = write!(
            body,
            "Conversation to summarize:\n<conversation>\n{}</conversation>",
            transcript(messages, dropped)
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
        Ok(Summary {
            text,
            cost: self
                .pricing
                .cost(&self.provider_id, &self.model, &usage, r.reported_cost)
                .unwrap_or(Usd::ZERO),
            usage,
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
            let mut from = 0;
            let mut shrinks = 0;
            loop {
                match self.once(&messages[from..], existing_summary, from).await {
                    Ok(s) => return Ok(s),
                    Err(e)
                        if e.kind == ErrorKind::ContextLengthExceeded
                            && shrinks < MAX_SHRINKS
                            && messages.len() - from > 1 =>
                    {
                        shrinks += 1;
                        from += (messages.len() - from) / 2;
                        tracing::warn!(
                            dropped = from,
                            "summary request too long for {}; retrying without the oldest messages",
                            self.model
                        );
                    }
                    Err(e) => return Err(PortError::new(e.kind.as_str(), e.message)),
                }
            }
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
        let t = transcript(&messages, 3);
        assert!(t.starts_with("[3 older messages did not fit"));
        assert!(t.contains("[user] what is 2+2?"));
        assert!(t.contains(r#"[assistant called calculator/evaluate({"expression":"2+2"})]"#));
        assert!(t.contains("[tool result, Succeeded] xxx"));
        assert!(t.contains(" [...]"));
        assert!(t.len() < MAX_RESULT_CHARS + 300);
    }
}
