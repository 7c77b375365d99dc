//! The one commit function: a step's result, as the engine returned it, becomes one
//! transaction (the step row, what changed in the state, its events, tool executions and
//! approvals) and advances the loaded run. Nothing is rebuilt from events.

use super::open::Loaded;
use super::{Driver, Landing, pause_after_commit};
use crate::error::DriverError;
use chrono::Utc;
use rein_core::engine::StepResult;
use rein_core::engine::initial_context;
use rein_store::{
    CommitOutcome, Intervention, InterventionStatus, NewOperation, NewThread, StateChanges,
    StepCommit, StepRan, Trigger,
};
use std::time::Duration;

impl Driver {
    /// Commit `r` as the step after `run`'s last commit, and advance `run` to it. When another
    /// process committed that step first (`Duplicate`), `run` is reloaded from what it wrote.
    pub(super) async fn commit(
        &self,
        run: &mut Loaded,
        r: StepResult,
    ) -> Result<CommitOutcome, DriverError> {
        let commit = self.prepare(run, r);
        let outcome = self.write(&commit).await?;
        match outcome {
            CommitOutcome::Committed => {
                run.seq = commit.step_index;
                run.committed = commit.state;
                run.next = commit.next_context;
                pause_after_commit().await;
            }
            CommitOutcome::Duplicate => {
                // Another process got there first: continue from what it committed.
                *run = self.load(run.id).await?;
            }
        }
        Ok(outcome)
    }

    /// Start a pipelined commit of `r`: `run` moves to it at once, and the next step may run
    /// while [`Driver::land`] writes it. Until then `landing` knows the messages it adds.
    pub(super) fn commit_ahead(
        &self,
        run: &mut Loaded,
        r: StepResult,
        landing: &Landing,
    ) -> StepCommit {
        let commit = self.prepare(run, r);
        run.seq = commit.step_index;
        run.committed = commit.state.clone();
        run.next = commit.next_context.clone();
        landing.begin(commit.changes.messages.iter().map(|m| m.id).collect());
        commit
    }

    /// Write a commit [`Driver::commit_ahead`] started, and tell `landing` whether it landed.
    /// When another process committed that step first, `run` is reloaded from what it wrote
    /// (and the step run meanwhile must be thrown away).
    pub(super) async fn land(
        &self,
        run: &mut Loaded,
        commit: StepCommit,
        landing: &Landing,
    ) -> Result<CommitOutcome, DriverError> {
        let outcome = match self.write(&commit).await {
            Ok(outcome) => outcome,
            Err(e) => {
                landing.end(false);
                return Err(e);
            }
        };
        match outcome {
            CommitOutcome::Committed => {
                // A crash point with the commit on disk and nothing waiting on it let go yet:
                // the step beside it may have asked the model, no effect has started.
                pause_after_commit().await;
                landing.end(true);
            }
            CommitOutcome::Duplicate => {
                landing.end(false);
                *run = self.load(run.id).await?;
            }
        }
        Ok(outcome)
    }

    /// Write `commit`; once it is on disk, hand its events to the commit hook.
    async fn write(&self, commit: &StepCommit) -> Result<CommitOutcome, DriverError> {
        crate::sim::point("commit").await;
        let outcome = self.store.commit_step(commit).await?;
        if outcome == CommitOutcome::Committed
            && let Some(hook) = &self.on_commit
        {
            hook(commit.operation_id, &commit.events);
        }
        Ok(outcome)
    }

    /// The transaction of `r` as the step after `run`'s last commit.
    fn prepare(&self, run: &Loaded, r: StepResult) -> StepCommit {
        let step_index = run.seq + 1;
        let instructions = if r.instructions.is_empty() {
            // A transition outside a step: a human's decision, a settlement.
            vec![StepRan::HumanDecision]
        } else {
            r.instructions
                .iter()
                .map(|k| StepRan::Instruction(*k))
                .collect()
        };
        let expires_at = run
            .spec
            .approval_timeout_secs
            .and_then(|secs| chrono::Duration::from_std(Duration::from_secs(secs)).ok())
            .map(|d| Utc::now() + d);
        let interventions = r
            .approvals
            .into_iter()
            .map(|approval| {
                // A question's own expiry wins over the approval timeout.
                let expires_at = rein_core::question::Question::of_call(&approval.call)
                    .and_then(Result::ok)
                    .and_then(|q| q.expires_in_secs)
                    .and_then(|secs| chrono::Duration::try_seconds(i64::try_from(secs).ok()?))
                    .map(|d| Utc::now() + d)
                    .or(expires_at);
                (approval, expires_at)
            })
            .map(|(approval, expires_at)| Intervention {
                operation_id: run.id,
                call: approval.call,
                owner: None,
                status: InterventionStatus::Pending,
                reason: approval.reason,
                outcome: None,
                decided_by: None,
                decided_at: None,
                expires_at,
                created_at: Utc::now(),
            })
            .collect();
        let children = r
            .spawns
            .into_iter()
            .map(|c| NewOperation {
                next_context: Some(initial_context(&c.state)),
                topic_id: run.topic_id.clone(),
                agent: c.run.agent.clone(),
                trigger: Trigger::SubAgent,
                parent_operation: Some(run.id),
                owner: c.spec.owner.clone(),
                admission: None,
                thread: Some(NewThread {
                    parent_message_id: c.parent_message_id,
                    title: c.run.title,
                }),
                // A sub-agent runs within its parent's turn of the conversation.
                gate: None,
                response: None,
                // Its task, the last message it is given.
                prompt: c
                    .state
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == rein_core::Role::User)
                    .map(|m| m.text_content()),
                state: c.state,
                spec: c.spec,
            })
            .collect();
        StepCommit {
            operation_id: run.id,
            step_index,
            topic_id: run.topic_id.clone(),
            changes: StateChanges::between(&run.committed, &r.state),
            state: r.state,
            next_context: r.next_context,
            instructions,
            events: r.events,
            tool_executions: r.tool_executions,
            interventions,
            // A sub-agent's messages are its thread's.
            thread_id: run.spec.delegation.as_ref().map(|_| run.id.to_string()),
            children,
        }
    }
}
