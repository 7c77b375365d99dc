//! Tasks in the server: what a task's run starts as wherever it runs ([`run_options`], also
//! the CLI's for `rein task run`), the launcher that starts due tasks' runs as operations of
//! their owners (a fresh topic per run, the task's instruction as the whole prompt, its
//! agent's settings), and the dispatcher loop `rein serve` and `rein worker` run.

use crate::error::ApiError;
use crate::runner::{Job, Runner};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::OperationId;
use rein_core::state::Status;
use rein_operation::{AgentProfile, Decision, SpecError, SpecOrigin, StartOptions};
use rein_scheduler::{Dispatcher, LaunchError, Launcher, RunError, RunState, Task};
use rein_store::{Accounts, RunTrigger, SqlStore, Store, Trigger};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Starts task runs as operations of the task's owner.
pub struct ServerLauncher {
    /// Runs operations.
    pub runner: Arc<Runner>,
    /// The store.
    pub store: Arc<SqlStore>,
    /// What each user's operations may cost (task runs count as the API's do).
    pub caps: crate::caps::SpendCaps,
}

fn failed(e: impl std::fmt::Display) -> LaunchError {
    LaunchError::Failed(e.to_string())
}

/// The operation a task run names.
fn run_id(operation_id: &str) -> Result<OperationId, RunError> {
    operation_id
        .parse()
        .map_err(|_| RunError::BadId(operation_id.to_owned()))
}

/// What a run of `task` starts as, wherever it runs: an operation as the task's agent is now
/// (`agents_of` owns it; a deleted agent is `AgentMissing`), unattended (nobody watches a
/// task's run: its agent's questions are not asked, or go to briefs when the task says so),
/// started by `trigger`, in `origin`.
pub async fn run_options(
    host: &rein_operation::Host,
    accounts: &dyn Accounts,
    agents_of: &str,
    task: &Task,
    trigger: RunTrigger,
    origin: SpecOrigin,
) -> Result<StartOptions, LaunchError> {
    let spec = host
        .agent_spec(
            accounts,
            agents_of,
            task.agent.as_deref(),
            &AgentProfile::default(),
            origin,
        )
        .await
        .map_err(|e| match e {
            SpecError::AgentMissing(name) => LaunchError::AgentMissing(name),
            other => failed(other),
        })?;
    let spec = rein_operation::OperationSpec {
        unattended: true,
        question_briefs: task.questions == rein_scheduler::Questions::Brief,
        ..spec
    };
    Ok(StartOptions {
        spec,
        trigger: Some(match trigger {
            RunTrigger::Schedule => Trigger::Schedule,
            RunTrigger::Heartbeat => Trigger::Heartbeat,
            RunTrigger::Manual | RunTrigger::Dependency => Trigger::Api,
        }),
        ..Default::default()
    })
}

impl ServerLauncher {
    /// The operation a task run names, with its record (not its state).
    async fn run_record(
        &self,
        operation_id: &str,
    ) -> Result<(OperationId, rein_store::OperationRecord), RunError> {
        let id = run_id(operation_id)?;
        let record = self
            .store
            .operation(id)
            .await
            .map_err(RunError::failed)?
            .ok_or_else(|| RunError::Unknown(operation_id.to_owned()))?;
        Ok((id, record))
    }

    /// Start a run: an operation of the task's owner, as the task's agent is now (a deleted
    /// agent is `agent_missing`), in a topic of its own.
    async fn start(&self, task: &Task, trigger: RunTrigger) -> Result<String, LaunchError> {
        let origin = self
            .runner
            .host
            .origin(&*self.store, &task.owner)
            .await
            .map_err(failed)?;
        let mut opts = StartOptions {
            // Task runs count against the same running limits as the API's.
            admission: Some(self.runner.admission()),
            ..run_options(
                &self.runner.host,
                &*self.store,
                &task.owner,
                task,
                trigger,
                origin,
            )
            .await?
        };
        // And against the owner's spending caps: a spent one fails the run, saying when it
        // resets (the run's brief carries it).
        let owner = rein_store::Accounts::user_by_id(&*self.store, &task.owner)
            .await
            .map_err(failed)?
            .ok_or_else(|| failed(format!("the task's owner {} is gone", task.owner)))?;
        let left = self
            .caps
            .admit(&*self.store, &owner, chrono::Utc::now())
            .await
            .map_err(|e| failed(e.message))?;
        crate::caps::SpendCaps::lower_budget(&mut opts.spec.budget, left);
        let driver = self.runner.driver();
        let id = driver
            .start(&task.prompt(), &opts)
            .await
            .map_err(|e| match e {
                rein_operation::DriverError::Store(
                    s @ rein_store::StoreError::AtCapacity { .. },
                ) => LaunchError::AtCapacity(s.to_string()),
                other => failed(other),
            })?;
        self.runner
            .spawn(id, task.owner.clone(), driver, Job::Run)
            .await
            .map_err(|e: ApiError| failed(e.message))?;
        Ok(id.to_string())
    }
}

/// A goal's refusal of a brief's decision, or the store's failure.
fn goal_refusal(e: rein_operation::goals::GoalRunError) -> RunError {
    use rein_operation::goals::GoalRunError as E;
    match e {
        E::Store(s) => RunError::failed(s),
        e @ (E::NotFound(_)
        | E::BadObjective
        | E::BadAcceptance
        | E::AgentMissing(_)
        | E::BadLimits(_)
        | E::PlanRefused(_)
        | E::Refused(_)
        | E::Raced(_)
        | E::NoDecision(_)
        | E::VerifierIsWorker(_)) => RunError::GoalRefused(e.to_string()),
    }
}

