//! The dispatcher: plans due fires as durable deliveries, claims them, and at dispatch time
//! rereads the task and either starts a run or records why not. Runs are started through a
//! [`Launcher`] (the server starts an operation); when one ends, the dispatcher records it,
//! counts failures (pausing the task at its threshold), and schedules the next heartbeat.
//!
//! Guarantees, whatever the interleaving of dispatchers, edits and late deliveries: a
//! `(task, due time, kind)` is planned once (the store's key) and claimed by one dispatcher at
//! a time (leases); a run starts only if, when its delivery is claimed, the task exists, is
//! active, still has that automation, has the delivery's generation, is under its cap, has no
//! unresolved decision (a run parked on a person, or an urgent decision brief: `human_waiting`),
//! and its overlap policy allows it. A run that ends gives its brief (see [`crate::briefing`]).

use crate::clock::Clock;
use crate::schedule::Schedule;
use crate::task::{Automation, CatchUp, Overlap, Task, TaskError, TaskStatus};
use chrono::{DateTime, Duration, Utc};
use futures::future::BoxFuture;
use rein_store::{BriefFilter, Delivery, DeliveryStatus, RunTrigger, TaskRun, TaskStore};
use std::sync::Arc;

/// Where a run started by the dispatcher is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Still going.
    Running,
    /// Parked on a human decision: the calls waiting.
    WaitingForHuman {
        /// Each call waiting for a person, as a brief names it.
        pending: Vec<PendingCall>,
    },
    /// Ended.
    Ended {
        /// `completed`, `error`, `cancelled`, ...
        outcome: String,
        /// Whether it counts as a success.
        success: bool,
        /// A short account of what it produced.
        brief: Option<String>,
        /// What it cost.
        cost: rein_core::Usd,
        /// Its whole answer (the handoff is taken from it).
        answer: Option<String>,
    },
}

impl RunState {
    /// Where a run stands by its stored operation: parked on a person, still going (sub-agents
    /// or an async tool working for it count), or ended (interrupted, done or failed) with its
    /// outcome (the finish reason, else the status), whether that is a success, a short
    /// account of its answer (of its error, when it failed without one) and its cost.
    pub fn of(op: &rein_store::StoredOperation) -> Self {
        use rein_core::state::Status;
        match op.record.status {
            Status::WaitingForHuman => RunState::WaitingForHuman {
                pending: op
                    .state
                    .pending_tool_calls
                    .iter()
                    .map(PendingCall::of)
                    .collect(),
            },
            Status::Idle
            | Status::Running
            | Status::WaitingForSubAgents
            | Status::WaitingForAsyncTool => RunState::Running,
            status => {
                let success = op.record.finish_reason.is_some_and(|r| r.is_success());
                // A failed run without an answer is told by its error.
                let told = op
                    .state
                    .final_answer()
                    .or_else(|| op.record.error.clone().filter(|_| !success));
                RunState::Ended {
                    outcome: op
                        .record
                        .finish_reason
                        .map_or_else(|| status.to_string(), |r| r.to_string()),
                    success,
                    brief: told.as_deref().map(crate::brief::brief_of),
                    cost: op.record.cost,
                    answer: op.state.final_answer(),
                }
            }
        }
    }
}

/// A call a parked run waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingCall {
    /// Its tool call id.
    pub id: String,
    /// What it is, for a person: the tool and its arguments, and why it asks when known.
    pub what: String,
}

impl PendingCall {
    /// `call` as a person reads it: `tool/api(arguments)`, long arguments cut.
    pub fn of(call: &rein_core::ToolCall) -> Self {
        let mut args: String = call.arguments.chars().take(300).collect();
        if call.arguments.chars().count() > 300 {
            args.push('…');
        }
        Self {
            id: call.id.to_string(),
            what: format!("{}({args})", call.key()),
        }
    }
}

/// Why a run cannot start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The task's agent was deleted since the task was made (skip reason `agent_missing`).
    #[error("agent_missing: the task's agent `{0}` no longer exists")]
    AgentMissing(String),
    /// No running slot is free (the server's running limits).
    #[error("at capacity: {0}")]
    AtCapacity(String),
    /// Anything else (the model is unavailable, the store failed, ...).
    #[error("{0}")]
    Failed(String),
}

