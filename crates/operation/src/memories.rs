//! Memory that learns: after an operation ends, a model reads its conversation and proposes
//! what to remember about the user (facts, preferences, ongoing projects), each with the user
//! message it came from, in structured output. The store applies the proposals in one
//! transaction with the extraction's queue entry: duplicates merge, a proposal about a subject
//! already remembered with other words replaces the old memory (kept as history), a fact the
//! user told rein to forget stays forgotten. It runs off the hot path: `rein run` after the
//! answer is printed, `rein serve` in a background loop; a failed extraction is retried with
//! backoff (30 s, 1 min, 2 min, 4 min) and then given up with its error. The queue is the store's
//! (every finished top-level operation of a user who has not turned extraction off), so an
//! extraction interrupted by a crash is simply found again. An agent with `memory: agent` learns
//! into memories of its own, which only it reads ([`private_pool`]).

use crate::driver::ask_json;
use crate::models::ModelSource;
use chrono::Utc;
use rein_core::Role;
use rein_core::spec::MemoryScope;
use rein_core::state::ModelRef;
use rein_store::{
    Applied, ExtractionTask, MemoryCategory, MemoryPool, NewMemory, Store, StoreError,
};
use rein_tools::documents::{Embedder, embed_one};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Attempts before an extraction is given up.
const TRIES: u64 = 5;

/// How long after its attempt number `attempts` (0 for the first) failed an extraction is
/// tried again: 30 s, 1, 2 and 4 minutes; `None` once it has had its [`TRIES`].
fn retry_after(attempts: u64) -> Option<chrono::Duration> {
    (attempts + 1 < TRIES).then(|| chrono::Duration::seconds(30 << attempts.min(8)))
}

/// The most characters a memory's text may have (one sentence).
pub const MAX_TEXT_CHARS: usize = 500;

/// Why a memory's text, as a person corrected it, is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MemoryTextError {
    /// Nothing but blanks.
    #[error("a memory's text cannot be empty (to remove a memory, forget it)")]
    Empty,
    /// Longer than [`MAX_TEXT_CHARS`].
    #[error("a memory's text is one sentence of at most {MAX_TEXT_CHARS} characters ({0} given)")]
    TooLong(usize),
}

/// `text` as a corrected memory is stored: trimmed, not empty, at most [`MAX_TEXT_CHARS`],
/// control characters shown as their pictures (as every store takes it).
pub fn corrected_text(text: &str) -> Result<String, MemoryTextError> {
    let text = text.trim();
    let chars = text.chars().count();
    if chars == 0 {
        Err(MemoryTextError::Empty)
    } else if chars > MAX_TEXT_CHARS {
        Err(MemoryTextError::TooLong(chars))
    } else {
        Ok(rein_core::text::visible_controls(text).into_owned())
    }
}

/// The most a conversation shown to the extractor holds, in characters (its end is kept).
const CONVERSATION_CHARS: usize = 16_000;

/// The most memories one extraction may propose.
const MAX_PROPOSALS: usize = 20;

const INSTRUCTIONS: &str = "You keep a memory of durable facts about the user for future \
conversations. From the conversation, list what is worth remembering about the user: facts \
about them, their preferences, their ongoing projects. Only what the user said or confirmed \
about themselves; nothing about the assistant, nothing that only matters to this one request, \
no secrets (passwords, keys, tokens). For each: category (fact, preference or project); subject \
(two to four words naming what it is about; reuse the subject of a known memory when it is \
about the same thing, so that a change replaces it); text (one sentence in the third person, \
\"The user lives in Lyon.\"); message_id (the id of the user message it comes from). Answer \
{\"memories\": []} when nothing is worth remembering.";

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "category": {"type": "string", "enum": ["fact", "preference", "project"]},
                        "subject": {"type": "string"},
                        "text": {"type": "string"},
                        "message_id": {"type": "string"}
                    },
                    "required": ["category", "subject", "text", "message_id"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["memories"],
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
struct Proposals {
    memories: Vec<Proposal>,
}

#[derive(Deserialize)]
struct Proposal {
    category: MemoryCategory,
    subject: String,
    text: String,
    message_id: String,
}

/// The agent whose own memories an operation reads and learns into, if its agent keeps them
/// apart (`memory: agent`); `None`: the memories the user's agents share.
pub fn private_pool(metadata: &rein_core::state::Metadata) -> Option<&str> {
    match metadata.memory_scope {
        MemoryScope::Agent => metadata.agent_id.as_deref(),
        MemoryScope::User => None,
    }
}

/// What extracts memories in this process: the model that reads conversations (the system
/// model, else the default one) and the embedder memories are recalled with.
pub struct Extractor<'a> {
    /// Where operations and memories are.
    pub store: &'a dyn Store,
    /// Providers.
    pub models: &'a dyn ModelSource,
    /// The model asked.
    pub model: &'a ModelRef,
    /// Embeds memories as they are stored (none: recalled by words only).
    pub embedder: Option<&'a dyn Embedder>,
    /// Stops a call in flight (shutdown).
    pub cancel: CancellationToken,
}

