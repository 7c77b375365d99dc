//! `rein topic …`: your conversations (on this machine those `rein run` and `rein chat`
//! started; on a server, yours): list or search them, show one's active branch with its
//! versions marked, rename one, delete one (its operations' records kept unless asked
//! otherwise).

use super::{Local, Remote, remote::segment};
use anyhow::{anyhow, bail};
use rein_core::MessageId;
use rein_core::message::Role;
use rein_operation::topic::TopicTree;
use rein_server::routes::topics::{ActiveIn, DeleteQuery, RenameIn, TopicQuery};
use rein_store::{DeletedTopic, OperationRecords, TitleSource, TopicFilter, TopicRecord, Topics};
use reqwest::Method;

/// `rein topic` subcommands.
#[derive(clap::Subcommand)]
pub enum TopicCommand {
    /// List conversations, newest first.
    List {
        /// Only those whose title or messages contain this text.
        #[arg(long)]
        search: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Show a conversation's active branch (messages with versions marked [n/m]).
    Show {
        /// Topic id.
        id: String,
    },
    /// Rename a conversation.
    Rename {
        /// Topic id.
        id: String,
        /// The new title.
        title: String,
    },
    /// Delete a conversation and its messages. The records of the operations that ran in it
    /// (status, cost, steps, events) are kept unless --delete-operations.
    Delete {
        /// Topic id.
        id: String,
        /// Delete the operations' records too.
        #[arg(long)]
        delete_operations: bool,
    },
}

/// What `rein topic` needs from where it runs.
pub trait Conversations {
    /// Your conversations, newest first (those matching `search`; at most `limit`).
    async fn topics(&self, search: Option<String>, limit: u32) -> anyhow::Result<Vec<TopicRecord>>;

    /// One conversation's message tree.
    async fn topic(&self, id: &str) -> anyhow::Result<TopicTree>;

    /// Show the branch through `message` (one of a message's alternatives); the tree then.
    async fn activate(&self, id: &str, message: MessageId) -> anyhow::Result<TopicTree>;

    /// Rename a conversation (`title` is not blank).
    async fn rename_topic(&self, id: &str, title: &str) -> anyhow::Result<()>;

    /// Delete a conversation, and its operations' records as `records` says.
    async fn delete_topic(
        &self,
        id: &str,
        records: OperationRecords,
    ) -> anyhow::Result<DeletedTopic>;
}

/// Print the active branch of `tree`: what you wrote on stderr after `you>`, answers on
/// stdout, a message with versions marked `[2/3]`.
pub fn print_path(tree: &TopicTree) {
    for m in tree.path() {
        let mark = tree
            .branches
            .iter()
            .find(|b| b.message == m.id)
            .map(|b| format!("[{}/{}] ", b.index, b.alternatives.len()))
            .unwrap_or_default();
        let text = m.text_content();
        match m.role {
            Role::User => eprintln!("you> {mark}{text}"),
            Role::Assistant if !text.is_empty() => println!("{mark}{text}\n"),
            _ => {}
        }
    }
}

/// Run a `rein topic` command.
pub async fn run(on: &impl Conversations, command: TopicCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        TopicCommand::List { search, limit } => {
            for t in on.topics(search, limit).await? {
                if json {
                    println!("{}", serde_json::to_string(&t)?);
                } else {
                    println!(
                        "{}  {}  {}",
                        t.id,
                        t.created_at.format("%Y-%m-%d %H:%M"),
                        t.title.as_deref().unwrap_or("(untitled)")
                    );
                }
            }
        }
        TopicCommand::Show { id } => {
            let tree = on.topic(&id).await?;
            if json {
                println!("{}", serde_json::to_string(&tree)?);
            } else {
                println!("{}", tree.topic.title.as_deref().unwrap_or("(untitled)"));
                print_path(&tree);
            }
        }
        TopicCommand::Rename { id, title } => {
            let title = title.trim();
            if title.is_empty() {
                bail!("the title is blank");
            }
            on.rename_topic(&id, title).await?;
            eprintln!("renamed {id}: {title}");
        }
        TopicCommand::Delete {
            id,
            delete_operations,
        } => {
            let records = if delete_operations {
                OperationRecords::Delete
            } else {
                OperationRecords::Keep
            };
            let deleted = on.delete_topic(&id, records).await?;
            eprintln!(
                "deleted {id}: {} messages; {} operations' records {}",
                deleted.messages,
                deleted.operations,
                if delete_operations { "deleted" } else { "kept" }
            );
        }
    }
    Ok(crate::exit::DONE)
}

