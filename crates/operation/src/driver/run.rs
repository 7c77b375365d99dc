//! Running an operation: step the engine from the loaded run and commit each step until the
//! operation parks, ends or has nothing left to do. `run` starts from the last commit,
//! `resume` first continues an interruption (or an operation accepted but never started).

use super::Durability;
use super::open::{Loaded, Opened};
use super::runtime::Running;
use super::{Driver, RunEnd, derived_message_id, end_of};
use crate::error::DriverError;
use crate::error::Refusal;
use futures::FutureExt;
use rein_core::engine::StepResult;
use rein_core::engine::initial_context;
use rein_core::state::Status;
use rein_core::{AgentState, OperationId};
use rein_store::{CommitOutcome, StepCommit};
use tracing::Instrument;

impl Driver {
    /// Step an operation from its stored state until it parks, ends or has nothing to do.
    pub async fn run(&self, id: OperationId) -> Result<RunEnd, DriverError> {
        let mut run = match self.open_turn(id).await? {
            Opened::Ready(run) => run,
            Opened::Ended(end) => return Ok(end),
        };
        if let Some(kind) = run.spec.surface.external_kind() {
            return self.drive_external(&mut run, kind).await;
        }
        if let rein_core::spec::Surface::A2a(name) = run.spec.surface.clone() {
            return self.drive_a2a(&mut run, &name).await;
        }
        if run.cancel_requested && !run.committed.status.is_terminal() {
            return self.cancel_tree(&mut run, "cancelled on request").await;
        }
        let running = self.running_runtime(&run).await?;
        let state = run.committed.clone();
        self.drive(&running, &mut run, state).await
    }

    /// Resume after a crash or an interruption: continue from the last committed step. A
    /// sub-agent resumed directly continues its tree too once it ends.
    pub async fn resume(&self, id: OperationId) -> Result<RunEnd, DriverError> {
        let mut run = match self.open_turn(id).await? {
            Opened::Ready(run) => run,
            Opened::Ended(end) => return Ok(end),
        };
        // An interrupted operation continues only while no other of its conversation runs or
        // waits: it would otherwise answer beside it, off the active path.
        if run.committed.status == Status::Interrupted
            && run.spec.delegation.is_none()
            && let Some((other, status)) = self.store.topic_holder(&run.topic_id, id).await?
            && status != Status::Queued
        {
            return Err(Refusal::TopicBusy {
                operation: id,
                other,
                status,
            }
            .into());
        }
        let end = self.resume_loaded(&mut run).await?;
        if run.spec.delegation.is_some() {
            self.continue_tree(id, &end).await?;
        }
        Ok(end)
    }

    /// [`Driver::open`] for a run: a queued operation is started first when it is its turn in
    /// its conversation (else it ends here as [`RunEnd::Queued`]).
    async fn open_turn(&self, id: OperationId) -> Result<Opened, DriverError> {
        let opened = self.open(id).await?;
        if let Opened::Ready(run) = &opened
            && run.committed.status == Status::Queued
        {
            if let Some(end) = self.run_queued(id, &run.topic_id).await? {
                return Ok(Opened::Ended(end));
            }
            return self.open(id).await;
        }
        Ok(opened)
    }

    /// [`Driver::resume`] of an opened operation. An interrupted parent goes back to waiting
    /// for its sub-agents, which are resumed with it.
    pub(super) async fn resume_loaded(&self, run: &mut Loaded) -> Result<RunEnd, DriverError> {
        if let Some(kind) = run.spec.surface.external_kind() {
            return self.drive_external(run, kind).await;
        }
        if let rein_core::spec::Surface::A2a(name) = run.spec.surface.clone() {
            return self.drive_a2a(run, &name).await;
        }
        if run.cancel_requested && !run.committed.status.is_terminal() {
            return self.cancel_tree(run, "cancelled on request").await;
        }
        // A person's decision recorded just before a stop is carried out now.
        if run.committed.status == Status::WaitingForHuman
            && let Some(end) = self.recorded_decisions(run.id).await?
        {
            return Ok(end);
        }
        let running = self.running_runtime(run).await?;
        let runtime = &running.runtime;
        let mut state = run.committed.clone();
        match state.status {
            Status::Interrupted => {
                let mut r = runtime.resume(state, "resumed").map_err(Refusal::Runtime)?;
                if !r.state.sub_agents.is_empty() {
                    r.state.status = Status::WaitingForSubAgents;
                    r.next_context = None;
                    run.resume_children = true;
                }
                self.commit(run, r).await?;
                state = run.committed.clone();
            }
            Status::Idle => {
                state.status = Status::Running;
                run.next = run.next.take().or_else(|| Some(initial_context(&state)));
            }
            Status::WaitingForSubAgents => run.resume_children = true,
            _ => {}
        }
        self.drive(&running, run, state).await
    }

