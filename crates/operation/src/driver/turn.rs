//! Where a new operation's prompt goes in its topic's message tree: after the end of the
//! active branch, in place of a user message (an edit: a sibling of it), or nowhere (a
//! regeneration: another answer to a user message, a sibling of the old answer). Nothing is
//! overwritten; the new operation's history is the branch it continues.

use crate::error::DriverError;
use rein_core::conversation::Conversation;
use rein_core::message::{MessageKind, Role};
use rein_core::{Message, MessageId};
use rein_store::Store;

/// Where an operation's prompt goes in its topic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum Turn {
    /// After the end of the topic's active branch (a new topic: at the start).
    #[default]
    Continue,
    /// In place of user message `id`: the prompt is its new text, a sibling of it.
    Edit(MessageId),
    /// Another answer to the user message that `id` is or answers: no prompt, the new answer
    /// a sibling of the old.
    Regenerate(MessageId),
}

/// A branch that cannot be made; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum BranchError {
    /// Editing or regenerating needs the topic the message is in.
    #[error("name the topic to edit or regenerate a message of it")]
    NoTopic,
    /// No such topic.
    #[error("no topic {0}")]
    UnknownTopic(String),
    /// The topic has no such message in its own conversation.
    #[error("topic {topic} has no message {message}")]
    UnknownMessage {
        /// The topic.
        topic: String,
        /// The message.
        message: MessageId,
    },
    /// Only what a person wrote can be edited.
    #[error("message {0} is not a user message: only what a person wrote can be edited")]
    NotAUserMessage(MessageId),
    /// A regeneration needs a user message at or before the one named.
    #[error("no user message at or before {0} to answer again")]
    NoPrompt(MessageId),
    /// A regeneration takes no prompt: it answers the existing one again.
    #[error("a regeneration takes no prompt: it answers message {0}'s prompt again")]
    PromptWithRegenerate(MessageId),
}

/// What a new operation starts from: the history the model sees before the prompt, and
/// whether there is a prompt (a regeneration has none).
pub(super) struct Start {
    /// The branch continued, as the model sees it.
    pub history: Vec<Message>,
    /// Whether the operation's prompt is a new user message.
    pub prompt: bool,
}

/// Resolve `turn` in `topic` (`None`: a new topic).
pub(super) async fn resolve(
    store: &dyn Store,
    topic: Option<&str>,
    turn: Turn,
    prompt: &str,
) -> Result<Start, DriverError> {
    let Some(topic) = topic else {
        return match turn {
            Turn::Continue => Ok(Start {
                history: Vec::new(),
                prompt: true,
            }),
            _ => Err(BranchError::NoTopic.into()),
        };
    };
    let Some(stored) = store.conversation(topic).await? else {
        return match turn {
            // A caller-chosen id for a new conversation.
            Turn::Continue => Ok(Start {
                history: Vec::new(),
                prompt: true,
            }),
            _ => Err(BranchError::UnknownTopic(topic.to_owned()).into()),
        };
    };
    let conv = Conversation::new(stored.messages);
    let unknown = |message| BranchError::UnknownMessage {
        topic: topic.to_owned(),
        message,
    };
    match turn {
        Turn::Continue => Ok(Start {
            history: conv.history(&conv.active_path(stored.active_message)),
            prompt: true,
        }),
        Turn::Edit(id) => {
            let m = conv.get(id).ok_or_else(|| unknown(id))?;
            if m.role != Role::User || m.kind != MessageKind::Normal {
                return Err(BranchError::NotAUserMessage(id).into());
            }
            let mut path = conv.path_to(id);
            path.pop();
            Ok(Start {
                history: conv.history(&path),
                prompt: true,
            })
        }
        Turn::Regenerate(id) => {
            if !prompt.trim().is_empty() {
                return Err(BranchError::PromptWithRegenerate(id).into());
            }
            conv.get(id).ok_or_else(|| unknown(id))?;
            let mut path = conv.path_to(id);
            let user = path
                .iter()
                .rposition(|m| m.role == Role::User && m.kind == MessageKind::Normal)
                .ok_or(BranchError::NoPrompt(id))?;
            path.truncate(user + 1);
            Ok(Start {
                history: conv.history(&path),
                prompt: false,
            })
        }
    }
}
