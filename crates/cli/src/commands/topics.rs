//! `rein topic …`: this machine's conversations (those `rein run` and `rein chat` started; a
//! server's users manage theirs through the API): list or search them, show one's active
//! branch with its versions marked, rename one, delete one (its operations' records kept
//! unless asked otherwise).

use crate::invocation::Invocation;
use anyhow::{anyhow, bail};
use rein_core::message::Role;
use rein_operation::topic::TopicTree;
use rein_store::{OperationRecords, SqlStore, TitleSource, TopicFilter, Topics};
use std::sync::Arc;

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

/// Refuse a topic this machine's CLI does not own (a server user's, or none).
async fn local(store: &SqlStore, id: &str) -> anyhow::Result<()> {
    match store.topic_owner(id).await? {
        Some(None) => Ok(()),
        Some(Some(_)) => bail!("topic {id} belongs to a server user: manage it through the API"),
        None => bail!("no topic {id}; `rein topic list` shows them"),
    }
}

/// Run a `rein topic` command.
pub async fn command(
    store: Arc<SqlStore>,
    command: TopicCommand,
    given: &Invocation,
) -> anyhow::Result<u8> {
    match command {
        TopicCommand::List { search, limit } => {
            let filter = TopicFilter {
                owner: None,
                search,
                limit,
            };
            for t in store.list_topics(&filter).await? {
                if given.json {
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
            local(&store, &id).await?;
            let tree = rein_operation::topic::tree(&*store, &id)
                .await?
                .ok_or_else(|| anyhow!("no topic {id}"))?;
            if given.json {
                println!("{}", serde_json::to_string(&tree)?);
            } else {
                println!("{}", tree.topic.title.as_deref().unwrap_or("(untitled)"));
                print_path(&tree);
            }
        }
        TopicCommand::Rename { id, title } => {
            local(&store, &id).await?;
            let title = title.trim();
            if title.is_empty() {
                bail!("the title is blank");
            }
            store.set_topic_title(&id, title, TitleSource::User).await?;
            eprintln!("renamed {id}: {title}");
        }
        TopicCommand::Delete {
            id,
            delete_operations,
        } => {
            local(&store, &id).await?;
            let records = if delete_operations {
                OperationRecords::Delete
            } else {
                OperationRecords::Keep
            };
            let deleted = store
                .delete_topic(&id, records)
                .await?
                .ok_or_else(|| anyhow!("no topic {id}"))?;
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
