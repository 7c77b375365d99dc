//! One operation at a time per conversation, on the driver's side. An operation accepted while
//! another of its topic runs or is parked waits `queued` (the store decided it in the
//! transaction that created it: [`rein_store::TopicGate`]); nothing of it is in the
//! conversation yet. When the one before it ends, [`Driver::promote`] places its prompt after
//! what the conversation says now and makes it ready, so every exchange stays on the active
//! path, in order. `when_busy: interrupt` ends the operation in the way first
//! ([`Driver::move_on`]): a running one is cancelled at its next boundary (keeping its partial
//! answer), a parked one's calls are rejected ("the person moved on").

use super::{Driver, RunEnd, Turn};
use crate::error::DriverError;
use crate::error::Refusal;
use rein_core::OperationId;
use rein_core::state::{Interruption, Status};
use rein_store::{NewOperation, StoreError};
use serde::{Deserialize, Serialize};

/// Why parked calls are rejected when a newer operation of the conversation interrupts.
pub const MOVED_ON: &str = "the person moved on";

/// What starting a queued operation takes: its prompt and where it goes, as it was asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Deferred {
    /// The prompt.
    pub prompt: String,
    /// Where it goes in the conversation.
    pub turn: Turn,
    /// Images and files sent with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<rein_core::message::ContentPart>,
    /// Earlier turns the caller sent with it (an OpenAI-style client's conversation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<rein_core::Message>,
}

impl Driver {
    /// Start the oldest queued operation of `topic` if nothing else of it is running or
    /// parked: its prompt joins the conversation as it is now and it becomes ready to run.
    /// Returns it (the caller runs it); `None` when nothing can start. One that can no longer
    /// start as asked (the message it edits was deleted) ends with an error and the next one
    /// is tried.
    pub async fn promote(&self, topic: &str) -> Result<Option<OperationId>, DriverError> {
        self.promote_where(topic, |_| true).await
    }

    /// [`Driver::promote`] when the oldest queued operation was started by a trigger `ours`
    /// accepts (a server starts what its API and scheduler queued, not a terminal's).
    pub async fn promote_where(
        &self,
        topic: &str,
        ours: impl Fn(rein_store::Trigger) -> bool,
    ) -> Result<Option<OperationId>, DriverError> {
        loop {
            let Some(queued) = self.store.next_queued(topic).await? else {
                return Ok(None);
            };
            let run = self.load(queued.id).await?;
            if run.committed.status != Status::Queued {
                return Ok(None);
            }
            let record = self
                .store
                .operation(run.id)
                .await?
                .ok_or(DriverError::NotFound(run.id))?;
            if !ours(record.trigger) {
                return Ok(None);
            }
            let opened = match serde_json::from_value::<Deferred>(queued.deferred) {
                Ok(deferred) => {
                    self.opening(run.id, &run.spec, Some(topic), topic, &deferred)
                        .await
                }
                Err(e) => Err(Refusal::QueuedPrompt(e).into()),
            };
            let (state, next) = match opened {
                Ok(opened) => opened,
                Err(
                    e @ (DriverError::Store(_)
                    | DriverError::Unrecorded { .. }
                    | DriverError::NotFound(_)),
                ) => return Err(e),
                Err(e) => {
                    tracing::warn!(operation = %run.id, error = %e, "queued operation cannot start");
                    let mut failed = run.committed.clone();
                    failed.status = Status::Error;
                    failed.error = Some(rein_core::state::StateError {
                        code: rein_core::failure::Fault::QueuedStartFailed.into(),
                        message: e.to_string(),
                    });
                    self.store.drop_queued(run.id, &failed).await?;
                    continue;
                }
            };
            let op = NewOperation {
                state,
                topic_id: topic.to_owned(),
                agent: record.agent.clone(),
                trigger: record.trigger,
                parent_operation: None,
                next_context: Some(next),
                owner: run.spec.owner.clone(),
                spec: run.spec.clone(),
                admission: None,
                thread: None,
                gate: None,
                response: None,
                // Kept on its record since it was queued.
                prompt: record.prompt.clone(),
            };
            return Ok(self.store.activate_queued(&op).await?.then_some(run.id));
        }
    }

    /// [`Driver::promote_where`] in the conversation of operation `id` (which just ended).
    pub async fn promote_after(
        &self,
        id: OperationId,
        ours: impl Fn(rein_store::Trigger) -> bool,
    ) -> Result<Option<OperationId>, DriverError> {
        let Some(record) = self.store.operation(id).await? else {
            return Ok(None);
        };
        if record.parent_operation.is_some() {
            return Ok(None);
        }
        self.promote_where(&record.topic_id, ours).await
    }

    /// A queued operation: start it if it is its turn (then run it), else say it waits.
    pub(super) async fn run_queued(
        &self,
        id: OperationId,
        topic: &str,
    ) -> Result<Option<RunEnd>, DriverError> {
        match self.promote(topic).await? {
            Some(started) if started == id => Ok(None),
            _ => Ok(Some(RunEnd::Queued)),
        }
    }

    /// End the operation in a new one's way (`when_busy: interrupt`): a parked one's pending
    /// calls are rejected ("the person moved on") and it ends, resumable no more; a running
    /// one is cancelled at its next boundary, keeping what it said. A queued one ahead is
    /// cancelled too.
    pub async fn move_on(&self, id: OperationId) -> Result<(), DriverError> {
        let run = self.load(id).await?;
        match run.committed.status {
            Status::WaitingForHuman => {
                let mut run = run;
                for call in &run.committed.pending_tool_calls {
                    // A decision that landed first keeps its outcome; a store that fails
                    // stops here, before the operation is settled over a pending record.
                    match self
                        .store
                        .decide_intervention(
                            id,
                            &call.id,
                            rein_store::InterventionStatus::Rejected,
                            None,
                            Some(MOVED_ON),
                        )
                        .await
                    {
                        Ok(())
                        | Err(
                            StoreError::AlreadyDecided(_) | StoreError::InterventionNotFound(_),
                        ) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                let rejected = rein_core::engine::reject_pending(run.committed.clone(), MOVED_ON);
                let runtime = self.settling_runtime(&run.spec);
                let interrupted = runtime.interrupt(rejected, MOVED_ON, false);
                self.settle(&runtime, &mut run, interrupted).await?;
            }
            Status::Queued => {
                self.cancel_queued(&run.committed, MOVED_ON).await?;
            }
            Status::Idle
            | Status::Running
            | Status::WaitingForAsyncTool
            | Status::WaitingForSubAgents => {
                self.cancel(id).await?;
            }
            Status::Interrupted | Status::Done | Status::Error => {}
        }
        Ok(())
    }

    /// End a queued operation without running it; `false` when it was no longer queued.
    pub(super) async fn cancel_queued(
        &self,
        state: &rein_core::AgentState,
        why: &str,
    ) -> Result<bool, StoreError> {
        let mut ended = state.clone();
        ended.status = Status::Interrupted;
        ended.interruption = Some(Interruption {
            reason: format!("{why} before it started"),
            interrupted_at: chrono::Utc::now(),
            interrupted_instruction: None,
            can_resume: false,
            finish_reason: None,
        });
        self.store.drop_queued(state.operation_id, &ended).await
    }
}
