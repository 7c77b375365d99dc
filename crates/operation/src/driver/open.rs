//! Opening an operation: load it once, then the checks every entry point (run, resume, decide,
//! abort, cancel) needs before it may step it. An approval nobody gave in time ends it
//! (`timeout`); a question nobody answered in time takes its default and the operation runs on;
//! a message its conversation depends on that was deleted fails it. Both settle
//! through one commit, so the caller gets where the operation ended instead of a loaded run.

use super::{Driver, RunEnd, end_of};
use crate::error::DriverError;
use chrono::Utc;
use rein_core::engine::{StepResult, expire_question, is_question};
use rein_core::event::EventKind;
use rein_core::phase::RuntimeContext;
use rein_core::spec::OperationSpec;
use rein_core::state::{FinishReason, Status};
use rein_core::{AgentState, OperationId};
use rein_store::{Intervention, InterventionStatus, StoredOperation};

/// An operation loaded for one call of the driver: what it may do and where its last commit
/// left it. Every commit of the call advances it (see [`Driver::commit`]).
pub(crate) struct Loaded {
    /// The operation.
    pub id: OperationId,
    /// What it may do.
    pub spec: OperationSpec,
    /// Its conversation.
    pub topic_id: String,
    /// The state as last committed: what a commit's changes are measured against.
    pub committed: AgentState,
    /// The context of the next step.
    pub next: Option<RuntimeContext>,
    /// Commits so far.
    pub seq: u64,
    /// Someone asked (from any process) to cancel it.
    pub cancel_requested: bool,
    /// A sub-agent run by its parent: what the parent's sub-agents spend together.
    pub tree: Option<std::sync::Arc<super::children::TreeLedger>>,
    /// Resume its interrupted sub-agents when it next waits for them (the tree is resumed).
    pub resume_children: bool,
}

impl Loaded {
    pub(super) fn from_stored(stored: StoredOperation) -> Self {
        Self {
            id: stored.record.id,
            spec: stored.spec,
            topic_id: stored.record.topic_id,
            committed: stored.state,
            next: stored.next_context,
            seq: stored.record.commit_seq,
            cancel_requested: stored.record.cancel_requested,
            tree: None,
            resume_children: false,
        }
    }
}

/// What opening an operation found.
pub(crate) enum Opened {
    /// It may be stepped.
    Ready(Box<Loaded>),
    /// The opening checks ended it (or it had ended); nothing is left to step.
    Ended(RunEnd),
}

impl Driver {
    /// Load `id` once, with nothing checked.
    pub(super) async fn load(&self, id: OperationId) -> Result<Loaded, DriverError> {
        let stored = self.load_stored(id).await?;
        Ok(Loaded::from_stored(stored))
    }

    /// Load `id`; its tool manifests become this process's shared ones where equal.
    async fn load_stored(&self, id: OperationId) -> Result<StoredOperation, DriverError> {
        let mut stored = self
            .store
            .load_operation(id)
            .await?
            .ok_or(DriverError::NotFound(id))?;
        self.tools.intern(&mut stored.state.tool_manifests);
        Ok(stored)
    }

    /// Load `id` and perform the opening checks: an expired approval, a deleted message.
    pub(super) async fn open(&self, id: OperationId) -> Result<Opened, DriverError> {
        let stored = self.load_stored(id).await?;
        let missing = stored.missing_messages.first().cloned();
        let mut run = Loaded::from_stored(stored);
        if let Some(end) = self.expire_if_due(&mut run).await? {
            return Ok(Opened::Ended(end));
        }
        if let Some(first) = missing {
            return self.fail_missing(&mut run, &first).await.map(Opened::Ended);
        }
        Ok(Opened::Ready(Box::new(run)))
    }

    /// An approval that nobody gave in time ends the operation visibly (`timeout`), its
    /// pending calls settled as aborted. A question nobody answered in time is answered by
    /// its default (or a note that nobody answered) and the operation continues from there.
    async fn expire_if_due(&self, run: &mut Loaded) -> Result<Option<RunEnd>, DriverError> {
        if run.committed.status != Status::WaitingForHuman {
            return Ok(None);
        }
        let now = Utc::now();
        let pending: Vec<Intervention> = self
            .store
            .interventions(run.id)
            .await?
            .into_iter()
            .filter(|i| i.status == InterventionStatus::Pending)
            .collect();
        let expired = |i: &&Intervention| i.expires_at.is_some_and(|t| t <= now);
        let (questions, approvals): (Vec<&Intervention>, Vec<&Intervention>) = pending
            .iter()
            .filter(expired)
            .partition(|i| is_question(&i.call));
        if let Some(deadline) = approvals.iter().filter_map(|i| i.expires_at).min() {
            for i in &pending {
                // A concurrent decision may have landed first; it keeps its outcome.
                let _ = self
                    .store
                    .decide_intervention(
                        run.id,
                        &i.call.id,
                        InterventionStatus::Expired,
                        None,
                        Some("approval expired"),
                    )
                    .await;
            }
            let runtime = self.settling_runtime(&run.spec);
            let reason = format!("approval expired at {}", deadline.to_rfc3339());
            let interrupted =
                runtime.interrupt_finishing(run.committed.clone(), reason, FinishReason::Timeout);
            return self.settle(&runtime, run, interrupted).await.map(Some);
        }
        if questions.is_empty() {
            return Ok(None);
        }
        let mut state = run.committed.clone();
        let mut next = None;
        for i in questions {
            let why = match i.expires_at {
                Some(t) => format!("the question expired at {}", t.to_rfc3339()),
                None => "the question expired".to_owned(),
            };
            // Single-use like an answer: one that landed first keeps its outcome.
            if self
                .store
                .decide_intervention(
                    run.id,
                    &i.call.id,
                    InterventionStatus::Expired,
                    None,
                    Some(&why),
                )
                .await
                .is_err()
            {
                continue;
            }
            let (s, ctx) = expire_question(state, &i.call.id, &why)?;
            state = s;
            next = Some(ctx);
        }
        if next.is_none() {
            return Ok(None);
        }
        // The answers are committed as a decision would be; the operation then runs on (the
        // brain parks it again if other calls still wait for a person).
        state.pending_assistant_message_id = Some(super::derived_message_id(run.id, run.seq + 1));
        self.load_grants(run, &mut state).await?;
        let running = self.running_runtime(run).await?;
        let r = running.runtime.step(state, next).await;
        self.commit(run, r).await?;
        let state = run.committed.clone();
        self.drive(&running, run, state).await.map(Some)
    }

    /// A message the conversation depends on was deleted while the operation was in flight:
    /// fail it visibly, before any model call, rather than answer a conversation that changed.
    async fn fail_missing(&self, run: &mut Loaded, first: &str) -> Result<RunEnd, DriverError> {
        if run.committed.status.is_terminal() {
            return Ok(end_of(&run.committed));
        }
        let mut state = run.committed.clone();
        let message =
            format!("message {first} of this conversation was deleted while the operation ran");
        state.status = Status::Error;
        let code = rein_core::failure::FailureCode::from(
            rein_core::failure::Fault::ConversationParentMissing,
        );
        state.error = Some(rein_core::state::StateError {
            code: code.clone(),
            message: message.clone(),
        });
        state.updated_at = Utc::now();
        let seq = state.next_event_seq;
        state.next_event_seq += 1;
        let event = rein_core::AgentEvent {
            operation_id: state.operation_id,
            step: state.step_count,
            seq,
            kind: EventKind::Error { code, message },
        };
        self.commit(run, StepResult::transition(state, vec![event], None))
            .await?;
        Ok(end_of(&run.committed))
    }
}