/// Why a launcher could not read, stop, decide or read back a run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The run's id is not an operation id.
    #[error("`{0}` is not an operation id")]
    BadId(String),
    /// No operation has the run's id.
    #[error("no operation {0}")]
    Unknown(String),
    /// The run waits for no decision.
    #[error("run {0} waits for no decision")]
    NothingToDecide(String),
    /// This process cannot decide runs (the CLI's launcher).
    #[error("this process cannot decide run {0}; decide it where it runs")]
    CannotDecide(String),
    /// The goal refused the decision (it is not where it can happen), as it said.
    #[error("the goal refused: {0}")]
    GoalRefused(String),
    /// The store, the driver or the system model failed, as it said.
    #[error("{0}")]
    Failed(String),
}

impl RunError {
    /// `e` as a failure of what the launcher relies on.
    pub fn failed(e: impl std::fmt::Display) -> Self {
        Self::Failed(e.to_string())
    }
}

/// Starts and watches runs (the server's operations).
pub trait Launcher: Send + Sync {
    /// Whether a run of `task` could start now (its agent exists); checked before a fire is
    /// counted, so a fire that cannot run is skipped with the reason instead.
    fn ready<'a>(&'a self, _task: &'a Task) -> BoxFuture<'a, Result<(), LaunchError>> {
        Box::pin(async { Ok(()) })
    }
    /// Start a run of `task`; returns its operation id.
    fn launch<'a>(
        &'a self,
        task: &'a Task,
        trigger: RunTrigger,
    ) -> BoxFuture<'a, Result<String, LaunchError>>;
    /// Where a run is.
    fn state<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Result<RunState, RunError>>;
    /// Stop a run that went over its time (a heartbeat's per-run timeout).
    fn cancel<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Result<(), RunError>>;
    /// Decide every call parked run `operation_id` waits on: approve them, or reject them
    /// with `reason` (the model reads it); `by` names who decided. The run continues.
    fn decide<'a>(
        &'a self,
        operation_id: &'a str,
        _approve: bool,
        _reason: Option<&'a str>,
        _by: &'a str,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move { Err(RunError::CannotDecide(operation_id.to_owned())) })
    }
    /// Decide goal `goal` of `owner` as the action `action` of a brief about it says
    /// (`retry:WORK`, `skip:WORK`, `resume`, `replan`, `accept`, `reject`, `cancel`; `comment`
    /// the reason or note), as `owner`'s decision.
    fn decide_goal<'a>(
        &'a self,
        _owner: &'a str,
        goal: &'a str,
        _action: &'a str,
        _comment: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move { Err(RunError::CannotDecide(goal.to_owned())) })
    }
    /// Ask the system model to read a run that ended ([`crate::reading`]): `instructions`,
    /// `input`, an answer as JSON matching `schema`. `None` without a system model (the
    /// default): handoffs are then extracted and briefs follow the rules.
    fn read_run<'a>(
        &'a self,
        _instructions: &'a str,
        _input: String,
        _schema: serde_json::Value,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, RunError>> {
        Box::pin(async { Ok(None) })
    }
}

/// Fires this late are "missed" (the catch-up policy decides).
pub const DEFAULT_GRACE_SECS: i64 = 60;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tick {
    /// Deliveries planned.
    pub planned: usize,
    /// Runs started.
    pub started: usize,
    /// Deliveries skipped (with a reason each).
    pub skipped: usize,
    /// Runs found ended.
    pub ended: usize,
}

/// One dispatcher (several may share a PostgreSQL store).
pub struct Dispatcher {
    store: Arc<dyn TaskStore>,
    clock: Arc<dyn Clock>,
    launcher: Arc<dyn Launcher>,
    /// This dispatcher's name in claims.
    pub worker: String,
    /// How long a claim is held before another dispatcher may take it over.
    pub lease: Duration,
    /// Fires later than this are missed.
    pub grace: Duration,
}

impl Dispatcher {
    /// A dispatcher named `worker`.
    pub fn new(
        store: Arc<dyn TaskStore>,
        clock: Arc<dyn Clock>,
        launcher: Arc<dyn Launcher>,
        worker: impl Into<String>,
    ) -> Self {
        Self {
            store,
            clock,
            launcher,
            worker: worker.into(),
            lease: Duration::seconds(60),
            grace: Duration::seconds(DEFAULT_GRACE_SECS),
        }
    }

