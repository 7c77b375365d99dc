//! `rein memory …`: what rein learnt about you from your conversations (extracted after each
//! `rein run` by `rein_operation::memories`, and by `rein serve` for its users; `--server` for
//! yours there): list it with
//! its history, correct it, forget it (for good: the same fact is not learnt again), or turn
//! learning off. Memories are shared by your agents, except those of an agent created with
//! `--memory agent`, which learns into memories only it reads.

use super::{Local, Remote, remote::segment};
use anyhow::bail;
use rein_operation::Host;
use rein_operation::memories::Extractor;
use rein_server::routes::memories::{
    EditMemory, ListQuery, MemoryDetail, MemoryList, MemorySettings,
};
use rein_store::{Memories, MemoryPool, MemoryRecord};
use reqwest::Method;

/// `rein memory` subcommands.
#[derive(clap::Subcommand)]
pub enum MemoryCommand {
    /// List what is remembered, newest first.
    List {
        /// Also the memories later ones replaced.
        #[arg(long)]
        history: bool,
        /// Only those private to this agent (an agent created with `--memory agent`).
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
        /// Only those the agents share (with `--agent`: those and the agent's own).
        #[arg(long)]
        shared: bool,
    },
    /// Show a memory: where it came from and what it replaced.
    Show {
        /// Its id (`mem_…`).
        id: String,
    },
    /// Correct a memory's text.
    Edit {
        /// Its id.
        id: String,
        /// The new text.
        text: String,
    },
    /// Forget a memory and its history; the same fact is not learnt again.
    Forget {
        /// Its id.
        id: String,
    },
    /// Stop learning from conversations (what is remembered stays until forgotten).
    Off,
    /// Learn from conversations again.
    On,
    /// Read the conversations waiting for it now (`rein run` does after each answer).
    Extract,
}

fn line(m: &MemoryRecord) -> String {
    let replaced = if m.superseded_by.is_some() {
        "  (replaced)"
    } else {
        ""
    };
    let category = m.category.to_string();
    let private = m
        .private_to
        .as_deref()
        .map(|a| format!("  (agent {a} only)"))
        .unwrap_or_default();
    format!(
        "{}  [{category}] {}: {}{replaced}{private}",
        m.id, m.subject, m.text
    )
}

/// What `rein memory` needs from where it runs.
pub trait Remembered {
    /// Whether learning is on, and the memories (`agent`'s own and/or the shared ones; with
    /// `history` also those replaced), newest first.
    async fn memories(
        &self,
        agent: Option<String>,
        shared: bool,
        history: bool,
    ) -> anyhow::Result<MemoryList>;

    /// One memory and what it replaced.
    async fn memory(&self, id: &str) -> anyhow::Result<MemoryDetail>;

    /// Correct a current memory's text (checked already).
    async fn edit_memory(&self, id: &str, text: &str) -> anyhow::Result<()>;

    /// Forget a memory and its history.
    async fn forget_memory(&self, id: &str) -> anyhow::Result<()>;

    /// Learn from conversations, or stop.
    async fn set_learning(&self, on: bool) -> anyhow::Result<()>;

    /// Read the conversations waiting for it now, saying what was learnt.
    async fn extract_memories(&self) -> anyhow::Result<()>;
}

/// `rein memory …`.
pub async fn run(on: &impl Remembered, command: MemoryCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        MemoryCommand::List {
            history,
            agent,
            shared,
        } => {
            let list = on.memories(agent, shared, history).await?;
            if !list.extraction && !json {
                eprintln!("(learning is off: `rein memory on` turns it back on)");
            }
            if list.memories.is_empty() && !json {
                eprintln!("(nothing learnt yet)");
            }
            for m in list.memories {
                if json {
                    println!("{}", serde_json::to_string(&m)?);
                } else {
                    println!("{}", line(&m));
                }
            }
        }
        MemoryCommand::Show { id } => {
            let MemoryDetail { memory: m, history } = on.memory(&id).await?;
            if json {
                println!("{}", serde_json::json!({"memory": m, "history": history}));
            } else {
                println!("{}", line(&m));
                println!(
                    "from operation {} (message {}), {}",
                    m.source_operation.as_deref().unwrap_or("-"),
                    m.source_message.as_deref().unwrap_or("-"),
                    m.created_at.format("%Y-%m-%d %H:%M")
                );
                for h in history {
                    println!(
                        "  replaced: {} ({})",
                        h.text,
                        h.created_at.format("%Y-%m-%d")
                    );
                }
            }
        }
        MemoryCommand::Edit { id, text } => {
            let text = rein_operation::memories::corrected_text(&text)?;
            on.edit_memory(&id, &text).await?;
            eprintln!("memory {id} changed");
        }
        MemoryCommand::Forget { id } => {
            on.forget_memory(&id).await?;
            eprintln!("memory {id} forgotten");
        }
        MemoryCommand::Off => {
            on.set_learning(false).await?;
            eprintln!("rein no longer learns from your conversations");
        }
        MemoryCommand::On => {
            on.set_learning(true).await?;
            eprintln!("rein learns from your conversations again");
        }
        MemoryCommand::Extract => on.extract_memories().await?,
    }
    Ok(crate::exit::DONE)
}

