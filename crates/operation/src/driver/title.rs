//! A topic's title proposed by the system model once its first exchange has ended well (when
//! the host names one): it replaces the title made from the prompt, never one a person chose.
//! Best effort: a failure leaves the prompt's title and is logged, it never fails the run.

use super::Driver;
use rein_core::message::Role;
use rein_core::{AgentState, conversation::title_from};
use rein_store::TitleSource;
use std::fmt::Write;

/// The instructions the titling model gets.
pub const TITLE_INSTRUCTIONS: &str = "You name conversations. Reply with a title of at most six words that says what the conversation below is about, in the language of the user's message. No quotes, no punctuation at the end, nothing else.";

/// How much of each message the titling model reads.
const EXCERPT_CHARS: usize = 2_000;

impl Driver {
    /// Title `state`'s topic from its first exchange, if the host names a system model and the
    /// topic's title still comes from the prompt.
    pub(super) async fn title_topic(&self, state: &AgentState) {
        let (true, Some(topic)) = (self.has_system_model(), state.metadata.topic_id.as_deref())
        else {
            return;
        };
        match self.store.topic(topic).await {
            Ok(Some(t)) if t.title_source == TitleSource::Prompt => {}
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(topic, error = %e, "cannot read the topic to title it");
                return;
            }
        }
        let mut exchange = String::new();
        for m in state.messages.iter().filter(|m| m.tool_call_id.is_none()) {
            let who = match m.role {
                Role::User => "User",
                Role::Assistant => "Assistant",
                _ => continue,
            };
            let text: String = m.text_content().chars().take(EXCERPT_CHARS).collect();
            if !text.trim().is_empty() {
                let _ = writeln!(exchange, "{who}: {text}");
            }
        }
        let reply = match self
            .ask_system_model(
                TITLE_INSTRUCTIONS,
                format!("<conversation>\n{exchange}</conversation>"),
                rein_model::request::ResponseFormat::Text,
            )
            .await
        {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(topic, error = %e, "no title from the system model; the prompt's title stays");
                return;
            }
        };
        let proposed = reply.trim().trim_matches(|c| matches!(c, '"' | '\'' | '*'));
        let Some(title) = title_from(proposed) else {
            tracing::warn!(
                topic,
                "the system model proposed no title; the prompt's title stays"
            );
            return;
        };
        if let Err(e) = self
            .store
            .set_topic_title(topic, &title, TitleSource::Model)
            .await
        {
            tracing::warn!(topic, error = %e, "cannot store the proposed title");
        }
    }
}