/// How one extraction went.
#[derive(Debug)]
pub struct Extracted {
    /// The operation read.
    pub operation_id: String,
    /// What was stored, or why nothing was (it is retried unless given up).
    pub outcome: Result<Applied, String>,
}

impl Extractor<'_> {
    /// Extract from up to `limit` operations waiting for it; what each did.
    pub async fn run_pending(&self, limit: u32) -> Result<Vec<Extracted>, StoreError> {
        let mut out = Vec::new();
        for task in self.store.pending_extractions(limit).await? {
            let outcome = match self.extract(&task).await {
                Ok(applied) => Ok(applied),
                Err(why) => {
                    let retry_at = retry_after(task.attempts).map(|wait| Utc::now() + wait);
                    tracing::warn!(
                        operation = %task.operation_id,
                        attempt = task.attempts + 1,
                        error = %why,
                        "memory extraction failed"
                    );
                    self.store.extraction_failed(&task, &why, retry_at).await?;
                    Err(why)
                }
            };
            out.push(Extracted {
                operation_id: task.operation_id,
                outcome,
            });
        }
        Ok(out)
    }

    async fn extract(&self, task: &ExtractionTask) -> Result<Applied, String> {
        let id = task
            .operation_id
            .parse()
            .map_err(|e| format!("operation id: {e}"))?;
        let op = self
            .store
            .load_operation(id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "the operation is gone".to_owned())?;
        let mut turns: Vec<serde_json::Value> = Vec::new();
        let mut user_ids: Vec<String> = Vec::new();
        let mut size = 0;
        for m in op.state.messages.iter().rev() {
            if !matches!(m.role, Role::User | Role::Assistant) {
                continue;
            }
            let text = m.text_content();
            if text.trim().is_empty() {
                continue;
            }
            size += text.len();
            if size > CONVERSATION_CHARS && !turns.is_empty() {
                break;
            }
            if m.role == Role::User {
                user_ids.push(m.id.to_string());
            }
            let role = if m.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            turns.push(json!({"id": m.id.to_string(), "role": role, "text": text}));
        }
        turns.reverse();
        let private_to = private_pool(&op.state.metadata);
        if user_ids.is_empty() {
            return self
                .store
                .apply_memories(task, private_to, &[])
                .await
                .map_err(|e| e.to_string());
        }
        let known: Vec<serde_json::Value> = self
            .store
            .list_memories(task.owner.as_deref(), MemoryPool::of(private_to), false)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .take(100)
            .map(|m| json!({"subject": m.subject, "text": m.text}))
            .collect();
        let input = json!({"known_memories": known, "conversation": turns}).to_string();
        let answer = ask_json(
            self.models,
            self.model,
            self.cancel.child_token(),
            INSTRUCTIONS,
            input,
            "memories",
            schema(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let proposals: Proposals = serde_json::from_value(answer)
            .map_err(|e| format!("the extractor's answer does not match its schema: {e}"))?;
        let mut memories = Vec::new();
        for p in proposals.memories.into_iter().take(MAX_PROPOSALS) {
            let (subject, text) = (p.subject.trim(), p.text.trim());
            if subject.is_empty() || text.is_empty() || text.chars().count() > 500 {
                continue;
            }
            // What a model wrote is stored as every store takes it.
            let text = rein_core::text::visible_controls(text).into_owned();
            memories.push(NewMemory {
                category: p.category,
                subject: rein_core::text::visible_controls(subject).into_owned(),
                // Only a message of this conversation is a source.
                source_message: user_ids.contains(&p.message_id).then_some(p.message_id),
                embedding: embed_one(self.embedder, &text).await,
                text,
            });
        }
        self.store
            .apply_memories(task, private_to, &memories)
            .await
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_corrected_text_is_trimmed_and_bounded() {
        use super::{MemoryTextError, corrected_text};
        assert_eq!(
            corrected_text("  The user uses Helix. "),
            Ok("The user uses Helix.".to_owned())
        );
        assert_eq!(
            corrected_text("Helix\0 and\x1b Vim"),
            Ok("Helix\u{2400} and\u{241b} Vim".to_owned()),
            "control characters shown, as every store takes them"
        );
        assert_eq!(corrected_text(" \t\n"), Err(MemoryTextError::Empty));
        let long = "é".repeat(501);
        assert_eq!(corrected_text(&long), Err(MemoryTextError::TooLong(501)));
        assert!(corrected_text(&"é".repeat(500)).is_ok());
    }

    #[test]
    fn a_failed_extraction_is_tried_five_times_with_doubling_waits() {
        let waits: Vec<Option<i64>> = (0..6)
            .map(|a| super::retry_after(a).map(|d| d.num_seconds()))
            .collect();
        assert_eq!(
            waits,
            [Some(30), Some(60), Some(120), Some(240), None, None]
        );
    }
}