impl Local {
    /// Refuse a topic this machine's CLI does not own (a server user's, or none).
    async fn own_topic(&self, id: &str) -> anyhow::Result<()> {
        match self.store().await?.topic_owner(id).await? {
            Some(None) => Ok(()),
            Some(Some(_)) => {
                bail!("topic {id} belongs to a server user: manage it with --server")
            }
            None => bail!("no topic {id}; `rein topic list` shows them"),
        }
    }
}

impl Conversations for Local {
    async fn topics(&self, search: Option<String>, limit: u32) -> anyhow::Result<Vec<TopicRecord>> {
        let filter = TopicFilter {
            owner: None,
            search,
            limit,
            before: None,
        };
        Ok(self.store().await?.list_topics(&filter).await?)
    }

    async fn topic(&self, id: &str) -> anyhow::Result<TopicTree> {
        self.own_topic(id).await?;
        rein_operation::topic::tree(&**self.store().await?, id)
            .await?
            .ok_or_else(|| anyhow!("no topic {id}"))
    }

    async fn activate(&self, id: &str, message: MessageId) -> anyhow::Result<TopicTree> {
        self.own_topic(id).await?;
        self.store().await?.set_active_message(id, message).await?;
        self.topic(id).await
    }

    async fn rename_topic(&self, id: &str, title: &str) -> anyhow::Result<()> {
        self.own_topic(id).await?;
        self.store()
            .await?
            .set_topic_title(id, title, TitleSource::User)
            .await?;
        Ok(())
    }

    async fn delete_topic(
        &self,
        id: &str,
        records: OperationRecords,
    ) -> anyhow::Result<DeletedTopic> {
        self.own_topic(id).await?;
        self.store()
            .await?
            .delete_topic(id, records)
            .await?
            .ok_or_else(|| anyhow!("no topic {id}"))
    }
}

impl Conversations for Remote {
    async fn topics(&self, search: Option<String>, limit: u32) -> anyhow::Result<Vec<TopicRecord>> {
        self.get(
            "/v1/topics",
            &TopicQuery {
                search,
                limit: Some(limit),
                before: None,
            },
        )
        .await
    }

    async fn topic(&self, id: &str) -> anyhow::Result<TopicTree> {
        let path = format!("/v1/topics/{}/tree", segment(id));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn activate(&self, id: &str, message: MessageId) -> anyhow::Result<TopicTree> {
        let path = format!("/v1/topics/{}/active", segment(id));
        let body = ActiveIn {
            message: message.to_string(),
        };
        self.call(Method::PUT, &path, Some(&body)).await
    }

    async fn rename_topic(&self, id: &str, title: &str) -> anyhow::Result<()> {
        let path = format!("/v1/topics/{}", segment(id));
        let body = RenameIn {
            title: title.to_owned(),
        };
        let _: TopicRecord = self.call(Method::PATCH, &path, Some(&body)).await?;
        Ok(())
    }

    async fn delete_topic(
        &self,
        id: &str,
        records: OperationRecords,
    ) -> anyhow::Result<DeletedTopic> {
        let path = format!("/v1/topics/{}", segment(id));
        let query = DeleteQuery {
            operations: Some(records),
        };
        self.with_query(Method::DELETE, &path, &query).await
    }
}
