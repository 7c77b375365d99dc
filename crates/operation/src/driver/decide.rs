//! A human's word on a parked operation: decide pending calls (each decision single-use, then
//! committed with the step it starts), abort them all, or cancel; and the settlement that ends
//! an interrupted operation (its pending calls answered, the end recorded) in one commit.

use super::open::{Loaded, Opened};
use super::{Decision, Driver, RunEnd, derived_message_id, end_of};
use crate::error::DriverError;
use crate::error::Refusal;
use rein_core::AgentRuntime;
use rein_core::OperationId;
use rein_core::engine::{
    StepResult, abort_pending, answer_tool_call, approve_tool_call, is_question, reject_tool_call,
};
use rein_core::question::Answer;
use rein_core::state::Status;
use rein_store::{Intervention, InterventionStatus};
use std::collections::HashSet;

/// The state after `decision` on the pending call `call`, and the context the next step runs
/// in (`None`: the operation stopped for good).
fn apply(
    decision: &Decision,
    state: rein_core::AgentState,
    call: &str,
) -> Result<(rein_core::AgentState, Option<rein_core::RuntimeContext>), DriverError> {
    Ok(match decision {
        Decision::Approve => {
            let (s, c) = approve_tool_call(state, call)?;
            (s, Some(c))
        }
        Decision::Reject { reason, halt } => {
            reject_tool_call(state, call, reason.as_deref(), *halt)?
        }
        Decision::Answer(answer) => {
            let (s, c) = answer_tool_call(state, call, answer)?;
            (s, Some(c))
        }
    })
}

/// The status a decision is recorded with: a rejection that stops the operation for good is
/// recorded as aborted, so a recorded decision says everything needed to carry it out again.
fn recorded_as(decision: &Decision) -> InterventionStatus {
    match decision {
        Decision::Approve => InterventionStatus::Approved,
        Decision::Reject { halt: false, .. } => InterventionStatus::Rejected,
        Decision::Reject { halt: true, .. } => InterventionStatus::Aborted,
        Decision::Answer(_) => InterventionStatus::Answered,
    }
}

/// What a decision records beside its status: a rejection's reason, an answer's text.
fn reason_of(decision: &Decision) -> Option<&str> {
    match decision {
        Decision::Approve => None,
        Decision::Reject { reason, .. } => reason.as_deref(),
        Decision::Answer(Answer::Text(t) | Answer::Option(t)) => Some(t.as_str()),
    }
}

/// The decision a record holds, if it holds one.
fn recorded(i: &Intervention) -> Option<Decision> {
    match i.status {
        InterventionStatus::Approved => Some(Decision::Approve),
        InterventionStatus::Rejected | InterventionStatus::Aborted => Some(Decision::Reject {
            reason: i.outcome.clone(),
            halt: i.status == InterventionStatus::Aborted,
        }),
        InterventionStatus::Answered => Some(Decision::Answer(Answer::Text(
            i.outcome.clone().unwrap_or_default(),
        ))),
        InterventionStatus::Pending | InterventionStatus::Expired => None,
    }
}

/// Refuses a decision on an operation that is not waiting for one.
fn not_waiting(run: &Loaded) -> DriverError {
    Refusal::NotWaiting {
        operation: run.id,
        status: run.committed.status,
    }
    .into()
}

impl Driver {
    /// Decide pending calls (`None` = every pending call) and continue the operation.
    /// A decision on a sub-agent's calls (made on it directly rather than through its root)
    /// continues its tree too once the sub-agent ends.
    pub async fn decide(
        &self,
        id: OperationId,
        calls: Option<&[String]>,
        decision: Decision,
        by: Option<&str>,
    ) -> Result<RunEnd, DriverError> {
        // Crash tests stop here: a decision accepted, the step it allows not yet run.
        if let Some([first, ..]) = calls {
            super::pause_point(&format!("decide:{first}")).await;
        }
        let end = self.decide_one(id, calls, decision, by).await?;
        self.continue_tree(id, &end).await?;
        Ok(end)
    }

