//! `rein agent create|list|show|edit|delete|versions (history)|rollback|export|import`: your
//! agents (model, system role, tools, approval mode, limits), each with a version counted up on
//! every edit, every version kept, shown (`show --version`) and any of them taken again as the
//! next one; an agent carried to another machine as a file, with its memories.

use super::Backend;
use crate::agent_profile::{AgentFlags, print};
use rein_operation::AgentProfile;

/// `rein agent` subcommands.
#[derive(clap::Subcommand)]
pub enum AgentCommand {
    /// Create an agent.
    Create {
        /// Name (letters, digits, `-`, `_`).
        name: String,
        #[command(flatten)]
        flags: AgentFlags,
    },
    /// List agents.
    List,
    /// Show an agent (its current settings, or those of an earlier version).
    Show {
        /// Name.
        name: String,
        /// This version's settings (from `rein agent history`).
        #[arg(long, value_name = "VERSION", value_parser = clap::value_parser!(u64).range(1..))]
        version: Option<u64>,
    },
    /// Change the given settings of an agent.
    Edit {
        /// Name.
        name: String,
        #[command(flatten)]
        flags: AgentFlags,
    },
    /// Delete an agent.
    Delete {
        /// Name.
        name: String,
    },
    /// An agent's versions, newest first, each with the settings it changed.
    #[command(visible_alias = "history")]
    Versions {
        /// Name.
        name: String,
    },
    /// Write an agent as a portable file (JSON, to stdout): its settings, the skills and
    /// knowledge bases it names, its own memories (docs/formats/agent.schema.json).
    Export {
        /// Name.
        name: String,
    },
    /// Create an agent from an exported file, with its memories; refused, naming it, when
    /// this machine (or server) cannot give it its model, tools, skills or knowledge bases.
    Import {
        /// The file (`-`: stdin).
        file: std::path::PathBuf,
        /// Create it under this name instead of the file's.
        #[arg(long)]
        name: Option<String>,
    },
    /// Give an agent an earlier version's settings again (written as its next version:
    /// nothing is lost).
    Rollback {
        /// Name.
        name: String,
        /// The version to take again (from `rein agent versions`).
        #[arg(long, value_name = "VERSION", value_parser = clap::value_parser!(u64).range(1..))]
        to: u64,
    },
}

/// Run an agent command.
pub async fn run(on: &impl Backend, command: AgentCommand, json: bool) -> anyhow::Result<()> {
    match command {
        AgentCommand::Create { name, flags } => {
            on.create_agent(&name, AgentProfile::default().merged(&flags.profile()))
                .await?;
            eprintln!("created agent {name}");
        }
        AgentCommand::List => {
            for a in on.agents().await? {
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"name": a.name, "config": a.config, "version": a.version})
                    );
                } else {
                    let runs = match &a.config.a2a {
                        // A remote agent: where it is, not a model.
                        Some(remote) => format!("remote: {}", remote.url),
                        None => a
                            .config
                            .model
                            .clone()
                            .unwrap_or_else(|| "(default model)".into()),
                    };
                    println!(
                        "{:<20} {:<32} {}",
                        a.name,
                        runs,
                        a.config.approval.unwrap_or_default()
                    );
                }
            }
        }
        AgentCommand::Show {
            name,
            version: None,
        } => {
            let a = on.agent(&name).await?;
            print(&a.name, &a.config, a.version, json)?;
        }
        AgentCommand::Show {
            name,
            version: Some(version),
        } => {
            let versions = on.agent_versions(&name).await?;
            let Some(v) = versions.iter().find(|v| v.version == version) else {
                let kept: Vec<String> = versions.iter().map(|v| v.version.to_string()).collect();
                anyhow::bail!(
                    "agent {name} has no version {version}; kept: {}",
                    if kept.is_empty() {
                        "none".to_owned()
                    } else {
                        kept.join(", ")
                    }
                );
            };
            print(&name, &v.config, v.version, json)?;
        }
        AgentCommand::Edit { name, flags } => {
            let current = on.agent(&name).await?;
            let a = on
                .update_agent(&name, current.config.merged(&flags.profile()))
                .await?;
            print(&a.name, &a.config, a.version, json)?;
        }
        AgentCommand::Delete { name } => {
            on.delete_agent(&name).await?;
            eprintln!("deleted agent {name}");
        }
        AgentCommand::Versions { name } => {
            let versions = on.agent_versions(&name).await?;
            for (i, v) in versions.iter().enumerate() {
                let changed = changed(&v.config, versions.get(i + 1).map(|o| &o.config))?;
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"version": v.version, "config": v.config, "created_at": v.created_at, "changed": changed})
                    );
                } else {
                    let what = if versions.get(i + 1).is_none() {
                        "first kept".to_owned()
                    } else if changed.is_empty() {
                        "no change".to_owned()
                    } else {
                        format!("changed: {}", changed.join(", "))
                    };
                    println!(
                        "v{:<4} {}  {what}",
                        v.version,
                        v.created_at.format("%Y-%m-%d %H:%M")
                    );
                }
            }
        }
        AgentCommand::Export { name } => {
            println!("{}", serde_json::to_string(&on.export_agent(&name).await?)?);
        }
        AgentCommand::Import { file, name } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?
            };
            let mut archive: rein_operation::AgentArchive = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{} is not an agent file: {e}", file.display()))?;
            if let Some(name) = name {
                archive.name = name;
            }
            let a = on.import_agent(&archive).await?;
            eprintln!(
                "imported agent {} with {} of its memories",
                a.name,
                archive.memories.len()
            );
            print(&a.name, &a.config, a.version, json)?;
        }
        AgentCommand::Rollback { name, to } => {
            let a = on.rollback_agent(&name, to).await?;
            eprintln!(
                "agent {name} has version {to}'s settings again, as version {}",
                a.version
            );
            print(&a.name, &a.config, a.version, json)?;
        }
    }
    Ok(())
}

/// The settings `config` holds differently from `before` (none without one), by name.
fn changed(config: &AgentProfile, before: Option<&AgentProfile>) -> anyhow::Result<Vec<String>> {
    let Some(before) = before else {
        return Ok(Vec::new());
    };
    let (serde_json::Value::Object(now), serde_json::Value::Object(then)) =
        (serde_json::to_value(config)?, serde_json::to_value(before)?)
    else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = now
        .keys()
        .chain(then.keys())
        .filter(|k| now.get(*k) != then.get(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}
