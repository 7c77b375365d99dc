//! Running goals: the coordinator's instructions ([`rein_core::goal::decide`]) done against the
//! store, one committed event at a time. A planner call becomes a checked plan, a work's
//! attempt an operation of its agent (its id derived from the goal, the work and the attempt,
//! its budget what the goal has left), its end an independent verification by another model
//! (strict verdict schema), and the last one the final acceptance. The goal's budget covers its
//! own calls and every work's operation; past it, the goal stops or waits for a person as its
//! policy says. Whatever process runs a goal ([`GoalRunner::run`], the CLI in the foreground,
//! a server in the background) can stop at any point: the graph committed says what is left,
//! a work started before the stop is followed (or created, if the stop came between) and never
//! started twice, and a verdict committed is never asked again.

mod briefs;
mod budget;
mod calls;

use crate::{Driver, Host, SpecOrigin, StartOptions};
use rein_core::goal::{
    AttemptEnd, Goal, GoalDecision, GoalEvent, GoalInstruction, GoalLimits, GoalSettings,
    GoalStatus, decide, plan, prompts, verification_operation_id,
};
use rein_core::ids::GoalId;
use rein_core::state::Status;
use rein_core::{OperationId, Usd};
use rein_store::{Accounts, GoalRecord, GoalSpend, Goals, SqlStore, Store, StoreError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use briefs::{NoDecision, decision_of};
pub use budget::Ledger;

/// Why a goal could not be created, decided on or advanced.
#[derive(Debug, thiserror::Error)]
pub enum GoalRunError {
    /// No such goal (of this owner).
    #[error("no goal {0}")]
    NotFound(GoalId),
    /// The objective is empty or too long.
    #[error("the objective is empty or longer than {} characters", plan::MAX_TEXT)]
    BadObjective,
    /// The acceptance criteria are too long.
    #[error(
        "the acceptance criteria are longer than {} characters",
        plan::MAX_TEXT
    )]
    BadAcceptance,
    /// The agent named does not exist.
    #[error("no agent `{0}`")]
    AgentMissing(String),
    /// A limit that cannot be.
    #[error("{0}")]
    BadLimits(String),
    /// The event does not fit the goal as it is.
    #[error(transparent)]
    Refused(#[from] rein_core::goal::GoalError),
    /// A person's plan was refused, naming what is wrong (the goal is unchanged).
    #[error("the plan is refused: {0}")]
    PlanRefused(#[from] plan::PlanError),
    /// Another process changed the goal between reading and committing: try again.
    #[error("goal {0} changed meanwhile; try again")]
    Raced(GoalId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A brief's action that is no decision on a goal, or names no goal.
    #[error(transparent)]
    NoDecision(#[from] briefs::NoDecision),
    /// The verifier agent is also the agent doing the works.
    #[error(
        "the verifier agent `{0}` is the goal's own agent: a work is never judged by who did it"
    )]
    VerifierIsWorker(String),
}

/// A new goal as asked.
#[derive(Clone, Debug, Default)]
pub struct NewGoal {
    /// What to achieve.
    pub objective: String,
    /// What the final acceptance checks (default: the objective).
    pub acceptance: Option<String>,
    /// How it runs.
    pub settings: GoalSettings,
    /// Its bounds.
    pub limits: GoalLimits,
}

/// What one [`GoalRunner::advance`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advanced {
    /// Events committed.
    pub committed: usize,
    /// Where the goal stands after them.
    pub status: GoalStatus,
    /// Whether a work's operation runs, so a later look will find it further (one parked on a
    /// person does not count).
    pub waiting: bool,
}

/// What doing one instruction came to.
enum Step {
    /// An event to commit, with what it spent.
    Done(GoalEvent, GoalSpend),
    /// A work's operation runs: a later look finds it further.
    Progressing,
    /// A work's operation waits for a person.
    Parked,
}

