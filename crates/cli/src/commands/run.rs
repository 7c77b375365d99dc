//! `rein run PROMPT`: start an operation here or on a server and follow it to where it stops,
//! asking on a terminal for what it asks; then, here, learn from the conversation.

use super::{Backend, Ran, Start};
use crate::agent_profile;
use rein_operation::Turn;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The prompt.
    pub prompt: String,
    /// Run as this agent (its model, system role, tools, approval mode and limits; flags win).
    #[arg(long, conflicts_with = "group")]
    pub agent: Option<String>,
    /// Run as this group: its members talk in rounds under its supervisor (one budget).
    #[arg(long)]
    pub group: Option<String>,
    #[command(flatten)]
    pub settings: agent_profile::AgentFlags,
    /// Attach a file to the prompt (repeatable): images are shown to models that can see
    /// them, text files are inlined (long ones cut), other files are named only.
    #[arg(long, value_name = "PATH")]
    pub attach: Vec<std::path::PathBuf>,
}

/// Run `a` where `on` runs it, asking on a terminal for what it asks, and (here) learn from
/// the conversation; the exit code.
pub async fn run(on: &impl Backend, a: RunArgs) -> anyhow::Result<u8> {
    let over = a.settings.profile();
    let Ran { id, end, .. } = on
        .run(Start {
            prompt: &a.prompt,
            who: agent_profile::RunAs::of(a.agent.as_deref(), a.group.as_deref()),
            over: &over,
            attachments: &a.attach,
            topic: None,
            turn: Turn::Continue,
            interrupt: true,
        })
        .await?;
    let end = crate::prompt::ask(on, id, end).await?;
    // A server learns from its users' conversations itself.
    if let Ok(local) = on.local() {
        local.learn(&end).await;
    }
    super::decide::finish(on, id, &end).await
}