    /// Reap ended runs, plan due fires, dispatch them.
    pub async fn tick(&self) -> Result<Tick, TaskError> {
        let mut t = Tick {
            ended: self.reap().await?,
            ..Tick::default()
        };
        t.planned = self.plan().await?;
        let (started, skipped) = self.dispatch().await?;
        t.started = started + self.unblock().await?;
        t.skipped = skipped;
        Ok(t)
    }

    async fn load(&self, id: &str) -> Result<Option<Task>, TaskError> {
        self.store
            .get_task(id)
            .await?
            .map(Task::from_row)
            .transpose()
    }

    /// Apply `change` to task `id` (see [`crate::task::update_task`]).
    async fn update(
        &self,
        id: &str,
        change: impl Fn(&mut Task) -> bool,
    ) -> Result<Option<Task>, TaskError> {
        crate::task::update_task(&*self.store, id, self.clock.now(), change).await
    }

    fn delivery(&self, task: &Task, kind: RunTrigger, due: DateTime<Utc>) -> Delivery {
        Delivery {
            task_id: task.id.clone(),
            due_at: due,
            kind,
            generation: task.generation.clone(),
            status: DeliveryStatus::Pending,
            claimed_by: None,
            lease_until: None,
            reason: None,
            operation_id: None,
            created_at: self.clock.now(),
        }
    }

