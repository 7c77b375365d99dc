//! `rein run PROMPT`: start an operation on this machine and run it to where it stops, asking
//! on a terminal for what it asks; then learn from the conversation.

use super::Local;
use crate::{RunArgs, agents, host, memory, queue};
use rein_operation::{RunEnd, SpecOrigin, StartOptions};
use std::sync::Arc;

/// Run `a`; the exit code.
pub async fn run(l: &Local, a: RunArgs) -> anyhow::Result<u8> {
    let store = l.store().await?;
    let host = host::host(Arc::clone(store), &l.ctx, None).await?;
    let origin = SpecOrigin {
        working_directory: std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let over = a.settings.profile();
    let spec = agents::spec(
        store,
        &l.ctx.config,
        &host,
        agents::RunAs::of(a.agent.as_deref(), a.group.as_deref()),
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
    let driver = l.adopt(host::printing_driver(&host, l.ctx.json))?;
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