/// What a verification came to.
enum Judged {
    /// Its verdict.
    Verdict(rein_core::goal::Verdict, GoalSpend),
    /// A verifier agent's operation runs.
    Progressing,
    /// A verifier agent's operation waits for a person.
    Parked,
}

impl Judged {
    /// The step it makes, its verdict committed as `event` says.
    fn step(self, event: impl FnOnce(rein_core::goal::Verdict) -> GoalEvent) -> Step {
        match self {
            Judged::Verdict(verdict, spend) => Step::Done(event(verdict), spend),
            Judged::Progressing => Step::Progressing,
            Judged::Parked => Step::Parked,
        }
    }
}

/// The operation of a verifier agent's final acceptance of `goal` as planned now.
fn acceptance_operation(goal: &Goal) -> OperationId {
    let revision = u32::try_from(goal.revisions.len()).unwrap_or(u32::MAX);
    verification_operation_id(goal.id, None, revision, 0)
}

/// Where a goal's operation stands.
enum Followed {
    /// It ended so.
    Ended(AttemptEnd),
    /// It runs (here, or in another process).
    Running,
    /// It waits for a person.
    Parked,
}

/// Runs goals of one owner with one host's models, agents and tools.
pub struct GoalRunner {
    /// Models, defaults and agents' specs.
    pub host: Host,
    /// The store (goals, accounts, operations).
    pub store: Arc<SqlStore>,
    /// Runs works' operations.
    pub driver: Arc<Driver>,
    /// Whose agents do the works.
    pub agents_of: String,
    /// Where works run (their owner, their working directory).
    pub origin: SpecOrigin,
    /// Operations this process runs for works, each with whether its run has returned.
    running: Mutex<HashMap<OperationId, Arc<AtomicBool>>>,
    /// How a work's operation is run (none: [`Driver::run`] in a task of this process).
    launch: Option<Launch>,
}

/// How a server runs a work's operation (under its leases and admission), given the
/// operation.
pub type Launch = Arc<dyn Fn(OperationId) + Send + Sync>;

impl GoalRunner {
    /// A runner for `agents_of`'s goals.
    pub fn new(
        host: Host,
        store: Arc<SqlStore>,
        driver: Arc<Driver>,
        agents_of: String,
        origin: SpecOrigin,
    ) -> Self {
        Self {
            host,
            store,
            driver,
            agents_of,
            origin,
            running: Mutex::default(),
            launch: None,
        }
    }

    /// Builder: works' operations are run by `launch` (a server's runner) instead of in a task
    /// of this process.
    pub fn with_launch(mut self, launch: Launch) -> Self {
        self.launch = Some(launch);
        self
    }