    /// Record people's decisions on `id`'s own pending calls before the run that carries them
    /// out (`(call, decision, by)`, in order): each must name a call the operation waits on and
    /// fit it, and is single-use. Once recorded, a decision survives the process: a later
    /// [`Driver::decide`] with it, or a resume ([`Driver::recorded_decisions`]), carries it
    /// out. An operation waiting on its sub-agents, or asked by a remote agent, records
    /// nothing here: its decisions are recorded as they are carried out.
    pub async fn record_decisions(
        &self,
        id: OperationId,
        decisions: &[(String, Decision, Option<String>)],
    ) -> Result<(), DriverError> {
        let run = self.load(id).await?;
        // A remote agent's question is recorded with the answer it is sent (`decide_a2a`).
        if run.committed.status != Status::WaitingForHuman
            || matches!(run.spec.surface, rein_core::spec::Surface::A2a(_))
        {
            return Ok(());
        }
        // Every decision fits before any is written.
        for (call, decision, _) in decisions {
            apply(decision, run.committed.clone(), call)?;
        }
        let recorded = self.store.interventions(id).await?;
        for (call, decision, by) in decisions {
            let status = recorded_as(decision);
            // Recorded before with the same decision (a retried request): kept as it is.
            if recorded
                .iter()
                .any(|i| *i.call.id == **call && i.status == status)
            {
                continue;
            }
            self.store
                .decide_intervention(id, call, status, by.as_deref(), reason_of(decision))
                .await?;
        }
        Ok(())
    }

    /// [`Driver::decide`] without continuing the tree above `id`.
    async fn decide_one(
        &self,
        id: OperationId,
        calls: Option<&[String]>,
        decision: Decision,
        by: Option<&str>,
    ) -> Result<RunEnd, DriverError> {
        let mut run = match self.open(id).await? {
            Opened::Ready(run) => run,
            Opened::Ended(end) => return Ok(end),
        };
        if run.committed.status == Status::WaitingForSubAgents {
            return self.decide_in_tree(&run, calls, decision, by).await;
        }
        if run.committed.status != Status::WaitingForHuman {
            return Err(not_waiting(&run));
        }
        let pending: Vec<String> = run
            .committed
            .pending_tool_calls
            .iter()
            .map(|c| c.id.to_string())
            .collect();
        let targets: Vec<String> = match (calls, &decision) {
            (Some(c), _) => c.to_vec(),
            // An answer without a call goes to the one open question.
            (None, Decision::Answer(_)) => {
                let questions: Vec<String> = run
                    .committed
                    .pending_tool_calls
                    .iter()
                    .filter(|c| is_question(c))
                    .map(|c| c.id.to_string())
                    .collect();
                if questions.len() != 1 {
                    return Err(Refusal::WhichQuestion {
                        operation: id,
                        questions,
                    }
                    .into());
                }
                questions
            }
            // Approving everything approves the calls that are not questions.
            (None, Decision::Approve) => {
                let calls: Vec<String> = run
                    .committed
                    .pending_tool_calls
                    .iter()
                    .filter(|c| !is_question(c))
                    .map(|c| c.id.to_string())
                    .collect();
                if calls.is_empty() {
                    return Err(Refusal::OnlyQuestions {
                        operation: id,
                        questions: pending.clone(),
                    }
                    .into());
                }
                calls
            }
            (None, _) => pending.clone(),
        };
        if let Some(unknown) = targets.iter().find(|t| !pending.contains(t)) {
            let known: HashSet<&str> = run
                .committed
                .messages
                .iter()
                .flat_map(|m| m.tool_calls.iter())
                .map(|c| &*c.id)
                .collect();
            return Err(if known.contains(unknown.as_str()) {
                Refusal::AlreadyDecided(unknown.clone())
            } else {
                Refusal::NoSuchCall {
                    operation: id,
                    tool_call: unknown.clone(),
                    in_tree: false,
                    pending: pending.clone(),
                }
            }
            .into());
        }
        if let rein_core::spec::Surface::A2a(name) = run.spec.surface.clone() {
            // A remote agent asks one question at a time.
            let [call] = targets.as_slice() else {
                return Err(Refusal::WhichQuestion {
                    operation: id,
                    questions: pending,
                }
                .into());
            };
            return self.decide_a2a(&mut run, &name, call, &decision, by).await;
        }
        let running = self.running_runtime(&run).await?;
        let status = recorded_as(&decision);
        let reason = reason_of(&decision);
        // A decision recorded before, whose step never committed (the process stopped in
        // between), is carried out again when the same decision comes: the record already
        // holds it, and the call still waits in the state.
        let already: Vec<String> = self
            .store
            .interventions(id)
            .await?
            .into_iter()
            .filter(|i| i.status == status && targets.contains(&i.call.id.to_string()))
            .map(|i| i.call.id.to_string())
            .collect();
        // Every target must take this decision (a question is answered, not approved; an
        // answer must fit) before anything is written.
        for call in &targets {
            apply(&decision, run.committed.clone(), call)?;
        }
        for call in &targets {
            let (mut decided, ctx) = apply(&decision, run.committed.clone(), call)?;
            // Single-use: a concurrent second decision fails here.
            if !already.contains(call) {
                self.store
                    .decide_intervention(id, call, status, by, reason)
                    .await?;
            }
            let r = match ctx {
                Some(ctx) => {
                    decided.pending_assistant_message_id =
                        Some(derived_message_id(id, run.seq + 1));
                    self.load_grants(&run, &mut decided).await?;
                    running.runtime.step(decided, Some(ctx)).await
                }
                None => StepResult::transition(decided, Vec::new(), None),
            };
            self.commit(&mut run, r).await?;
            if run.committed.status != Status::WaitingForHuman {
                let state = run.committed.clone();
                return self.drive(&running, &mut run, state).await;
            }
        }
        Ok(end_of(&run.committed))
    }

