//! Sub-agents at run time. A parent parked on its sub-agents runs them (at most its spec's
//! concurrency at once, each as the operation it is, recursively for their own sub-agents),
//! and continues once every one has ended: their answers, usage and cost handed back in one
//! commit. While they run, what they spend together is held to what the parent could still
//! spend when it delegated ([`TreeLedger`]): crossing it applies the parent's policy to the
//! tree (`stop` cancels the sub-agents and the parent then ends over its limit, `interrupt`
//! parks them all resumably). A sub-agent parked on a human parks the tree: its approvals are
//! decided through the root ([`Driver::decide`] finds the operation in the tree that asked),
//! and cancelling a parent cancels its sub-agents first.

use super::open::{Loaded, Opened};
use super::{Driver, RunEnd, end_of};
use crate::error::DriverError;
use crate::error::Refusal;
use futures::StreamExt;
use futures::future::BoxFuture;
use rein_core::engine::SubAgentEnd;
use rein_core::state::{Budget, BudgetPolicy, Status};
use rein_core::{AgentRuntime, OperationId, ToolCall, Usd};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Why the tree's spending was stopped, and how.
#[derive(Clone, Debug)]
pub(crate) struct Trip {
    policy: BudgetPolicy,
    reason: String,
}

/// What one parent's sub-agents have spent, against what the parent could still spend when
/// it delegated.
pub(crate) struct TreeLedger {
    limit: Budget,
    spent: Mutex<HashMap<OperationId, (Usd, u64)>>,
    tripped: Mutex<Option<Trip>>,
}

fn tokens_of(state: &rein_core::AgentState) -> u64 {
    let t = &state.usage.llm.tokens;
    t.total.max(t.input + t.output)
}

impl TreeLedger {
    fn new(limit: Budget) -> Self {
        Self {
            limit,
            spent: Mutex::new(HashMap::new()),
            tripped: Mutex::new(None),
        }
    }