    /// Keep a new goal of `owner` (checked: an objective, an agent that exists, limits that
    /// can be); it waits for its first plan.
    pub async fn create(&self, owner: &str, new: NewGoal) -> Result<GoalRecord, GoalRunError> {
        let objective = new.objective.trim();
        if objective.is_empty() || objective.chars().count() > plan::MAX_TEXT {
            return Err(GoalRunError::BadObjective);
        }
        if new
            .acceptance
            .as_ref()
            .is_some_and(|a| a.chars().count() > plan::MAX_TEXT)
        {
            return Err(GoalRunError::BadAcceptance);
        }
        if let Some(agent) = &new.settings.agent
            && self
                .store
                .get_agent(&self.agents_of, agent)
                .await?
                .is_none()
        {
            return Err(GoalRunError::AgentMissing(agent.clone()));
        }
        if let Some(judge) = &new.settings.verifier_agent {
            if new.settings.agent.as_deref() == Some(judge.as_str()) {
                return Err(GoalRunError::VerifierIsWorker(judge.clone()));
            }
            if self
                .store
                .get_agent(&self.agents_of, judge)
                .await?
                .is_none()
            {
                return Err(GoalRunError::AgentMissing(judge.clone()));
            }
        }
        if new.settings.budget.on_exceeded == rein_core::state::BudgetPolicy::Warn {
            return Err(GoalRunError::BadLimits(
                "a goal's budget stops it or interrupts it (stop or interrupt), never only warns"
                    .into(),
            ));
        }
        let l = &new.limits;
        if l.max_attempts == 0 || l.max_attempts > 20 {
            return Err(GoalRunError::BadLimits(
                "max attempts is between 1 and 20".into(),
            ));
        }
        if l.max_parallel == 0 || l.max_parallel > 32 || l.max_works == 0 || l.max_works > 200 {
            return Err(GoalRunError::BadLimits(
                "parallel works is between 1 and 32, works between 1 and 200".into(),
            ));
        }
        let mut goal = Goal::new(objective);
        goal.acceptance = new
            .acceptance
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty());
        goal.limits = new.limits;
        let now = chrono::Utc::now();
        let record = GoalRecord {
            owner: owner.to_owned(),
            goal,
            settings: new.settings,
            seq: 0,
            spent: Usd::ZERO,
            spent_tokens: 0,
            created_at: now,
            updated_at: now,
        };
        self.store.create_goal(&record).await?;
        Ok(record)
    }

    async fn load(&self, owner: Option<&str>, id: GoalId) -> Result<GoalRecord, GoalRunError> {
        self.store
            .goal(owner, id)
            .await?
            .ok_or(GoalRunError::NotFound(id))
    }

    /// Fold `event` into `record`'s goal and commit it with `spend`.
    async fn commit(
        &self,
        record: &GoalRecord,
        event: GoalEvent,
        spend: GoalSpend,
    ) -> Result<Goal, GoalRunError> {
        self.commit_with(record, event, spend, None).await
    }

    /// [`GoalRunner::commit`], writing `settings` with it when the event changed them.
    async fn commit_with(
        &self,
        record: &GoalRecord,
        event: GoalEvent,
        spend: GoalSpend,
        settings: Option<&GoalSettings>,
    ) -> Result<Goal, GoalRunError> {
        let mut goal = record.goal.clone();
        goal.apply(&event)?;
        if !self
            .store
            .commit_goal(record.seq, &goal, &event, spend, settings)
            .await?
        {
            return Err(GoalRunError::Raced(goal.id));
        }
        let seq = record.seq.saturating_add(1);
        // Told after the commit: a process stopping between loses the brief, never the goal.
        if let Some(brief) = briefs::on_change(&record.owner, record.goal.status, &goal)
            && let Err(e) = rein_store::Briefs::add_brief(&*self.store, &brief, None).await
        {
            tracing::warn!(goal = %goal.id, error = %e, "the goal's brief was not raised");
        }
        crate::driver::pause_point(&format!("goal:{seq}")).await;
        Ok(goal)
    }

    /// A person's decision on `owner`'s goal `id`: committed, and a cancel also cancels the
    /// works' running operations.
    pub async fn decide(
        &self,
        owner: &str,
        id: GoalId,
        by: &str,
        decision: GoalDecision,
    ) -> Result<Goal, GoalRunError> {
        let record = self.load(Some(owner), id).await?;
        let cancel = decision == GoalDecision::Cancel;
        let goal = self
            .commit(
                &record,
                GoalEvent::Decided {
                    by: by.to_owned(),
                    decision,
                },
                GoalSpend::default(),
            )
            .await?;
        if cancel {
            self.cancel_works(&goal).await;
        }
        Ok(goal)
    }

    /// The decision brief action `action` asks of goal `goal` (a brief's `goal` artifact), with
    /// the person's `comment` ([`decision_of`]), committed as `owner`'s.
    pub async fn decide_from_brief(
        &self,
        owner: &str,
        goal: &str,
        action: &str,
        comment: Option<&str>,
    ) -> Result<Goal, GoalRunError> {
        let decision = decision_of(action, comment)?;
        let id = goal
            .parse()
            .map_err(|_| briefs::NoDecision::NotAGoal(goal.to_owned()))?;
        let by = self
            .store
            .user_by_id(owner)
            .await?
            .map_or_else(|| owner.to_owned(), |u| u.name);
        self.decide(owner, id, &by, decision).await
    }

    /// `by`'s own plan for `owner`'s goal `id`, because `why`: checked as the planner's is
    /// (ids, texts, dependencies, cycles, the goal's size, assignees among the owner's
    /// agents), keeping the works that passed or were retired, and committed as one revision.
    /// Refused while a work runs (pause the goal and let them finish first).
    pub async fn edit_plan(
        &self,
        owner: &str,
        id: GoalId,
        by: &str,
        proposed: &plan::ProposedPlan,
        why: &str,
    ) -> Result<Goal, GoalRunError> {
        let record = self.load(Some(owner), id).await?;
        record.goal.editable()?;
        let agents: Vec<String> = self
            .store
            .list_agents(&self.agents_of)
            .await?
            .into_iter()
            .map(|a| a.name)
            .collect();
        let why = match why.trim() {
            "" => "edited by hand",
            w => w,
        };
        let (works, revision) =
            plan::check(&record.goal, proposed, &format!("user:{by}"), why, |a| {
                agents.iter().any(|n| n == a)
            })?;
        self.commit(
            &record,
            GoalEvent::Edited { works, revision },
            GoalSpend::default(),
        )
        .await
    }

    /// `by`'s new limits for `owner`'s goal `id` (what it may spend in all; `None`: kept),
    /// committed with the goal's settings; each work's operation that its share of the old
    /// limits interrupted gets its share of the new ones and is resumed (committed), so the
    /// goal's next run drives it on where it stopped.
    pub async fn set_limits(
        &self,
        owner: &str,
        id: GoalId,
        by: &str,
        cost_limit: Option<Usd>,
        token_limit: Option<u64>,
    ) -> Result<Goal, GoalRunError> {
        if cost_limit.is_none() && token_limit.is_none() {
            return Err(GoalRunError::BadLimits(
                "name a new cost limit or token limit".into(),
            ));
        }
        let record = self.load(Some(owner), id).await?;
        let mut settings = record.settings.clone();
        if let Some(c) = cost_limit {
            settings.budget.max_cost = Some(c);
        }
        if let Some(t) = token_limit {
            settings.budget.max_tokens = Some(t);
        }
        let goal = self
            .commit_with(
                &record,
                GoalEvent::LimitsSet {
                    by: by.to_owned(),
                    cost_limit,
                    token_limit,
                },
                GoalSpend::default(),
                Some(&settings),
            )
            .await?;
        // New limits change neither the works nor what was spent: the ledger read from the
        // record as loaded is the goal's now.
        let ledger = self.ledger(&record).await?;
        for w in &goal.works {
            let Some(a) = w.last().filter(|a| a.end.is_none()) else {
                continue;
            };
            let Some(op) = self.store.load_operation(a.operation).await? else {
                continue;
            };
            if op.record.status != Status::Interrupted {
                continue;
            }
            // What it spent stays its own; what the goal has left is added to it.
            let budget = ledger.for_running_work(&settings.budget, &op.state.budget, &op.record);
            if let Err(e) = self.driver.raise_budget(a.operation, &budget).await {
                tracing::warn!(goal = %id, work = %w.id, error = %e, "a work's operation kept its old limits");
            }
        }
        Ok(goal)
    }

    async fn cancel_works(&self, goal: &Goal) {
        for w in &goal.works {
            if let Some(a) = w.last().filter(|a| a.end.is_none())
                && let Err(e) = self.driver.cancel(a.operation).await
            {
                tracing::warn!(goal = %goal.id, work = %w.id, error = %e, "a work's operation was not cancelled");
            }
        }
    }

    /// Do what goal `id` asks next, committing each event, until it waits (a work runs) or
    /// rests (it waits for a person, or is over).
    pub async fn advance(&self, id: GoalId) -> Result<Advanced, GoalRunError> {
        let mut committed = 0;
        loop {
            let record = self.load(None, id).await?;
            // Past its budget, a goal that still starts things stops (or waits for a person);
            // one already waiting or over starts nothing more anyway.
            let starts = matches!(
                record.goal.status,
                GoalStatus::Planning | GoalStatus::Running | GoalStatus::Paused
            );
            if starts && let Some(spent) = self.over_budget(&record, None).await? {
                let stop =
                    record.settings.budget.on_exceeded != rein_core::state::BudgetPolicy::Interrupt;
                let goal = self
                    .commit(
                        &record,
                        GoalEvent::BudgetSpent { stop, why: spent },
                        GoalSpend::default(),
                    )
                    .await?;
                // Under `stop` nothing of it runs on; under `interrupt` its works' operations
                // are parked by their own budget, resumable once it is raised.
                if stop {
                    self.cancel_works(&goal).await;
                }
                committed += 1;
                continue;
            }
            let mut waiting = false;
            let mut done = None;
            for instruction in decide(&record.goal) {
                match self.execute(&record, instruction).await? {
                    Step::Done(event, spend) => {
                        done = Some((event, spend));
                        break;
                    }
                    Step::Progressing => waiting = true,
                    Step::Parked => {}
                }
            }
            match done {
                Some((event, spend)) => {
                    self.commit(&record, event, spend).await?;
                    committed += 1;
                }
                None => {
                    // About to rest: a work followed may have spent since the check above (its
                    // operation committed a costly step, then parked on its own budget), and
                    // resting now would leave the goal "running" past its budget. Look again.
                    if starts && !waiting && self.over_budget(&record, None).await?.is_some() {
                        continue;
                    }
                    return Ok(Advanced {
                        committed,
                        status: record.goal.status,
                        waiting,
                    });
                }
            }
        }
    }

    /// Whether goal `record` rests: over, or nothing can be done for it now without a person
    /// (no plan, start, verdict or budget stop due, and every work's operation it follows
    /// waits for a person). What a follower elsewhere waits for; nothing is changed. `ledger`
    /// is the goal's, as [`GoalRunner::ledger`] just read it.
    pub async fn at_rest(
        &self,
        record: &GoalRecord,
        ledger: &Ledger,
    ) -> Result<bool, GoalRunError> {
        let goal = &record.goal;
        if goal.status.is_final() {
            return Ok(true);
        }
        let starts = matches!(
            goal.status,
            GoalStatus::Planning | GoalStatus::Running | GoalStatus::Paused
        );
        if starts && self.over_budget(record, Some(ledger)).await?.is_some() {
            return Ok(false);
        }
        for instruction in decide(goal) {
            let operation = match (instruction, &record.settings.verifier_agent) {
                (GoalInstruction::AwaitWork { operation, .. }, _) => operation,
                (GoalInstruction::Verify { work, attempt }, Some(_)) => {
                    let revision = goal.work(&work).map(|w| w.revision).unwrap_or_default();
                    verification_operation_id(goal.id, Some(&work), revision, attempt)
                }
                (GoalInstruction::Accept, Some(_)) => acceptance_operation(goal),
                (
                    GoalInstruction::Plan { .. }
                    | GoalInstruction::StartWork { .. }
                    | GoalInstruction::Verify { .. }
                    | GoalInstruction::Accept,
                    _,
                ) => return Ok(false),
            };
            match self.store.operation(operation).await? {
                Some(op) if matches!(op.status, Status::WaitingForHuman | Status::Interrupted) => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Advance goal `id` until it rests (waits for a person, or is over) or nothing it follows
    /// progresses by itself (a work's operation waits for an approval); its status then.
    pub async fn run(&self, id: GoalId) -> Result<GoalStatus, GoalRunError> {
        loop {
            let a = self.advance(id).await?;
            if !a.waiting {
                return Ok(a.status);
            }
            if a.committed == 0 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Do `instruction`: the event it makes (with what it spent), or where the work's operation
    /// it follows stands.
    async fn execute(
        &self,
        record: &GoalRecord,
        instruction: GoalInstruction,
    ) -> Result<Step, GoalRunError> {
        let goal = &record.goal;
        match instruction {
            GoalInstruction::Plan { why } => {
                let (event, spend) = self.plan(record, &why).await?;
                Ok(Step::Done(event, spend))
            }
            // The start is committed first; following it makes the operation (once).
            GoalInstruction::StartWork {
                work,
                attempt,
                operation,
            } => Ok(Step::Done(
                GoalEvent::WorkStarted {
                    work,
                    attempt,
                    operation,
                },
                GoalSpend::default(),
            )),
            GoalInstruction::AwaitWork {
                work,
                attempt,
                operation,
            } => Ok(match self.follow(operation).await? {
                Some(Followed::Ended(end)) => Step::Done(
                    GoalEvent::WorkEnded { work, attempt, end },
                    GoalSpend::default(),
                ),
                Some(Followed::Running) => Step::Progressing,
                Some(Followed::Parked) => Step::Parked,
                // The start was committed, then the process stopped: make it (once). An
                // attempt whose operation cannot be made (its agent is gone, its model has no
                // price) failed; the coordinator decides what comes next.
                None => {
                    let w = goal.work(&work).ok_or_else(|| {
                        GoalRunError::Refused(rein_core::goal::GoalError::UnknownWork(work.clone()))
                    })?;
                    let agent = w.assignee.as_deref().or(record.settings.agent.as_deref());
                    match self
                        .start_op(record, agent, operation, &prompts::work(goal, w, attempt))
                        .await?
                    {
                        Ok(()) => Step::Progressing,
                        Err(why) => Step::Done(
                            GoalEvent::WorkEnded {
                                work,
                                attempt,
                                end: AttemptEnd::Failed {
                                    why: format!("its operation could not start: {why}"),
                                },
                            },
                            GoalSpend::default(),
                        ),
                    }
                }
            }),
            GoalInstruction::Verify { work, attempt } => {
                let w = goal.work(&work).ok_or_else(|| {
                    GoalRunError::Refused(rein_core::goal::GoalError::UnknownWork(work.clone()))
                })?;
                let prompt = prompts::verify(goal, w, attempt);
                let judged = match &record.settings.verifier_agent {
                    Some(agent) => {
                        let operation =
                            verification_operation_id(goal.id, Some(&work), w.revision, attempt);
                        self.judge_by_agent(record, agent, operation, &prompt)
                            .await?
                    }
                    None => {
                        let (verdict, spend) =
                            self.judge(record, &format!("work `{work}`"), &prompt).await;
                        Judged::Verdict(verdict, spend)
                    }
                };
                Ok(judged.step(|verdict| GoalEvent::Verified {
                    work,
                    attempt,
                    verdict,
                }))
            }
            GoalInstruction::Accept => {
                let prompt = prompts::accept(goal);
                let judged = match &record.settings.verifier_agent {
                    Some(agent) => {
                        self.judge_by_agent(record, agent, acceptance_operation(goal), &prompt)
                            .await?
                    }
                    None => {
                        let (verdict, spend) =
                            self.judge(record, "the whole objective", &prompt).await;
                        Judged::Verdict(verdict, spend)
                    }
                };
                Ok(judged.step(|verdict| GoalEvent::Accepted { verdict }))
            }
        }
    }

    /// Where a goal's operation (a work's attempt, a verifier agent's judgement) stands: run
    /// here if nobody runs it, and how it ended once it has; `None` when it was never made.
    async fn follow(&self, operation: OperationId) -> Result<Option<Followed>, GoalRunError> {
        let Some(op) = self.store.operation(operation).await? else {
            return Ok(None);
        };
        if op.status.is_terminal() {
            self.running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&operation);
            let loaded = self.store.load_operation(operation).await?;
            return Ok(Some(Followed::Ended(match (op.status, op.finish_reason) {
                (
                    Status::Done,
                    Some(
                        rein_core::FinishReason::Completed | rein_core::FinishReason::AgentDecision,
                    ),
                ) => AttemptEnd::Finished {
                    answer: loaded
                        .and_then(|l| l.state.final_answer())
                        .unwrap_or_default(),
                },
                _ => AttemptEnd::Failed {
                    why: op
                        .finish_detail
                        .clone()
                        .or(op.error.clone())
                        .or(op.finish_reason.map(|r| r.to_string()))
                        .unwrap_or_else(|| format!("{:?}", op.status)),
                },
            })));
        }
        // Whether this process's run of it has returned (`None`: this process does not run it).
        let returned = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&operation)
            .map(|done| done.load(Ordering::SeqCst));
        Ok(Some(match op.status {
            // Waiting for a person (an approval, a question, an interrupted budget): they answer
            // it as any operation's, and the goal's next run follows it on.
            Status::WaitingForHuman | Status::Interrupted => Followed::Parked,
            // Its sub-agents run within its run; once that run returned, the tree waits for a
            // person (a sub-agent's approval).
            Status::WaitingForSubAgents if returned == Some(true) => Followed::Parked,
            Status::Idle
            | Status::Queued
            | Status::Running
            | Status::WaitingForAsyncTool
            | Status::WaitingForSubAgents => {
                if returned != Some(false) {
                    // Not run here, or its run here returned without ending it (another
                    // process took it, or it stopped): run it (again).
                    self.running
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&operation);
                    self.run_here(operation);
                }
                Followed::Running
            }
            // Ended: read above.
            Status::Done | Status::Error => Followed::Running,
        }))
    }

    /// Run operation `id` in this process unless it already is.
    fn run_here(&self, id: OperationId) {
        if let Some(launch) = &self.launch {
            // The server's runner refuses what it already runs.
            launch(id);
            return;
        }
        let done = Arc::new(AtomicBool::new(false));
        {
            let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            if running.contains_key(&id) {
                return;
            }
            running.insert(id, Arc::clone(&done));
        }
        let driver = Arc::clone(&self.driver);
        tokio::spawn(async move {
            // `resume`: from wherever it was committed, an interrupted one too (as a server's
            // runner resumes it).
            if let Err(e) = driver.resume(id).await {
                tracing::warn!(operation = %id, error = %e, "a goal's work did not run to its end");
            }
            done.store(true, Ordering::SeqCst);
        });
    }

    /// Make operation `operation` of `agent` (none: the owner's default) asking `prompt`:
    /// the agent's spec, nobody watching, the goal's remaining budget; then run it. `Ok(Err)`
    /// says why it could not be made (its agent is gone, its model has no price).
    async fn start_op(
        &self,
        record: &GoalRecord,
        agent: Option<&str>,
        operation: OperationId,
        prompt: &str,
    ) -> Result<Result<(), String>, GoalRunError> {
        let mut spec = match self
            .host
            .agent_spec(
                &*self.store,
                &self.agents_of,
                agent,
                &crate::AgentProfile::default(),
                self.origin.clone(),
            )
            .await
        {
            Ok(spec) => spec,
            Err(e) => return Ok(Err(e.to_string())),
        };
        spec.unattended = true;
        let ledger = self.ledger(record).await?;
        spec.budget = ledger.for_work(&record.settings.budget, &spec.budget);
        let opts = StartOptions {
            spec,
            id: Some(operation),
            trigger: Some(rein_store::Trigger::Api),
            ..Default::default()
        };
        match self.driver.start(prompt, &opts).await {
            Ok(_) | Err(crate::DriverError::Store(StoreError::OperationExists(_))) => {}
            Err(e) => return Ok(Err(e.to_string())),
        }
        self.run_here(operation);
        Ok(Ok(()))
    }
}