    /// Carry out the decisions people made on `id`'s pending calls that were recorded but whose
    /// step never committed (the process stopped between the two): each as if it came again.
    /// `None` when there are none; else where the operation got to.
    pub(super) async fn recorded_decisions(
        &self,
        id: OperationId,
    ) -> Result<Option<RunEnd>, DriverError> {
        let mut end = None;
        loop {
            let Some(op) = self.store.load_operation(id).await? else {
                return Err(DriverError::NotFound(id));
            };
            if op.state.status != Status::WaitingForHuman {
                return Ok(end);
            }
            let pending: HashSet<&str> =
                op.state.pending_tool_calls.iter().map(|c| &*c.id).collect();
            let interventions = self.store.interventions(id).await?;
            let Some((call, decision, by)) = interventions.iter().find_map(|i| {
                let decision = recorded(i).filter(|_| pending.contains(&*i.call.id))?;
                Some((i.call.id.to_string(), decision, i.decided_by.clone()))
            }) else {
                return Ok(end);
            };
            tracing::info!(operation = %id, call = %call, "carrying out a decision recorded before a stop");
            let now = Box::pin(self.decide_one(id, Some(&[call]), decision, by.as_deref())).await?;
            if !matches!(now, RunEnd::WaitingForHuman { .. }) {
                return Ok(Some(now));
            }
            end = Some(now);
        }
    }

    /// Decide calls a sub-agent under `root` asked about (`None`: every pending call of the
    /// tree): each operation that asked continues, then the root (and whatever waits between)
    /// continues once its sub-agents have ended.
    async fn decide_in_tree(
        &self,
        root: &Loaded,
        calls: Option<&[String]>,
        decision: Decision,
        by: Option<&str>,
    ) -> Result<RunEnd, DriverError> {
        let pending = self.pending_in_tree(root.id).await?;
        let targets: Vec<String> = match calls {
            Some(c) => c.to_vec(),
            None => pending.iter().map(|(_, c)| c.id.to_string()).collect(),
        };
        if targets.is_empty() {
            return Err(not_waiting(root));
        }
        let mut by_operation: Vec<(OperationId, Vec<String>)> = Vec::new();
        for t in &targets {
            let Some((op, _)) = pending.iter().find(|(_, c)| &*c.id == t.as_str()) else {
                return Err(Refusal::NoSuchCall {
                    operation: root.id,
                    tool_call: t.clone(),
                    in_tree: true,
                    pending: pending.iter().map(|(_, c)| c.id.to_string()).collect(),
                }
                .into());
            };
            match by_operation.iter_mut().find(|(o, _)| o == op) {
                Some((_, list)) => list.push(t.clone()),
                None => by_operation.push((*op, vec![t.clone()])),
            }
        }
        for (op, list) in by_operation {
            Box::pin(self.decide_one(op, Some(&list), decision.clone(), by)).await?;
        }
        // The root waits on its sub-agents: continue it (it runs what is left of the tree).
        Box::pin(self.run(root.id)).await
    }

