//! `rein run PROMPT`: start an operation on this machine and run it to where it stops, asking
//! on a terminal for what it asks; then learn from the conversation.

use super::Local;
use super::memory;
use crate::{agent_profile, host, queue};
use rein_operation::{RunEnd, SpecOrigin, StartOptions};
use std::sync::Arc;

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

/// Run `a`; the exit code.
pub async fn run(l: &Local, a: RunArgs) -> anyhow::Result<u8> {
    let store = l.store().await?;
    let host = host::host(Arc::clone(store), &l.given, None).await?;
    let origin = SpecOrigin {
        working_directory: std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let over = a.settings.profile();
    let spec = agent_profile::spec(
        store,
        &l.given.config,
        &host,
        agent_profile::RunAs::of(a.agent.as_deref(), a.group.as_deref()),
        &over,
        origin,
    )
    .await?;
    let attachments = a
        .attach
        .iter()
        .map(|p| rein_operation::attachment::from_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    let opts = StartOptions {
        spec,
        attachments,
        ..Default::default()
    };
    let driver = l.adopt(host::printing_driver(&host, l.given.json))?;
    let id = driver.start(&a.prompt, &opts).await?;
    let cancel = driver.cancel_token();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let end = queue::run_in_turn(driver, id).await?;
    let end = crate::prompt::ask(l, id, end).await?;
    // Learning from the conversation comes after the answer is out; a failure is retried by
    // the next run, never the run's failure.
    if matches!(end, RunEnd::Done { .. })
        && let Err(e) = memory::extract(&host, false).await
    {
        tracing::warn!(error = %e, "memory extraction could not run");
    }
    super::decide::finish(l, id, &end).await
}
