//! A topic as people see it: its message tree, the active path through it and the messages
//! on that path that have alternatives (edits, regenerations), for the API, the web UI and
//! `rein chat`. What the model sees when a conversation continues is [`crate::Turn`]'s.

use rein_core::conversation::{Branch, Conversation};
use rein_core::{Message, MessageId};
use rein_store::{Store, StoreError, TopicRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A topic's conversation tree.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TopicTree {
    /// The topic.
    pub topic: TopicRecord,
    /// Every message of its own conversation (not its sub-agents' threads), oldest first, each
    /// with its parent id.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub messages: Vec<Message>,
    /// The active branch, root first: what is shown, and what a new turn continues.
    pub active_path: Vec<MessageId>,
    /// The messages of the active path that have alternatives, in path order: show "2 / 3"
    /// and switch with `PUT /v1/topics/{id}/active`.
    pub branches: Vec<Branch>,
}

impl TopicTree {
    /// The messages of the active path, root first.
    pub fn path(&self) -> Vec<&Message> {
        let by_id: std::collections::HashMap<MessageId, &Message> =
            self.messages.iter().map(|m| (m.id, m)).collect();
        self.active_path
            .iter()
            .filter_map(|id| by_id.get(id).copied())
            .collect()
    }
}

/// Topic `id`'s tree; `None` when there is no such topic.
pub async fn tree(store: &dyn Store, id: &str) -> Result<Option<TopicTree>, StoreError> {
    let Some(topic) = store.topic(id).await? else {
        return Ok(None);
    };
    let stored = store
        .conversation(id)
        .await?
        .unwrap_or(rein_store::StoredConversation {
            messages: Vec::new(),
            active_message: None,
        });
    let conv = Conversation::new(stored.messages);
    let path = conv.active_path(stored.active_message);
    let active_path = path.iter().map(|m| m.id).collect();
    let branches = conv.branches(&path);
    Ok(Some(TopicTree {
        topic,
        messages: conv.into_messages(),
        active_path,
        branches,
    }))
}