    /// Abort every pending call and end the operation.
    pub async fn abort(&self, id: OperationId, reason: &str) -> Result<RunEnd, DriverError> {
        let mut run = match self.open(id).await? {
            Opened::Ready(run) => run,
            Opened::Ended(end) => return Ok(end),
        };
        if run.committed.status != Status::WaitingForHuman {
            return Err(not_waiting(&run));
        }
        for call in &run.committed.pending_tool_calls {
            // Already-decided calls keep their decision.
            let _ = self
                .store
                .decide_intervention(
                    id,
                    &call.id,
                    InterventionStatus::Aborted,
                    None,
                    Some(reason),
                )
                .await;
        }
        // Settling aborted calls runs no tool; the model is asked only if the brain continues.
        let running = self.running_runtime(&run).await?;
        let (state, ctx) = abort_pending(run.committed.clone(), reason);
        run.next = Some(ctx);
        self.drive(&running, &mut run, state).await
    }

    /// Cancel: a running operation stops at its next boundary (keeping partial output); a
    /// parked one settles its pending calls and ends.
    pub async fn cancel(&self, id: OperationId) -> Result<RunEnd, DriverError> {
        let mut run = self.load(id).await?;
        if run.committed.status.is_terminal() {
            return Ok(end_of(&run.committed));
        }
        // A queued one never started: it ends as it is (unless it started meanwhile).
        if run.committed.status == Status::Queued
            && self.cancel_queued(&run.committed, "cancelled").await?
        {
            return Ok(RunEnd::Interrupted {
                reason: "cancelled before it started".into(),
                can_resume: false,
            });
        }
        self.store.request_cancel(id).await?;
        let requested = RunEnd::Interrupted {
            reason: "cancellation requested".into(),
            can_resume: false,
        };
        // Another process runs it (its first step, before any commit, shows only on the
        // record, which a running process marks as it starts): it sees the request within a
        // moment and stops at its next boundary, keeping what it has.
        let record_running = self
            .store
            .operation(id)
            .await?
            .is_some_and(|r| r.status == Status::Running);
        if run.committed.status == Status::Running || record_running {
            return Ok(requested);
        }
        if !run.committed.sub_agents.is_empty() {
            if self.tree_is_running(id).await? {
                // The process running its sub-agents settles the tree.
                return Ok(requested);
            }
            return self.cancel_tree(&mut run, "cancelled on request").await;
        }
        self.settle_cancel(&mut run, "cancelled on request").await
    }

    pub(super) async fn settle_cancel(
        &self,
        run: &mut Loaded,
        reason: &str,
    ) -> Result<RunEnd, DriverError> {
        // A remote agent's task is cancelled there too.
        if let rein_core::spec::Surface::A2a(name) = &run.spec.surface {
            self.cancel_remote_task(run, name).await;
        }
        let runtime = self.settling_runtime(&run.spec);
        let interrupted = if run.committed.status == Status::Interrupted {
            StepResult::transition(run.committed.clone(), Vec::new(), None)
        } else {
            runtime.interrupt(run.committed.clone(), reason, false)
        };
        self.settle(&runtime, run, interrupted).await
    }

    /// Run the step that settles an interruption (its pending calls answered, the end
    /// recorded) and commit both as one step after `run`'s last commit.
    pub(super) async fn settle(
        &self,
        runtime: &AgentRuntime,
        run: &mut Loaded,
        interrupted: StepResult,
    ) -> Result<RunEnd, DriverError> {
        let settled = runtime.step(interrupted.state.clone(), None).await;
        self.commit(run, interrupted.then(settled)).await?;
        Ok(end_of(&run.committed))
    }
}
