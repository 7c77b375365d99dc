//! The coordinator: what a goal does next ([`decide`]), and what each thing done changes
//! ([`Goal::apply`]). Both are pure; the runner executes the instructions and commits each
//! event with the graph it makes, one at a time, so a crash anywhere leaves a graph that says
//! exactly what is left to do.

use super::graph::{
    Attempt, AttemptEnd, Goal, GoalStatus, PlanRevision, Verdict, Work, WorkStatus,
};
use crate::ids::OperationId;
use serde::{Deserialize, Serialize};

/// What the runner is asked to do.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GoalInstruction {
    /// Ask the planner for a plan ([`super::plan::check`] it, then [`GoalEvent::Planned`]).
    Plan {
        /// Why a plan is needed now (the first one, a person's reason).
        why: String,
    },
    /// Start attempt `attempt` of `work` as operation `operation` (whose id is derived: if it
    /// exists already, it was started before a crash and is followed, not started again).
    StartWork {
        /// The work.
        work: String,
        /// Its number.
        attempt: u32,
        /// The operation's id.
        operation: OperationId,
    },
    /// Follow attempt `attempt` of `work` (operation `operation`) to its end.
    AwaitWork {
        /// The work.
        work: String,
        /// Its number.
        attempt: u32,
        /// The operation's id.
        operation: OperationId,
    },
    /// Have an independent verifier judge attempt `attempt` of `work`.
    Verify {
        /// The work.
        work: String,
        /// Its number.
        attempt: u32,
    },
    /// Have an independent verifier judge the whole objective against its criteria.
    Accept,
}

/// Something done, to fold into the goal.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GoalEvent {
    /// A plan was checked ([`super::plan::check`]): the graph's works become these.
    Planned {
        /// The works (the kept ones with the new).
        works: Vec<Work>,
        /// The revision.
        revision: PlanRevision,
    },
    /// A person's plan was checked ([`super::plan::check`]): the graph's works become these,
    /// at any point no work runs (the goal keeps running, or stays paused).
    Edited {
        /// The works (the kept ones with the person's).
        works: Vec<Work>,
        /// The revision.
        revision: PlanRevision,
    },
    /// No usable plan came (the planner failed, or its plan was refused): why.
    PlanFailed {
        /// Why.
        why: String,
    },
    /// An attempt's operation was created.
    WorkStarted {
        /// The work.
        work: String,
        /// Its number.
        attempt: u32,
        /// The operation.
        operation: OperationId,
    },
    /// An attempt's operation ended.
    WorkEnded {
        /// The work.
        work: String,
        /// Its number.
        attempt: u32,
        /// How.
        end: AttemptEnd,
    },
    /// An attempt was judged.
    Verified {
        /// The work.
        work: String,
        /// Its number.
        attempt: u32,
        /// The verdict.
        verdict: Verdict,
    },
    /// The whole objective was judged.
    Accepted {
        /// The verdict.
        verdict: Verdict,
    },
    /// The goal's budget ran out.
    BudgetSpent {
        /// `true`: stop (the goal fails); `false`: interrupt (it waits for a person).
        stop: bool,
        /// What ran out.
        why: String,
    },
    /// A person set the goal's limits (the goal's settings carry them from this commit on):
    /// what it may spend in all, in USD and tokens (`None`: unchanged).
    LimitsSet {
        /// Who.
        by: String,
        /// The new cost limit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_limit: Option<crate::usage::Usd>,
        /// The new token limit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_limit: Option<u64>,
    },
    /// A person decided.
    Decided {
        /// Who.
        by: String,
        /// What.
        decision: GoalDecision,
    },
}

/// What a person can decide about a goal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GoalDecision {
    /// Give a blocked work one more attempt.
    Retry {
        /// The work.
        work: String,
    },
    /// Let a work go: it no longer counts (works depending on it may start).
    Skip {
        /// The work.
        work: String,
    },
    /// Plan again (finished works are kept), for this reason.
    Replan {
        /// Why.
        why: String,
    },
    /// Start no new work (running ones finish and are verified).
    Pause,
    /// Go on after a pause or an interrupted budget.
    Resume,
    /// Stop everything.
    Cancel,
    /// Count the goal achieved, on the person's word.
    Accept {
        /// What they say.
        #[serde(default)]
        note: String,
    },
    /// End the goal as not achieved.
    Reject {
        /// Why.
        why: String,
    },
}

