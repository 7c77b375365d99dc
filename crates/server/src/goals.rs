//! Goals in the server: the loop that advances every open goal without any client attached
//! (`rein serve` and `rein worker` run it), each goal claimed by one process at a time so its
//! planner and verifier are never asked twice, its works' operations run by this process's
//! runner (its leases, admission and event streams).

use crate::AppState;
use crate::error::ApiError;
use crate::runner::{Job, Runner};
use rein_operation::goals::GoalRunner;
use rein_store::Goals;
use rein_store::SqlStore;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A runner of `owner`'s goals on this server: its host, its store, works' operations run by
/// its runner.
pub async fn runner(app: &AppState, owner: &str) -> Result<GoalRunner, ApiError> {
    runner_on(&app.runner, &app.store, owner).await
}

/// [`runner`] from the server's operation runner and store (what its task launcher holds).
pub async fn runner_on(
    run: &Arc<Runner>,
    store: &Arc<SqlStore>,
    owner: &str,
) -> Result<GoalRunner, ApiError> {
    let origin = run
        .host
        .origin(&**store, owner)
        .await
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let run = Arc::clone(run);
    let who = owner.to_owned();
    Ok(GoalRunner::new(
        run.host.clone(),
        Arc::clone(store),
        Arc::new(run.driver()),
        owner.to_owned(),
        origin,
    )
    .with_launch(Arc::new(move |id| {
        let (run, who) = (Arc::clone(&run), who.clone());
        tokio::spawn(async move {
            // Already running here, or held by another process: nothing to do.
            if let Err(e) = run.spawn(id, who, run.driver(), Job::Resume).await {
                tracing::debug!(operation = %id, error = %e.message, "a goal's work was not started here");
            }
        });
    })))
}

/// One pass: advance every open goal this process can claim.
pub async fn advance_all(app: &AppState) -> Result<(), rein_store::StoreError> {
    for (owner, id) in app.store.open_goals().await? {
        // A goal with nothing to do now (waiting for a person) is left alone: no claim is
        // written for it every second.
        let Some(record) = app.store.goal(None, id).await? else {
            continue;
        };
        if rein_core::goal::decide(&record.goal).is_empty() {
            continue;
        }
        if !app
            .store
            .claim_goal(id, &app.runner.node, claim_until(app))
            .await?
        {
            continue;
        }
        let advanced = match runner(app, &owner).await {
            Ok(r) => {
                // A planner or verifier call may outlast the claim: renew it meanwhile, so no
                // other process asks the same question while this one waits for the answer.
                let renew = tokio::spawn(renew(Arc::clone(app), id));
                let advanced = r.advance(id).await;
                renew.abort();
                advanced
            }
            Err(e) => {
                tracing::warn!(goal = %id, error = %e.message, "a goal cannot be run here");
                continue;
            }
        };
        match advanced {
            // Works run: keep the claim, renewed each pass.
            Ok(a) if a.waiting => {}
            Ok(_) => app.store.release_goal(id, &app.runner.node).await?,
            Err(e) => {
                tracing::warn!(goal = %id, error = %e, "a goal did not advance");
                app.store.release_goal(id, &app.runner.node).await?;
            }
        }
    }
    Ok(())
}

/// When a claim taken now ends: a claim lasts as long as an operation's lease, so a process
/// that died gives its goals up as soon as its operations.
fn claim_until(app: &AppState) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
        + chrono::Duration::from_std(app.runner.lease).unwrap_or(chrono::Duration::seconds(30))
}

/// Renew this process's claim on goal `id` three times a lease until aborted.
async fn renew(app: AppState, id: rein_core::ids::GoalId) {
    let every = app.runner.lease / 3;
    loop {
        tokio::time::sleep(every).await;
        match app
            .store
            .claim_goal(id, &app.runner.node, claim_until(&app))
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(goal = %id, "another process took this process's claim on a goal");
                return;
            }
            Err(e) => tracing::warn!(goal = %id, error = %e, "a goal's claim was not renewed"),
        }
    }
}

/// Advance goals until `stop`: at once when woken (a goal created or decided on), and every
/// second.
pub fn spawn(app: &AppState, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    let app = Arc::clone(app);
    tokio::spawn(async move {
        loop {
            if let Err(e) = advance_all(&app).await {
                tracing::warn!(error = %e, "goals did not advance");
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = app.goals_wake.notified() => {}
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    })
}