    /// What sub-agent `id` had spent when this run of the tree took it up: only spending
    /// beyond it can trip the tree (a tree resumed after an interruption goes on until it
    /// spends again).
    fn baseline(&self, id: OperationId, cost: Usd, tokens: u64) {
        self.spent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, (cost, tokens));
    }

    /// Record what sub-agent `id` has spent so far. When the sub-agents together crossed the
    /// limit with this spending (and the policy is not `warn`), the tree trips.
    fn record(&self, id: OperationId, cost: Usd, tokens: u64) {
        let (cost_total, tokens_total, grew) = {
            let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
            let before = spent.insert(id, (cost, tokens));
            let grew = before.is_none_or(|(c, t)| cost > c || tokens > t);
            let cost_total = spent.values().fold(Usd::ZERO, |a, (c, _)| a + *c);
            let tokens_total: u64 = spent.values().map(|(_, t)| *t).sum();
            (cost_total, tokens_total, grew)
        };
        if !grew || self.limit.on_exceeded == BudgetPolicy::Warn {
            return;
        }
        let reason = match (self.limit.max_cost, self.limit.max_tokens) {
            (Some(max), _) if cost_total > max => format!(
                "the parent's cost limit was reached: its sub-agents spent ${:.6} of the ${:.6} it had left",
                cost_total.dollars(),
                max.dollars()
            ),
            (_, Some(max)) if tokens_total > max => format!(
                "the parent's token limit was reached: its sub-agents used {tokens_total} of the {max} tokens it had left"
            ),
            _ => return,
        };
        let mut tripped = self.tripped.lock().unwrap_or_else(|p| p.into_inner());
        tripped.get_or_insert(Trip {
            policy: self.limit.on_exceeded,
            reason,
        });
    }

    fn tripped(&self) -> Option<Trip> {
        self.tripped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// How a sub-agent ended, from its final state.
fn end_of_child(state: &rein_core::AgentState) -> SubAgentEnd {
    let answer = state.final_answer();
    SubAgentEnd {
        operation_id: state.operation_id,
        status: state.status,
        finish: state.finish.clone(),
        error: state.error.clone(),
        answer,
        usage: state.usage.clone(),
        cost: state.cost.clone(),
    }
}

impl Driver {
    /// Run the sub-agents `run` waits for, then continue it once all have ended (`None`: it
    /// continued; its next step is in `run`). `Some` is where the tree stopped instead.
    pub(super) async fn await_children(
        &self,
        runtime: &AgentRuntime,
        run: &mut Loaded,
    ) -> Result<Option<RunEnd>, DriverError> {
        let ids: Vec<OperationId> = run
            .committed
            .sub_agents
            .iter()
            .map(|r| r.operation_id)
            .collect();
        let tree = Arc::new(TreeLedger::new(super::delegate::remaining(
            &run.spec,
            &run.committed,
        )));
        let resume_interrupted = std::mem::take(&mut run.resume_children);
        let concurrency = run.spec.sub_agents.concurrency.max(1);
        let mut starts: Vec<BoxFuture<'_, Result<RunEnd, DriverError>>> =
            Vec::with_capacity(ids.len());
        for id in &ids {
            starts.push(self.run_child(*id, Arc::clone(&tree), resume_interrupted));
        }
        let runs: Vec<Result<RunEnd, DriverError>> = futures::stream::iter(starts)
            .buffer_unordered(concurrency)
            .collect()
            .await;
        for r in runs {
            r?;
        }
        // This process is stopping: its sub-agents stopped between steps, and the tree is
        // continued by whoever takes it over.
        if self.hand_over.is_cancelled() {
            return Ok(Some(RunEnd::Released));
        }
        let cancelled = self.cancel.is_cancelled()
            || self
                .store
                .operation(run.id)
                .await?
                .is_some_and(|r| r.cancel_requested);
        if cancelled {
            return self
                .cancel_tree(run, "cancelled on request")
                .await
                .map(Some);
        }
        let trip = tree.tripped();
        if let Some(t) = &trip
            && t.policy == BudgetPolicy::Stop
        {
            // Sub-agents still parked (on a human) end with the tree.
            for id in &ids {
                self.cancel_subtree(*id, &t.reason).await?;
            }
        }
        let mut ends = Vec::with_capacity(ids.len());
        for id in &ids {
            let child = self.load(*id).await?;
            if child.committed.status.is_terminal() {
                ends.push(end_of_child(&child.committed));
            }
        }
        if ends.len() == ids.len() {
            let r = runtime
                .sub_agents_ended(run.committed.clone(), &ends)
                .map_err(Refusal::SubAgents)?;
            self.commit(run, r).await?;
            return Ok(None);
        }
        if let Some(t) = trip
            && t.policy == BudgetPolicy::Interrupt
        {
            let r = runtime.interrupt(run.committed.clone(), t.reason, true);
            self.commit(run, r).await?;
            return Ok(Some(end_of(&run.committed)));
        }
        self.tree_end(run.id).await.map(Some)
    }

    /// Run sub-agent `id` as far as it goes, its spending recorded in `tree`; an interrupted one
    /// is resumed only when the tree is (`resume_interrupted`), a parked one is left parked.
    fn run_child(
        &self,
        id: OperationId,
        tree: Arc<TreeLedger>,
        resume_interrupted: bool,
    ) -> BoxFuture<'_, Result<RunEnd, DriverError>> {
        Box::pin(async move {
            let mut child = match self.open(id).await? {
                Opened::Ready(run) => run,
                Opened::Ended(end) => return Ok(end),
            };
            tree.baseline(id, child.committed.cost.total, tokens_of(&child.committed));
            child.tree = Some(tree);
            match child.committed.status {
                Status::WaitingForHuman | Status::Done | Status::Error => {
                    Ok(end_of(&child.committed))
                }
                Status::Interrupted if !resume_interrupted => Ok(end_of(&child.committed)),
                _ => self.resume_loaded(&mut child).await,
            }
        })
    }

    /// Where a tree parked: on a human (every pending call of the tree, for the root to
    /// decide), interrupted, or on sub-agents another process runs.
    pub(super) async fn tree_end(&self, root: OperationId) -> Result<RunEnd, DriverError> {
        let pending = self.pending_in_tree(root).await?;
        if !pending.is_empty() {
            return Ok(RunEnd::WaitingForHuman {
                pending: pending.into_iter().map(|(_, c)| c).collect(),
            });
        }
        let run = self.load(root).await?;
        Ok(end_of(&run.committed))
    }

    /// Every call awaiting a human decision in the tree under `root` (itself included), with
    /// the operation that asked.
    pub(super) fn pending_in_tree(
        &self,
        root: OperationId,
    ) -> BoxFuture<'_, Result<Vec<(OperationId, ToolCall)>, DriverError>> {
        Box::pin(async move {
            let run = self.load(root).await?;
            let mut out: Vec<(OperationId, ToolCall)> = Vec::new();
            if run.committed.status == Status::WaitingForHuman {
                out.extend(
                    run.committed
                        .pending_tool_calls
                        .iter()
                        .map(|c| (root, c.clone())),
                );
            }
            for child in &run.committed.sub_agents {
                out.extend(self.pending_in_tree(child.operation_id).await?);
            }
            Ok(out)
        })
    }

    /// After sub-agent `id` ended (`end`) in a call made on it directly: run its tree's root
    /// on, which takes the results of every level that has them all (a call made through the
    /// root runs the root itself).
    pub(super) async fn continue_tree(
        &self,
        id: OperationId,
        end: &RunEnd,
    ) -> Result<(), DriverError> {
        if !matches!(end, RunEnd::Done { .. } | RunEnd::Error { .. }) {
            return Ok(());
        }
        let Some(root) = self.load(id).await?.spec.delegation.map(|d| d.root) else {
            return Ok(());
        };
        Box::pin(self.run(root)).await.map(|_| ())
    }

    /// Whether the tree under `id`, parked on its sub-agents, has work nobody may be doing: a
    /// sub-agent accepted or running (its process may have died), or every sub-agent ended
    /// (the results were not taken yet). A tree parked only on humans or interruptions has
    /// none. Recovery resumes the trees that have.
    pub fn tree_has_work(&self, id: OperationId) -> BoxFuture<'_, Result<bool, DriverError>> {
        Box::pin(async move {
            let run = self.load(id).await?;
            match run.committed.status {
                Status::Idle | Status::Running => return Ok(true),
                Status::WaitingForSubAgents => {}
                _ => return Ok(false),
            }
            let mut all_ended = true;
            for child in &run.committed.sub_agents {
                let status = self
                    .store
                    .operation_status(child.operation_id)
                    .await?
                    .unwrap_or(Status::Error);
                all_ended &= status.is_terminal();
                if self.tree_has_work(child.operation_id).await? {
                    return Ok(true);
                }
            }
            Ok(all_ended)
        })
    }

    /// Whether an operation under `id` is running now (in some process).
    pub(super) fn tree_is_running(
        &self,
        id: OperationId,
    ) -> BoxFuture<'_, Result<bool, DriverError>> {
        Box::pin(async move {
            let run = self.load(id).await?;
            if run.committed.status == Status::Running {
                return Ok(true);
            }
            for child in &run.committed.sub_agents {
                if self.tree_is_running(child.operation_id).await? {
                    return Ok(true);
                }
            }
            Ok(false)
        })
    }

    /// Cancel `run`'s sub-agents (theirs first), then settle `run` itself.
    pub(super) async fn cancel_tree(
        &self,
        run: &mut Loaded,
        reason: &str,
    ) -> Result<RunEnd, DriverError> {
        let children: Vec<OperationId> = run
            .committed
            .sub_agents
            .iter()
            .map(|r| r.operation_id)
            .collect();
        for id in children {
            self.cancel_subtree(id, reason).await?;
        }
        self.settle_cancel(run, reason).await
    }

    /// Cancel operation `id` and everything under it, unless it has ended.
    fn cancel_subtree<'a>(
        &'a self,
        id: OperationId,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<(), DriverError>> {
        Box::pin(async move {
            let mut run = self.load(id).await?;
            if !run.committed.status.is_terminal() {
                self.cancel_tree(&mut run, reason).await?;
            }
            Ok(())
        })
    }

    /// Apply a tripped tree budget to sub-agent `run`: `stop` cancels it, `interrupt` parks it
    /// resumably.
    pub(super) async fn apply_trip(
        &self,
        runtime: &AgentRuntime,
        run: &mut Loaded,
    ) -> Result<Option<RunEnd>, DriverError> {
        let Some(trip) = run.tree.as_ref().and_then(|t| t.tripped()) else {
            return Ok(None);
        };
        if run.committed.status.is_terminal() {
            return Ok(None);
        }
        match trip.policy {
            BudgetPolicy::Stop => self.cancel_tree(run, &trip.reason).await.map(Some),
            BudgetPolicy::Interrupt if run.committed.status != Status::Interrupted => {
                let r = runtime.interrupt(run.committed.clone(), trip.reason, true);
                self.commit(run, r).await?;
                Ok(Some(end_of(&run.committed)))
            }
            _ => Ok(None),
        }
    }

    /// After a commit of sub-agent `run`: what it has spent, for its tree.
    pub(super) fn record_spending(run: &Loaded) {
        if let Some(tree) = &run.tree {
            tree.record(run.id, run.committed.cost.total, tokens_of(&run.committed));
        }
    }
}