    /// Plan the schedule fires due by now (heartbeats are planned when a run ends, or when a
    /// beat is skipped: [`Dispatcher::beat_on`]).
    async fn plan(&self) -> Result<usize, TaskError> {
        let now = self.clock.now();
        let mut planned = 0;
        for row in self.store.list_tasks(None).await? {
            let task = match Task::from_row(row) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(error = %e, "task skipped");
                    continue;
                }
            };
            let Automation::Schedule { pattern, tz } = &task.automation else {
                continue;
            };
            if task.status != TaskStatus::Active {
                continue;
            }
            let schedule = Schedule::cron(pattern, tz)?;
            let from = task.planned_until.unwrap_or(task.created_at);
            let mut due = Vec::new();
            let mut cursor = from;
            while let Some(t) = schedule.next_after(cursor)? {
                if t > now || due.len() >= 10_000 {
                    break;
                }
                due.push(t);
                cursor = t;
            }
            if due.is_empty() {
                continue;
            }
            let missed_before = now - self.grace;
            let last_missed = due.iter().rposition(|t| *t < missed_before);
            for (i, t) in due.iter().enumerate() {
                let mut d = self.delivery(&task, RunTrigger::Schedule, *t);
                let missed = *t < missed_before;
                let catch_up = task.catch_up == CatchUp::RunOnce && Some(i) == last_missed;
                if missed && !catch_up {
                    d.status = DeliveryStatus::Skipped;
                    d.reason = Some("missed: no scheduler was running when it was due".into());
                }
                if self.store.add_delivery(&d).await? {
                    planned += 1;
                }
            }
            let until = due.last().copied();
            let generation = task.generation.clone();
            self.update(&task.id, |t| {
                // Only advance the cursor of the automation that was planned.
                if t.generation != generation || t.planned_until >= until {
                    return false;
                }
                t.planned_until = until;
                true
            })
            .await?;
        }
        Ok(planned)
    }

    /// Why a claimed delivery must not run now, if it must not; `Defer` keeps it queued.
    async fn verdict(&self, d: &Delivery, task: Option<&Task>) -> Result<Verdict, TaskError> {
        let Some(task) = task else {
            return Ok(Verdict::Skip("the task was deleted".into()));
        };
        if task.status != TaskStatus::Active {
            let status = task.status.to_string();
            return Ok(Verdict::Skip(format!("the task is {status}")));
        }
        if task.automation.kind() != Some(d.kind) {
            return Ok(Verdict::Skip(format!(
                "the automation is no longer a {} (the mode changed)",
                d.kind
            )));
        }
        if task.generation != d.generation {
            return Ok(Verdict::Skip(match d.kind {
                RunTrigger::Heartbeat => {
                    "a stale heartbeat (the heartbeat was edited or restarted)".into()
                }
                RunTrigger::Schedule | RunTrigger::Manual | RunTrigger::Dependency => {
                    "the schedule changed after this fire was planned".into()
                }
            }));
        }
        if task.cap_reached() {
            return Ok(Verdict::Skip(format!(
                "the execution cap ({}) is reached",
                task.max_executions.unwrap_or_default()
            )));
        }
        if let Err(e @ LaunchError::AgentMissing(_)) = self.launcher.ready(task).await {
            return Ok(Verdict::Skip(e.to_string()));
        }
        if let Some(why) = crate::deps::blocker(&*self.store, task).await? {
            return Ok(Verdict::Skip(why));
        }
        // An urgent decision nobody resolved holds the task's fires (errors do not: they ask
        // for a retry, and the schedule carries on).
        let open = BriefFilter {
            task_id: Some(task.id.clone()),
            unresolved: true,
            limit: 50,
            ..Default::default()
        };
        if let Some(b) = self
            .store
            .list_briefs(&open)
            .await?
            .into_iter()
            .find(|b| b.holds_task())
        {
            return Ok(Verdict::Skip(format!(
                "human_waiting: brief {} ({}) waits for a decision",
                b.id, b.title
            )));
        }
        let mut running = false;
        for run in self.store.runs(&task.id, 50).await? {
            if run.finished_at.is_some() {
                continue;
            }
            match self.launcher.state(&run.operation_id).await {
                Ok(RunState::WaitingForHuman { .. }) => {
                    return Ok(Verdict::Skip(
                        "a human decision on the last run is unresolved".into(),
                    ));
                }
                Ok(RunState::Running) => running = true,
                // Ended but not reaped yet: the next reap records it.
                Ok(RunState::Ended { .. }) => {}
                Err(e) => {
                    tracing::warn!(operation = %run.operation_id, error = %e, "run state unknown; treated as running");
                    running = true;
                }
            }
        }
        if running {
            return Ok(match task.overlap {
                Overlap::Allow => Verdict::Run,
                Overlap::Skip => Verdict::Skip("a run is still in flight".into()),
                Overlap::QueueOne => Verdict::Defer,
            });
        }
        Ok(Verdict::Run)
    }

    /// A skipped heartbeat fire keeps its chain beating: the next beat is due one interval
    /// after the skipped one (while the task is active, the heartbeat unchanged and no
    /// heartbeat run is still open, whose end continues it), so a heartbeat held by a decision
    /// runs again once the decision is made. Added before the
    /// fire is settled and keyed by its due time, so a retry after a crash adds nothing twice.
    async fn beat_on(&self, d: &Delivery, task: &Task) -> Result<(), TaskError> {
        let (Automation::Heartbeat { every_secs, .. }, TaskStatus::Active) =
            (&task.automation, task.status)
        else {
            return Ok(());
        };
        if d.kind != RunTrigger::Heartbeat || d.generation != task.generation {
            return Ok(());
        }
        // A heartbeat run still open (parked on a person) continues the chain when it ends.
        let open = self.store.runs(&task.id, 50).await?;
        if open
            .iter()
            .any(|r| r.finished_at.is_none() && r.trigger == RunTrigger::Heartbeat)
        {
            return Ok(());
        }
        let next = d.due_at + Duration::seconds(i64::try_from(*every_secs).unwrap_or(i64::MAX / 2));
        self.store
            .add_delivery(&self.delivery(task, RunTrigger::Heartbeat, next))
            .await?;
        Ok(())
    }

    /// Claim due deliveries and start or skip each.
    async fn dispatch(&self) -> Result<(usize, usize), TaskError> {
        let now = self.clock.now();
        let claimed = self
            .store
            .claim_deliveries(now, &self.worker, now + self.lease, 100)
            .await?;
        let (mut started, mut skipped) = (0, 0);
        let mut queued: Vec<String> = Vec::new();
        for d in claimed {
            let task = self.load(&d.task_id).await?;
            let verdict = self.verdict(&d, task.as_ref()).await?;
            match verdict {
                Verdict::Defer if !queued.contains(&d.task_id) => {
                    queued.push(d.task_id.clone());
                    self.store.release_delivery(&d, &self.worker).await?;
                }
                Verdict::Defer => {
                    skipped += 1;
                    self.store
                        .settle_delivery(
                            &d,
                            &self.worker,
                            DeliveryStatus::Skipped,
                            Some("a run is in flight and one fire is already queued"),
                            None,
                        )
                        .await?;
                }
                Verdict::Skip(reason) => {
                    skipped += 1;
                    if let Some(t) = &task {
                        self.beat_on(&d, t).await?;
                    }
                    self.store
                        .settle_delivery(
                            &d,
                            &self.worker,
                            DeliveryStatus::Skipped,
                            Some(&reason),
                            None,
                        )
                        .await?;
                }
                Verdict::Run => {
                    let Some(task) = task else {
                        continue;
                    };
                    // Count the run first: a crash after launching must not lose the count.
                    let generation = d.generation.clone();
                    let counted = self
                        .update(&task.id, |t| {
                            if t.generation != generation
                                || t.cap_reached()
                                || t.status != TaskStatus::Active
                            {
                                return false;
                            }
                            t.executions += 1;
                            if t.cap_reached() {
                                // The run that reaches the cap completes the schedule.
                                t.status = TaskStatus::Completed;
                                t.status_reason = Some("the execution cap was reached".into());
                            }
                            true
                        })
                        .await?;
                    let Some(task) = counted else {
                        skipped += 1;
                        self.store
                            .settle_delivery(
                                &d,
                                &self.worker,
                                DeliveryStatus::Skipped,
                                Some("the task changed while this fire was dispatched"),
                                None,
                            )
                            .await?;
                        continue;
                    };
                    match self.launcher.launch(&task, d.kind).await {
                        Ok(op) => {
                            self.took_feedback(&task, &op).await?;
                            self.store
                                .add_run(&TaskRun::started(
                                    op.clone(),
                                    task.id.clone(),
                                    d.kind,
                                    Some(d.due_at),
                                    self.clock.now(),
                                ))
                                .await?;
                            self.store
                                .settle_delivery(
                                    &d,
                                    &self.worker,
                                    DeliveryStatus::Dispatched,
                                    None,
                                    Some(&op),
                                )
                                .await?;
                            started += 1;
                        }
                        Err(e) => {
                            skipped += 1;
                            let reason = match &e {
                                LaunchError::AgentMissing(_) | LaunchError::AtCapacity(_) => {
                                    e.to_string()
                                }
                                LaunchError::Failed(_) => format!("the run could not start: {e}"),
                            };
                            self.store
                                .settle_delivery(
                                    &d,
                                    &self.worker,
                                    DeliveryStatus::Skipped,
                                    Some(&reason),
                                    None,
                                )
                                .await?;
                        }
                    }
                }
            }
        }
        Ok((started, skipped))
    }

    /// Record ended runs: outcome and brief, failure counting (pausing at the threshold), and
    /// the next heartbeat.
    async fn reap(&self) -> Result<usize, TaskError> {
        let mut ended = 0;
        for run in self.store.open_runs(1_000).await? {
            let state = match self.launcher.state(&run.operation_id).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(operation = %run.operation_id, error = %e, "run state unknown");
                    continue;
                }
            };
            let now = self.clock.now();
            if let RunState::WaitingForHuman { pending } = &state {
                // Nobody watches a task's run: the person is asked in a brief (and the hook).
                if let Some(task) = self.load(&run.task_id).await? {
                    crate::briefing::ask_for_approval(&*self.store, &task, &run, pending, now)
                        .await?;
                }
                continue;
            }
            // Decided (here, on the operation itself, or by its brief): an approval brief
            // still open says so and no longer holds the task.
            crate::briefing::close_approval_briefs(&*self.store, &run, now).await?;
            let RunState::Ended {
                outcome,
                success,
                brief,
                cost,
                answer,
            } = state
            else {
                if state == RunState::Running && run.trigger == RunTrigger::Heartbeat {
                    self.cancel_if_over_time(&run).await?;
                }
                continue;
            };
            let task = self.load(&run.task_id).await?;
            let reading = match (&task, answer.as_deref().filter(|a| !a.trim().is_empty())) {
                (Some(t), Some(a)) => {
                    crate::reading::read(&*self.launcher, t, &run.operation_id, &outcome, a).await
                }
                _ => None,
            };
            crate::briefing::record_run_end(
                &*self.store,
                task.as_ref(),
                &run,
                &crate::briefing::Ended {
                    outcome: &outcome,
                    success,
                    summary: brief.as_deref(),
                    cost,
                    answer: answer.as_deref(),
                    reading: reading.as_ref(),
                },
                now,
            )
            .await?;
            ended += 1;
            let updated = self
                .update(&run.task_id, |t| {
                    if success {
                        t.consecutive_failures = 0;
                    } else {
                        t.consecutive_failures += 1;
                        if t.consecutive_failures >= t.failure_threshold
                            && t.status == TaskStatus::Active
                        {
                            t.status = TaskStatus::Paused;
                            t.status_reason = Some(format!(
                                "paused after {} failed runs in a row",
                                t.consecutive_failures
                            ));
                        }
                    }
                    true
                })
                .await?;
            // The next beat continues this run's chain only if the heartbeat was not edited or
            // restarted meanwhile (that started a chain of its own).
            let Some(t) = updated.filter(|_| run.trigger == RunTrigger::Heartbeat) else {
                continue;
            };
            let (Automation::Heartbeat { every_secs, .. }, TaskStatus::Active) =
                (&t.automation, t.status)
            else {
                continue;
            };
            let chain = self
                .store
                .deliveries(&t.id, 200)
                .await?
                .into_iter()
                .find(|d| d.operation_id.as_deref() == Some(run.operation_id.as_str()))
                .map(|d| d.generation);
            if chain.as_deref() == Some(t.generation.as_str()) {
                let next =
                    now + Duration::seconds(i64::try_from(*every_secs).unwrap_or(i64::MAX / 2));
                self.store
                    .add_delivery(&self.delivery(&t, RunTrigger::Heartbeat, next))
                    .await?;
            }
        }
        Ok(ended)
    }

    /// Start, once, each active task whose dependencies have all completed since they were
    /// set (trigger `dependency`). The task is marked first, so a crash cannot start it twice.
    async fn unblock(&self) -> Result<usize, TaskError> {
        let mut started = 0;
        for row in self.store.list_tasks(None).await? {
            let Ok(task) = Task::from_row(row) else {
                continue;
            };
            if task.depends_on.is_empty()
                || task.unblocked
                || task.status != TaskStatus::Active
                || crate::deps::blocker(&*self.store, &task).await?.is_some()
            {
                continue;
            }
            let deps = task.depends_on.clone();
            let Some(task) = self
                .update(&task.id, |t| {
                    if t.unblocked || t.depends_on != deps || t.status != TaskStatus::Active {
                        return false;
                    }
                    t.unblocked = true;
                    true
                })
                .await?
            else {
                continue;
            };
            match self.launcher.launch(&task, RunTrigger::Dependency).await {
                Ok(op) => {
                    self.took_feedback(&task, &op).await?;
                    self.store
                        .add_run(&TaskRun::started(
                            op,
                            task.id.clone(),
                            RunTrigger::Dependency,
                            None,
                            self.clock.now(),
                        ))
                        .await?;
                    started += 1;
                }
                Err(e) => {
                    tracing::warn!(task = %task.id, error = %e, "a task whose dependencies completed could not start");
                }
            }
        }
        Ok(started)
    }

    /// The feedback a run's prompt carried (see [`Task::prompt`]) is taken by it.
    async fn took_feedback(&self, task: &Task, op: &str) -> Result<(), TaskError> {
        if task.feedback.iter().all(|f| f.taken_by.is_some()) {
            return Ok(());
        }
        let started = self.clock.now();
        self.update(&task.id, |t| t.take_feedback(op, started))
            .await?;
        Ok(())
    }

    /// Cancel a heartbeat run that went over its task's per-run timeout.
    async fn cancel_if_over_time(&self, run: &TaskRun) -> Result<(), TaskError> {
        let Some(task) = self.load(&run.task_id).await? else {
            return Ok(());
        };
        let Automation::Heartbeat {
            timeout_secs: Some(limit),
            ..
        } = task.automation
        else {
            return Ok(());
        };
        let limit = Duration::seconds(i64::try_from(limit).unwrap_or(i64::MAX / 2));
        if self.clock.now() - run.started_at > limit
            && let Err(e) = self.launcher.cancel(&run.operation_id).await
        {
            tracing::warn!(operation = %run.operation_id, error = %e, "a run over its timeout could not be cancelled");
        }
        Ok(())
    }
}

enum Verdict {
    Run,
    Skip(String),
    Defer,
}