/// Why an event cannot be folded into a goal (the goal is unchanged).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GoalError {
    /// The goal is not where this can happen.
    #[error("the goal is {status}: {what} cannot happen now")]
    NotNow {
        /// What was tried.
        what: &'static str,
        /// Where the goal stands.
        status: GoalStatus,
    },
    /// No such work.
    #[error("the goal has no work `{0}`")]
    UnknownWork(String),
    /// The work is not where this can happen.
    #[error("work `{work}` is {status}: {what} cannot happen now")]
    WorkNotNow {
        /// The work.
        work: String,
        /// Where it stands.
        status: WorkStatus,
        /// What was tried.
        what: &'static str,
    },
    /// An attempt that is not the work's current one, or an operation not derived for it.
    #[error("attempt {attempt} of work `{work}` is not the one under way")]
    StaleAttempt {
        /// The work.
        work: String,
        /// The attempt named.
        attempt: u32,
    },
    /// Works still run.
    #[error("works still run ({0}); pause and wait for them first")]
    WorksRunning(String),
}

/// What goal `goal` does next, as it is committed. Nothing for a goal that waits for a person
/// or is over.
pub fn decide(goal: &Goal) -> Vec<GoalInstruction> {
    match goal.status {
        GoalStatus::Planning => {
            return vec![GoalInstruction::Plan {
                why: goal
                    .reason
                    .clone()
                    .unwrap_or_else(|| "the objective".to_owned()),
            }];
        }
        GoalStatus::Running | GoalStatus::Paused => {}
        GoalStatus::NeedsAttention
        | GoalStatus::Achieved
        | GoalStatus::Failed
        | GoalStatus::Cancelled => {
            // Works already running are still followed to their end and verified.
            return following(goal);
        }
    }
    let mut out = following(goal);
    if goal.status == GoalStatus::Running {
        let running = goal
            .works
            .iter()
            .filter(|w| matches!(w.status, WorkStatus::Running | WorkStatus::Verifying))
            .count();
        let room = (goal.limits.max_parallel.max(1) as usize).saturating_sub(running);
        out.extend(
            goal.works
                .iter()
                .filter(|w| startable(goal, w))
                .take(room)
                .map(|w| {
                    let attempt = next_attempt(w);
                    GoalInstruction::StartWork {
                        work: w.id.clone(),
                        attempt,
                        operation: super::work_operation_id(goal.id, &w.id, w.revision, attempt),
                    }
                }),
        );
        if goal.verdict.is_none()
            && !goal.works.is_empty()
            && goal.works.iter().all(|w| w.status.unblocks())
        {
            out.push(GoalInstruction::Accept);
        }
    }
    out
}

/// The works under way: each running attempt followed, each ended one verified.
fn following(goal: &Goal) -> Vec<GoalInstruction> {
    goal.works
        .iter()
        .filter_map(|w| match (w.status, w.last()) {
            (WorkStatus::Running, Some(a)) if a.end.is_none() => Some(GoalInstruction::AwaitWork {
                work: w.id.clone(),
                attempt: a.n,
                operation: a.operation,
            }),
            (WorkStatus::Verifying, Some(a)) if a.verdict.is_none() => {
                Some(GoalInstruction::Verify {
                    work: w.id.clone(),
                    attempt: a.n,
                })
            }
            _ => None,
        })
        .collect()
}

fn next_attempt(w: &Work) -> u32 {
    u32::try_from(w.attempts.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1)
}

/// Whether work `w` may start now: ready, or pending with every dependency passed or retired.
fn startable(goal: &Goal, w: &Work) -> bool {
    matches!(w.status, WorkStatus::Pending | WorkStatus::Ready)
        && w.depends_on
            .iter()
            .all(|d| goal.work(d).is_some_and(|dep| dep.status.unblocks()))
}

/// Gaps as compared for progress: trimmed, lower case, sorted.
fn normalised(gaps: &[String]) -> Vec<String> {
    let mut g: Vec<String> = gaps.iter().map(|s| s.trim().to_lowercase()).collect();
    g.sort();
    g.dedup();
    g
}

impl Goal {
    /// Fold `event` in, or say why it does not fit (the goal is then unchanged). An event
    /// already folded in (the same attempt started, ended or judged the same way: a step run
    /// again after a crash) changes nothing.
    pub fn apply(&mut self, event: &GoalEvent) -> Result<(), GoalError> {
        let mut next = self.clone();
        next.fold(event)?;
        *self = next;
        Ok(())
    }