    /// Step from `state` (the committed state, or a transition of it not yet committed) and
    /// commit each step, until the operation parks, ends, or has no next context.
    pub(super) async fn drive(
        &self,
        running: &Running,
        run: &mut Loaded,
        mut state: AgentState,
    ) -> Result<RunEnd, DriverError> {
        let (runtime, landing) = (&running.runtime, &*running.landing);
        // A span per run of the operation (its sub-agents' nest under it), with OpenTelemetry's
        // GenAI attribute names.
        let agent = run.spec.agent.as_ref().map_or("rein", |a| a.name.as_str());
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = %format!("invoke_agent {agent}"),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = agent,
            rein.operation.id = %run.id,
            rein.parent.id = tracing::field::Empty,
        );
        if let Some(d) = &run.spec.delegation {
            span.record("rein.parent.id", tracing::field::display(d.parent));
        }
        let interrupt = runtime.interrupt_handle();
        // Both end with the run, also when the run's future is dropped half-way (a caller
        // gone, a process stopping): a watcher left behind would read the store forever.
        let _watcher = self.watch_cancel(run.id);
        let cancel = self.cancel.clone();
        let _forward = AbortOnDrop(tokio::spawn(async move {
            cancel.cancelled().await;
            interrupt.interrupt("cancelled on request");
        }));
        // The last step's commit while it is written (pipelined durability): it lands beside
        // the next step, or before the run stops.
        let mut ahead: Option<StepCommit> = None;
        let result = async {
            loop {
                // A sub-agent whose tree crossed the parent's limit stops here.
                if let Some(end) = self.apply_trip(runtime, run).await? {
                    return Ok(end);
                }
                if state.status == Status::WaitingForSubAgents {
                    if let Some(end) = self.await_children(runtime, run).await? {
                        return Ok(end);
                    }
                    state = run.committed.clone();
                    continue;
                }
                if state.status.is_blocked() || state.status.is_terminal() {
                    return Ok(end_of(&state));
                }
                // This process is stopping: the last commit is where another one continues.
                if self.hand_over.is_cancelled() {
                    return Ok(RunEnd::Released);
                }
                let Some(ctx) = run.next.take() else {
                    return Ok(end_of(&state));
                };
                // One read before each step: a cancellation requested during the last step (a
                // tool ran while it came) stops here, before another model call, without
                // waiting for the watcher's next look; what a person granted counts as of now
                // (a revoked grant stops here); the message the model call would answer is
                // looked up with them.
                self.check_step(run, &mut state, landing).await?;
                // A cancellation that arrived during the last step (it cut the model call short)
                // interrupts before the next one, whether or not the forwarding task has run
                // yet: the partial answer must not be finished as if complete.
                if self.cancel.is_cancelled() {
                    runtime.interrupt_handle().interrupt("cancelled on request");
                }
                // A step re-run after a crash writes the same assistant message.
                state.pending_assistant_message_id = Some(derived_message_id(run.id, run.seq + 1));
                let step = run.seq + 1;
                crate::sim::point("step").await;
                let stepped = runtime
                    .step(state, Some(ctx))
                    .instrument(tracing::info_span!(
                        "step",
                        otel.name = %format!("step {step}"),
                        rein.step = step,
                    ));
                let r = match ahead.take() {
                    None => stepped.await,
                    // The step runs while the one before lands; a store failure there ends the
                    // run at once (the step is thrown away with it).
                    Some(commit) => {
                        let landed = self.land(run, commit, landing);
                        match futures::future::try_join(landed, stepped.map(Ok)).await? {
                            (CommitOutcome::Committed, r) => r,
                            (CommitOutcome::Duplicate, _) => {
                                // Another process committed that step: go on from what it
                                // wrote, without the step run on what this one would have.
                                landing.reset();
                                state = run.committed.clone();
                                continue;
                            }
                        }
                    }
                };
                landing.checked(None);
                // A step that met a failure of the store is not an outcome: nothing of it is
                // committed, and the run stops as a crash there would.
                if r.state.status == Status::Error
                    && let Some(e) = r.state.error.as_ref().filter(|e| e.code.is_unrecorded())
                {
                    return Err(DriverError::Unrecorded {
                        operation: run.id,
                        message: e.message.clone(),
                    });
                }
                if self.durability == Durability::Pipelined && leaves_running(run, &r) {
                    ahead = Some(self.commit_ahead(run, r, landing));
                } else {
                    self.commit(run, r).await?;
                }
                Self::record_spending(run);
                state = run.committed.clone();
            }
        }
        .instrument(span)
        .await;
        // What is still being written lands before the run says where it stopped.
        let result = match ahead.take() {
            None => result,
            Some(commit) => match (self.land(run, commit, landing).await, result) {
                (Ok(_), result) | (Err(_), result @ Err(_)) => result,
                (Err(e), Ok(_)) => Err(e),
            },
        };
        drop((_watcher, _forward));
        // A conversation someone has is titled; a task's run (unattended, a topic per run)
        // and a sub-agent's thread are not.
        if matches!(result, Ok(RunEnd::Done { .. }))
            && run.spec.delegation.is_none()
            && !run.spec.unattended
        {
            self.title_topic(&run.committed).await;
        }
        result
    }

    /// Watch the store for a cancellation requested by another process, until the returned
    /// guard is dropped. It reads the operation's record only (one row, no state or messages).
    /// Cancel this driver's runs when operation `id` gets a cancel request, while the guard
    /// lives.
    pub(super) fn watch_cancel(&self, id: OperationId) -> super::cancel_watch::Watching {
        self.cancels.watch(id, self.cancel.clone())
    }
}

/// Whether `r` may commit while the next step runs: it leaves the operation running with a
/// next step, asked no person, started no sub-agent, and the run is not a sub-agent its parent
/// runs (whose tree's limits are checked against what is committed).
fn leaves_running(run: &Loaded, r: &StepResult) -> bool {
    r.state.status == Status::Running
        && r.next_context.is_some()
        && r.approvals.is_empty()
        && r.spawns.is_empty()
        && run.tree.is_none()
}

/// A spawned task that ends when this is dropped.
pub(super) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