impl Launcher for ServerLauncher {
    fn decide_goal<'a>(
        &'a self,
        owner: &'a str,
        goal: &'a str,
        action: &'a str,
        comment: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        async move {
            let runner = crate::goals::runner_on(&self.runner, &self.store, owner)
                .await
                .map_err(|e| RunError::Failed(e.message))?;
            runner
                .decide_from_brief(owner, goal, action, comment)
                .await
                .map_err(goal_refusal)?;
            Ok(())
        }
        .boxed()
    }

    fn ready<'a>(&'a self, task: &'a Task) -> BoxFuture<'a, Result<(), LaunchError>> {
        async move {
            match &task.agent {
                Some(name) => match self.store.get_agent(&task.owner, name).await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err(LaunchError::AgentMissing(name.clone())),
                    Err(e) => Err(failed(e)),
                },
                None => Ok(()),
            }
        }
        .boxed()
    }

    fn launch<'a>(
        &'a self,
        task: &'a Task,
        trigger: RunTrigger,
    ) -> BoxFuture<'a, Result<String, LaunchError>> {
        // A task run's trace starts here: its operation's spans nest under it.
        let span = tracing::info_span!(
            "task_run",
            otel.name = %format!("task_run {}", task.title),
            rein.task.id = %task.id,
            rein.task.trigger = trigger.as_str(),
        );
        self.start(task, trigger).instrument(span).boxed()
    }

    fn state<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Result<RunState, RunError>> {
        async move {
            // The record alone while the run goes on (the dispatcher asks every second); the
            // state, for the brief, only once it ended.
            let (id, record) = self.run_record(operation_id).await?;
            match record.status {
                Status::WaitingForHuman => {
                    // Each waiting call with why it asks, for the brief that asks the person.
                    let pending = rein_operation::tree::pending_approvals(&*self.store, id)
                        .await
                        .map_err(RunError::failed)?
                        .into_iter()
                        .map(|i| {
                            let mut p = rein_scheduler::PendingCall::of(&i.call);
                            if let Some(r) = &i.reason {
                                p.what.push_str(&format!(" — {}", r.line()));
                            }
                            p
                        })
                        .collect();
                    return Ok(RunState::WaitingForHuman { pending });
                }
                // Sub-agents (or an async tool) still work for it.
                Status::Idle
                | Status::Running
                | Status::WaitingForSubAgents
                | Status::WaitingForAsyncTool => return Ok(RunState::Running),
                _ => {}
            }
            let op = self
                .store
                .load_operation(id)
                .await
                .map_err(RunError::failed)?
                .ok_or_else(|| RunError::Unknown(operation_id.to_owned()))?;
            Ok(RunState::of(&op))
        }
        .boxed()
    }

    fn cancel<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Result<(), RunError>> {
        async move {
            let id = run_id(operation_id)?;
            self.runner
                .driver()
                .cancel(id)
                .await
                .map(|_| ())
                .map_err(RunError::failed)
        }
        .boxed()
    }

    fn decide<'a>(
        &'a self,
        operation_id: &'a str,
        approve: bool,
        reason: Option<&'a str>,
        by: &'a str,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        async move {
            let (id, record) = self.run_record(operation_id).await?;
            let driver = self.runner.driver();
            let pending = driver.pending(id).await.map_err(RunError::failed)?;
            if pending.is_empty() {
                return Err(RunError::NothingToDecide(operation_id.to_owned()));
            }
            let decision = if approve {
                Decision::Approve
            } else {
                Decision::Reject {
                    reason: reason.map(str::to_owned),
                    halt: false,
                }
            };
            // Questions are answered, not approved: a rejection declines them, an approval
            // leaves them to be answered on the run.
            let decisions = pending
                .into_iter()
                .filter(|i| !approve || !rein_core::engine::is_question(&i.call))
                .map(|i| (i.call.id.to_string(), decision.clone(), Some(by.to_owned())))
                .collect();
            self.runner
                .spawn(
                    id,
                    record.owner.unwrap_or_default(),
                    driver,
                    Job::Decide(decisions),
                )
                .await
                .map(|_| ())
                .map_err(|e| RunError::Failed(e.message))
        }
        .boxed()
    }

    fn read_run<'a>(
        &'a self,
        instructions: &'a str,
        input: String,
        schema: serde_json::Value,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, RunError>> {
        async move {
            self.runner
                .driver()
                .ask_system_model_json(instructions, input, "run_reading", schema)
                .await
                .map_err(RunError::failed)
        }
        .boxed()
    }
}

/// The least time between two ticks woken by commit notices.
const WAKE_PAUSE: Duration = Duration::from_millis(100);

/// Tick `dispatcher` every `every`, and when `wake` is notified, until `stop`.
pub async fn dispatch_loop(
    dispatcher: Dispatcher,
    every: Duration,
    wake: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
) {
    loop {
        if let Err(e) = dispatcher.tick().await {
            tracing::warn!(error = %e, "dispatcher tick failed; retrying");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
            // Another process committed (PostgreSQL commit notices): a run this dispatcher
            // waits on may have ended. Bursts of commits coalesce into one tick per pause.
            () = wake.notified() => tokio::time::sleep(WAKE_PAUSE).await,
        }
    }
}