    fn fold(&mut self, event: &GoalEvent) -> Result<(), GoalError> {
        match event {
            GoalEvent::Planned { works, revision } => {
                if self.status != GoalStatus::Planning {
                    return Err(self.not_now("a new plan"));
                }
                self.works = works.clone();
                self.revisions.push(revision.clone());
                self.status = GoalStatus::Running;
                self.reason = None;
                self.verdict = None;
            }
            GoalEvent::Edited { works, revision } => {
                if self.revisions.last() == Some(revision) && self.works == *works {
                    return Ok(());
                }
                self.editable()?;
                self.works = works.clone();
                self.revisions.push(revision.clone());
                if self.status != GoalStatus::Paused {
                    self.status = GoalStatus::Running;
                }
                self.reason = None;
                self.verdict = None;
            }
            GoalEvent::PlanFailed { why } => {
                if self.status != GoalStatus::Planning {
                    return Err(self.not_now("a failed plan"));
                }
                self.status = GoalStatus::NeedsAttention;
                self.reason = Some(format!("no usable plan: {why}"));
            }
            GoalEvent::WorkStarted {
                work,
                attempt,
                operation,
            } => self.started(work, *attempt, *operation)?,
            GoalEvent::WorkEnded { work, attempt, end } => self.ended(work, *attempt, end)?,
            GoalEvent::Verified {
                work,
                attempt,
                verdict,
            } => self.verified(work, *attempt, verdict)?,
            GoalEvent::Accepted { verdict } => {
                if self.verdict.as_ref() == Some(verdict) {
                    return Ok(());
                }
                if self.status != GoalStatus::Running
                    || self.verdict.is_some()
                    || !self.works.iter().all(|w| w.status.unblocks())
                {
                    return Err(self.not_now("the final acceptance"));
                }
                self.verdict = Some(verdict.clone());
                if verdict.passed {
                    self.status = GoalStatus::Achieved;
                    self.reason = None;
                } else {
                    self.status = GoalStatus::NeedsAttention;
                    self.reason = Some(format!(
                        "the final acceptance found gaps: {}",
                        verdict.gaps.join("; ")
                    ));
                }
            }
            GoalEvent::BudgetSpent { stop, why } => {
                if self.status.is_final() {
                    return Err(self.not_now("a budget stop"));
                }
                self.status = if *stop {
                    GoalStatus::Failed
                } else {
                    GoalStatus::NeedsAttention
                };
                self.reason = Some(format!("its budget ran out: {why}"));
            }
            // The graph is unchanged: the limits live in the goal's settings.
            GoalEvent::LimitsSet { .. } => {
                if self.status.is_final() {
                    return Err(self.not_now("new limits"));
                }
            }
            GoalEvent::Decided { by, decision } => self.decided(by, decision)?,
        }
        Ok(())
    }

    /// Whether a person may replace its plan now: it is not over and no work runs (a plan is
    /// checked only once this holds, so a goal that cannot take one says why first).
    pub fn editable(&self) -> Result<(), GoalError> {
        if self.status.is_final() {
            return Err(self.not_now("a plan edit"));
        }
        let running = self.running_works();
        if !running.is_empty() {
            return Err(GoalError::WorksRunning(running.join(", ")));
        }
        Ok(())
    }

    fn not_now(&self, what: &'static str) -> GoalError {
        GoalError::NotNow {
            what,
            status: self.status,
        }
    }

    fn work_for(&mut self, id: &str) -> Result<&mut Work, GoalError> {
        self.work_mut(id)
            .ok_or_else(|| GoalError::UnknownWork(id.to_owned()))
    }

