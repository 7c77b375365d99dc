//! Topics: a user's conversations. Created explicitly or by the first operation on them,
//! renamed, searched by title and content, deleted with their operations' records kept or
//! removed; each stores its message tree ([`rein_core::conversation`] reads it) and the message
//! its active branch runs through.
//! The SQL behind [`Topics`] is `sql/topics.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::{Message, MessageId};
use serde::{Deserialize, Serialize};

/// A fresh topic id: `topic_` and a UUID (the form of the ids operations give new topics).
pub fn new_topic_id() -> String {
    format!("topic_{}", uuid::Uuid::now_v7())
}

/// A conversation as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TopicRecord {
    /// Id.
    pub id: String,
    /// Agent it was started with.
    pub agent: Option<String>,
    /// Title: chosen by a person, proposed by a model, or the start of its first message.
    pub title: Option<String>,
    /// Where the title came from.
    pub title_source: TitleSource,
    /// Created.
    pub created_at: DateTime<Utc>,
}

/// Where a topic's title came from. A generated title replaces only one made from the prompt;
/// nothing replaces a person's.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TitleSource {
    /// The start of its first message (or none yet).
    #[default]
    Prompt,
    /// A model summarised the first exchange.
    Model,
    /// A person named it.
    User,
}

/// A topic to create before anything runs in it.
#[derive(Clone, Debug, Default)]
pub struct NewTopic {
    /// Its id (checked by the caller).
    pub id: String,
    /// Whose it is (`None`: the local CLI's).
    pub owner: Option<String>,
    /// The agent it is meant for.
    pub agent: Option<String>,
    /// A title chosen up front (recorded as a person's).
    pub title: Option<String>,
}

/// Which topics to list.
#[derive(Clone, Debug, Default)]
pub struct TopicFilter {
    /// Whose (`None`: the local CLI's).
    pub owner: Option<String>,
    /// Only topics whose title or own messages contain this text (case-insensitive for ASCII).
    pub search: Option<String>,
    /// At most this many, newest first.
    pub limit: u32,
    /// Only those after this topic in that order (older; by creation, then id): the page
    /// after the one it ended. A topic that is not in the list ends it (none after).
    pub before: Option<String>,
}

/// What deleting a topic does to the operations that ran in it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OperationRecords {
    /// Keep their records (status, cost, steps and events, which hold the text the model
    /// streamed) for audit; only the conversation goes.
    #[default]
    Keep,
    /// Delete them too: nothing of the conversation is left.
    Delete,
}

/// What a topic's deletion removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeletedTopic {
    /// Messages deleted (its sub-agents' threads included).
    pub messages: u64,
    /// Operations that had run in it.
    pub operations: u64,
    /// Whether their records were deleted or kept.
    pub operation_records: OperationRecords,
}

/// A topic's stored conversation: every message of its own (not its sub-agents' threads) and
/// the message its active branch runs through.
#[derive(Clone, Debug)]
pub struct StoredConversation {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// The active message (`None`: the newest).
    pub active_message: Option<MessageId>,
}

/// Topics. Every method is one transaction.
pub trait Topics: Send + Sync {
    /// Create an empty topic; [`StoreError::Conflict`] when the id is taken.
    fn create_topic<'a>(
        &'a self,
        topic: &'a NewTopic,
    ) -> BoxFuture<'a, Result<TopicRecord, StoreError>>;
    /// One topic.
    fn topic<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TopicRecord>, StoreError>>;
    /// Topics matching `filter`, newest first.
    fn list_topics<'a>(
        &'a self,
        filter: &'a TopicFilter,
    ) -> BoxFuture<'a, Result<Vec<TopicRecord>, StoreError>>;
    /// Who a topic belongs to: `None` when there is no such topic, `Some(None)` for a topic of
    /// the local CLI.
    fn topic_owner<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Option<String>>, StoreError>>;
    /// Set a topic's title. A [`TitleSource::Model`] title only replaces one made from the
    /// prompt; returns whether the title changed.
    fn set_topic_title<'a>(
        &'a self,
        id: &'a str,
        title: &'a str,
        source: TitleSource,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Delete a topic, its messages and threads, and its operations' records or not. Refused
    /// ([`StoreError::InUse`]) while an operation in it is running or waiting; `None` when
    /// there is no such topic.
    fn delete_topic<'a>(
        &'a self,
        id: &'a str,
        records: OperationRecords,
    ) -> BoxFuture<'a, Result<Option<DeletedTopic>, StoreError>>;
    /// A topic's conversation; `None` when there is no such topic.
    fn conversation<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredConversation>, StoreError>>;
    /// Make the branch through `message` the topic's active one; `false` when the message is
    /// not in the topic's own conversation.
    fn set_active_message<'a>(
        &'a self,
        id: &'a str,
        message: MessageId,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
