//! `rein agent create|list|show|edit|delete`: your agents (model, system role, tools, approval
//! mode, limits), each with a version counted up on every edit.

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
    /// Show an agent.
    Show {
        /// Name.
        name: String,
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
                    println!(
                        "{:<20} {:<32} {}",
                        a.name,
                        a.config.model.as_deref().unwrap_or("(default model)"),
                        a.config.approval.unwrap_or_default()
                    );
                }
            }
        }
        AgentCommand::Show { name } => {
            let a = on.agent(&name).await?;
            print(&a.name, &a.config, a.version, json)?;
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
    }
    Ok(())
}