    fn started(&mut self, id: &str, attempt: u32, operation: OperationId) -> Result<(), GoalError> {
        let (startable, derived) = self
            .work(id)
            .map(|w| {
                (
                    startable(self, w),
                    super::work_operation_id(self.id, id, w.revision, attempt),
                )
            })
            .ok_or_else(|| GoalError::UnknownWork(id.to_owned()))?;
        let status = self.status;
        let allowed = self.work(id).map(|w| self.attempts_allowed(w)).unwrap_or(0);
        let w = self.work_for(id)?;
        if w.attempts
            .iter()
            .any(|a| a.n == attempt && a.operation == operation)
        {
            return Ok(());
        }
        if !matches!(status, GoalStatus::Running | GoalStatus::Paused) {
            return Err(GoalError::NotNow {
                what: "a work's start",
                status,
            });
        }
        if !startable {
            return Err(GoalError::WorkNotNow {
                work: id.to_owned(),
                status: w.status,
                what: "a start",
            });
        }
        if attempt != next_attempt(w) || operation != derived || attempt > allowed {
            return Err(GoalError::StaleAttempt {
                work: id.to_owned(),
                attempt,
            });
        }
        w.attempts.push(Attempt {
            n: attempt,
            operation,
            end: None,
            verdict: None,
        });
        w.status = WorkStatus::Running;
        Ok(())
    }

    /// Work `id`'s attempt `attempt` when it is the work's last one, with the work's status.
    fn current(&mut self, id: &str, attempt: u32) -> Result<(WorkStatus, &mut Attempt), GoalError> {
        let w = self.work_for(id)?;
        let status = w.status;
        w.attempts
            .last_mut()
            .filter(|a| a.n == attempt)
            .map(|a| (status, a))
            .ok_or_else(|| GoalError::StaleAttempt {
                work: id.to_owned(),
                attempt,
            })
    }

    fn set_status(&mut self, id: &str, status: WorkStatus) {
        if let Some(w) = self.work_mut(id) {
            w.status = status;
        }
    }

    fn ended(&mut self, id: &str, attempt: u32, end: &AttemptEnd) -> Result<(), GoalError> {
        let (status, last) = self.current(id, attempt)?;
        if last.end.as_ref() == Some(end) {
            return Ok(());
        }
        if status != WorkStatus::Running || last.end.is_some() {
            return Err(GoalError::WorkNotNow {
                work: id.to_owned(),
                status,
                what: "an attempt's end",
            });
        }
        last.end = Some(end.clone());
        match end {
            AttemptEnd::Finished { .. } => self.set_status(id, WorkStatus::Verifying),
            AttemptEnd::Failed { .. } => self.after_failure(id),
        }
        Ok(())
    }

    fn verified(&mut self, id: &str, attempt: u32, verdict: &Verdict) -> Result<(), GoalError> {
        let (status, last) = self.current(id, attempt)?;
        if last.verdict.as_ref() == Some(verdict) {
            return Ok(());
        }
        if status != WorkStatus::Verifying || last.verdict.is_some() {
            return Err(GoalError::WorkNotNow {
                work: id.to_owned(),
                status,
                what: "a verdict",
            });
        }
        last.verdict = Some(verdict.clone());
        if verdict.passed {
            self.set_status(id, WorkStatus::Passed);
        } else {
            self.after_failure(id);
        }
        Ok(())
    }

    /// Work `id`'s last attempt failed (its operation, or its verification): another attempt,
    /// or blocked when its attempts ran out or it made no progress.
    fn after_failure(&mut self, id: &str) {
        let Some(w) = self.work(id) else { return };
        let allowed = self.attempts_allowed(w);
        let used = u32::try_from(w.attempts.len()).unwrap_or(u32::MAX);
        let gaps: Vec<Vec<String>> = w
            .attempts
            .iter()
            .rev()
            .take(2)
            .filter_map(|a| a.verdict.as_ref().map(|v| normalised(&v.gaps)))
            .collect();
        let stuck = gaps.len() == 2 && !gaps[0].is_empty() && gaps[0] == gaps[1];
        let why = if stuck {
            Some(format!(
                "work `{id}` made no progress: its last two attempts had the same gaps"
            ))
        } else if used >= allowed {
            Some(format!(
                "work `{id}` did not pass in {used} attempt{}",
                if used == 1 { "" } else { "s" }
            ))
        } else {
            None
        };
        let Some(w) = self.work_mut(id) else { return };
        match why {
            Some(why) => {
                w.status = WorkStatus::Blocked;
                if !self.status.is_final() {
                    self.status = GoalStatus::NeedsAttention;
                    self.reason = Some(why);
                }
            }
            None => w.status = WorkStatus::Ready,
        }
    }

    fn running_works(&self) -> Vec<&str> {
        self.works
            .iter()
            .filter(|w| matches!(w.status, WorkStatus::Running | WorkStatus::Verifying))
            .map(|w| w.id.as_str())
            .collect()
    }

