//! Goals in the server: the loop that advances every open goal without any client attached
//! (`rein serve` and `rein worker` run it), each goal claimed by one process at a time so its
//! planner and verifier are never asked twice, its works' operations run by this process's
//! runner (its leases, admission and event streams).

use crate::AppState;
use crate::error::ApiError;
use crate::runner::Job;
use rein_operation::goals::GoalRunner;
use rein_store::Goals;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a claim on a goal lasts without being renewed.
const CLAIM: Duration = Duration::from_secs(30);

/// A runner of `owner`'s goals on this server: its host, its store, works' operations run by
/// its runner.
pub async fn runner(app: &AppState, owner: &str) -> Result<GoalRunner, ApiError> {
    let origin = app
        .runner
        .host
        .origin(&*app.store, owner)
        .await
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let run = Arc::clone(&app.runner);
    let who = owner.to_owned();
    Ok(GoalRunner::new(
        app.runner.host.clone(),
        Arc::clone(&app.store),
        Arc::new(app.runner.driver()),
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
        let until = chrono::Utc::now()
            + chrono::Duration::from_std(CLAIM).unwrap_or(chrono::Duration::seconds(30));
        if !app.store.claim_goal(id, &app.runner.node, until).await? {
            continue;
        }
        let advanced = match runner(app, &owner).await {
            Ok(r) => r.advance(id).await,
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