impl Remembered for Local {
    async fn memories(
        &self,
        agent: Option<String>,
        shared: bool,
        history: bool,
    ) -> anyhow::Result<MemoryList> {
        let store = self.store().await?;
        Ok(MemoryList {
            extraction: store.memory_extraction(None).await?,
            memories: store
                .list_memories(None, MemoryPool::select(agent.as_deref(), shared), history)
                .await?,
        })
    }

    async fn memory(&self, id: &str) -> anyhow::Result<MemoryDetail> {
        let Some((memory, history)) = self.store().await?.memory(None, id).await? else {
            bail!("no memory {id}");
        };
        Ok(MemoryDetail { memory, history })
    }

    async fn edit_memory(&self, id: &str, text: &str) -> anyhow::Result<()> {
        let embedder = embedder(self.host().await?);
        let embedding = rein_tools::documents::embed_one(embedder.as_deref(), text).await;
        if !self
            .store()
            .await?
            .edit_memory(None, id, text, embedding.as_ref())
            .await?
        {
            bail!("no current memory {id} (`rein memory list`)");
        }
        Ok(())
    }

    async fn forget_memory(&self, id: &str) -> anyhow::Result<()> {
        if !self.store().await?.forget_memory(None, id).await? {
            bail!("no memory {id} (`rein memory list`)");
        }
        Ok(())
    }

    async fn set_learning(&self, on: bool) -> anyhow::Result<()> {
        Ok(self.store().await?.set_memory_extraction(None, on).await?)
    }

    async fn extract_memories(&self) -> anyhow::Result<()> {
        extract(self.host().await?, true).await
    }
}

impl Remembered for Remote {
    async fn memories(
        &self,
        agent: Option<String>,
        shared: bool,
        history: bool,
    ) -> anyhow::Result<MemoryList> {
        self.get(
            "/v1/memories",
            &ListQuery {
                history,
                agent,
                shared,
            },
        )
        .await
    }

    async fn memory(&self, id: &str) -> anyhow::Result<MemoryDetail> {
        let path = format!("/v1/memories/{}", segment(id));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn edit_memory(&self, id: &str, text: &str) -> anyhow::Result<()> {
        let path = format!("/v1/memories/{}", segment(id));
        let body = EditMemory {
            text: text.to_owned(),
        };
        let _: MemoryDetail = self.call(Method::PATCH, &path, Some(&body)).await?;
        Ok(())
    }

    async fn forget_memory(&self, id: &str) -> anyhow::Result<()> {
        let path = format!("/v1/memories/{}", segment(id));
        self.call_empty(Method::DELETE, &path).await
    }

    async fn set_learning(&self, on: bool) -> anyhow::Result<()> {
        let body = MemorySettings { extraction: on };
        let _: MemorySettings = self
            .call(Method::PUT, "/v1/memories/settings", Some(&body))
            .await?;
        Ok(())
    }

    async fn extract_memories(&self) -> anyhow::Result<()> {
        bail!(
            "a server learns from its users' conversations on its own (with its system model); \
             drop --server to read this machine's"
        )
    }
}

/// The embedder memories are stored with (the host's, as the memory tool's).
fn embedder(host: &Host) -> Option<Box<dyn rein_tools::documents::Embedder>> {
    host.embedder.as_ref().map(|(provider, model)| {
        Box::new(rein_operation::ProviderEmbedder::new(
            std::sync::Arc::clone(provider),
            model.clone(),
        )) as Box<dyn rein_tools::documents::Embedder>
    })
}

/// Read the conversations waiting for extraction with the host's system model, saying what
/// was learnt when `verbose` or when something was. Without a system model (`system_model`,
/// `REIN_SYSTEM_MODEL`) nothing is read: learning is one of rein's own jobs, done by the model
/// chosen for them.
pub async fn extract(host: &Host, verbose: bool) -> anyhow::Result<()> {
    let Some(model) = host.system_model.clone() else {
        if verbose {
            bail!("no system model to learn with: set system_model (or REIN_SYSTEM_MODEL)");
        }
        return Ok(());
    };
    let embedder = embedder(host);
    let extractor = Extractor {
        store: &*host.store,
        models: &*host.models,
        model: &model,
        embedder: embedder.as_deref(),
        cancel: tokio_util::sync::CancellationToken::new(),
    };
    for done in extractor.run_pending(20).await? {
        match done.outcome {
            Ok(a) if a.added + a.replaced + a.merged > 0 || verbose => eprintln!(
                "memory: {} new, {} replaced, {} already known (from {})",
                a.added, a.replaced, a.merged, done.operation_id
            ),
            Ok(_) => {}
            Err(e) => eprintln!(
                "memory: nothing learnt from {} yet ({e}); it is tried again later",
                done.operation_id
            ),
        }
    }
    Ok(())
}
