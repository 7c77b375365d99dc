//! `rein artifact …`: the files tool calls produced (an interpreter's plot, a CSV it wrote),
//! kept with the conversation they came from: list them, get one's bytes. Here: the local
//! user's; with `--server`: yours there.

use super::{Local, Remote};
use anyhow::{anyhow, bail};
use rein_server::routes::artifacts::{ArtifactList, ArtifactQuery};
use rein_store::{ArtifactRecord, Artifacts as _};
use std::io::Write;
use std::path::PathBuf;

/// `rein artifact` subcommands.
#[derive(clap::Subcommand)]
pub enum ArtifactCommand {
    /// List artifacts, newest first.
    List {
        /// Only this conversation's (its topic id).
        #[arg(long)]
        topic: Option<String>,
        /// Only this operation's.
        #[arg(long = "op", value_name = "OPERATION")]
        operation: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
    },
    /// Write an artifact's bytes to a file (or to standard output).
    Get {
        /// Its id (`art-…`).
        id: String,
        /// Where to write it (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

/// What `rein artifact` needs from where it runs.
pub trait Kept {
    /// Artifacts, newest first.
    async fn artifacts(
        &self,
        topic: Option<&str>,
        operation: Option<&str>,
        limit: u32,
    ) -> anyhow::Result<Vec<ArtifactRecord>>;
    /// One artifact with its bytes.
    async fn artifact(&self, id: &str) -> anyhow::Result<(ArtifactRecord, Vec<u8>)>;
}

/// Run `rein artifact`.
pub async fn run(on: &impl Kept, command: ArtifactCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        ArtifactCommand::List {
            topic,
            operation,
            limit,
        } => {
            let list = on
                .artifacts(topic.as_deref(), operation.as_deref(), limit)
                .await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
                return Ok(crate::exit::DONE);
            }
            if list.is_empty() {
                eprintln!("no artifacts");
            }
            for a in &list {
                println!(
                    "{}  {:<24} {:>10}  {}  op {} ({})",
                    a.id,
                    a.media_type,
                    a.size,
                    a.name,
                    a.operation_id,
                    a.created_at.format("%Y-%m-%d %H:%M")
                );
            }
        }
        ArtifactCommand::Get { id, output } => {
            if !rein_store::valid_artifact_id(&id) {
                bail!("`{id}` is not an artifact id (art- and 32 hex digits)");
            }
            let (record, bytes) = on.artifact(&id).await?;
            match output {
                Some(path) => {
                    std::fs::write(&path, &bytes)
                        .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
                    eprintln!(
                        "{} ({}, {} bytes) written to {}",
                        record.name,
                        record.media_type,
                        bytes.len(),
                        path.display()
                    );
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&bytes)?;
                    out.flush()?;
                }
            }
        }
    }
    Ok(crate::exit::DONE)
}

impl Kept for Local {
    async fn artifacts(
        &self,
        topic: Option<&str>,
        operation: Option<&str>,
        limit: u32,
    ) -> anyhow::Result<Vec<ArtifactRecord>> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        Ok(store.artifacts(&user.id, topic, operation, limit).await?)
    }

    async fn artifact(&self, id: &str) -> anyhow::Result<(ArtifactRecord, Vec<u8>)> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        let found = store
            .artifact_content(&user.id, id)
            .await?
            .ok_or_else(|| anyhow!("no artifact {id} here"))?;
        Ok((found.record, found.bytes))
    }
}

impl Kept for Remote {
    async fn artifacts(
        &self,
        topic: Option<&str>,
        operation: Option<&str>,
        limit: u32,
    ) -> anyhow::Result<Vec<ArtifactRecord>> {
        let query = ArtifactQuery {
            topic: topic.map(str::to_owned),
            operation: operation.map(str::to_owned),
            limit: Some(limit),
        };
        let list: ArtifactList = self.get("/v1/artifacts", &query).await?;
        Ok(list.data)
    }

    async fn artifact(&self, id: &str) -> anyhow::Result<(ArtifactRecord, Vec<u8>)> {
        let record: ArtifactRecord = self.get(&format!("/v1/artifacts/{id}"), &()).await?;
        let bytes = self.bytes(&format!("/v1/artifacts/{id}/content")).await?;
        Ok((record, bytes))
    }
}