    /// What a goal with blocked works waits for (`blocked: a, b`); `None` when none is.
    fn blocked_reason(&self) -> Option<String> {
        let blocked: Vec<&str> = self
            .works
            .iter()
            .filter(|w| w.status == WorkStatus::Blocked)
            .map(|w| w.id.as_str())
            .collect();
        (!blocked.is_empty()).then(|| format!("blocked: {}", blocked.join(", ")))
    }

    /// After a person unblocked a work: the goal runs on unless another work is still blocked.
    fn unblocked(&mut self) {
        match self.blocked_reason() {
            Some(why) => self.reason = Some(why),
            None if self.status == GoalStatus::NeedsAttention => {
                self.status = GoalStatus::Running;
                self.reason = None;
            }
            None => {}
        }
    }

    fn decided(&mut self, by: &str, decision: &GoalDecision) -> Result<(), GoalError> {
        if self.status.is_final() {
            return Err(self.not_now("a decision"));
        }
        match decision {
            GoalDecision::Retry { work } => {
                let allowed = self.work(work).map(|w| self.attempts_allowed(w));
                let w = self.work_for(work)?;
                if w.status != WorkStatus::Blocked {
                    return Err(GoalError::WorkNotNow {
                        work: work.clone(),
                        status: w.status,
                        what: "a retry",
                    });
                }
                let used = u32::try_from(w.attempts.len()).unwrap_or(u32::MAX);
                if allowed.is_some_and(|a| used >= a) {
                    w.extra_attempts = w.extra_attempts.saturating_add(1);
                }
                w.status = WorkStatus::Ready;
                self.unblocked();
            }
            GoalDecision::Skip { work } => {
                let w = self.work_for(work)?;
                if !matches!(
                    w.status,
                    WorkStatus::Blocked | WorkStatus::Pending | WorkStatus::Ready
                ) {
                    return Err(GoalError::WorkNotNow {
                        work: work.clone(),
                        status: w.status,
                        what: "a skip",
                    });
                }
                w.status = WorkStatus::Retired;
                self.unblocked();
            }
            GoalDecision::Replan { why } => {
                let running = self.running_works();
                if !running.is_empty() {
                    return Err(GoalError::WorksRunning(running.join(", ")));
                }
                self.status = GoalStatus::Planning;
                self.reason = Some(format!("{by} asked for a new plan: {why}"));
                self.verdict = None;
            }
            GoalDecision::Pause => match self.status {
                GoalStatus::Running | GoalStatus::Planning => {
                    self.status = GoalStatus::Paused;
                    self.reason = Some(format!("paused by {by}"));
                }
                _ => return Err(self.not_now("a pause")),
            },
            GoalDecision::Resume => match self.status {
                GoalStatus::Paused => {
                    self.status = if self.works.is_empty() {
                        GoalStatus::Planning
                    } else {
                        GoalStatus::Running
                    };
                    self.reason = None;
                    self.unblocked_check();
                }
                GoalStatus::NeedsAttention
                    if !self.works.iter().any(|w| w.status == WorkStatus::Blocked)
                        && self.verdict.as_ref().is_none_or(|v| v.passed) =>
                {
                    self.status = if self.works.is_empty() {
                        GoalStatus::Planning
                    } else {
                        GoalStatus::Running
                    };
                    self.reason = None;
                }
                _ => return Err(self.not_now("a resume")),
            },
            GoalDecision::Cancel => {
                self.status = GoalStatus::Cancelled;
                self.reason = Some(format!("cancelled by {by}"));
            }
            GoalDecision::Accept { note } => {
                let running = self.running_works();
                if !running.is_empty() {
                    return Err(GoalError::WorksRunning(running.join(", ")));
                }
                self.status = GoalStatus::Achieved;
                self.decided_by = Some(if note.trim().is_empty() {
                    format!("accepted by {by}")
                } else {
                    format!("accepted by {by}: {}", note.trim())
                });
                self.reason = None;
            }
            GoalDecision::Reject { why } => {
                self.status = GoalStatus::Failed;
                self.decided_by = Some(format!("rejected by {by}: {}", why.trim()));
                self.reason = Some(format!("rejected by {by}"));
            }
        }
        Ok(())
    }

    /// A resumed goal with a blocked work waits for a person again.
    fn unblocked_check(&mut self) {
        if let Some(why) = self.blocked_reason() {
            self.status = GoalStatus::NeedsAttention;
            self.reason = Some(why);
        }
    }
}
