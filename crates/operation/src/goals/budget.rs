//! A goal's budget ledger: its own calls (kept on the goal) and every operation it made (works'
//! attempts, a verifier agent's judgements: their records), against the goal's limits; what a
//! new operation of it may still spend.

use super::{GoalRunError, GoalRunner};
use rein_core::goal::verification_operation_id;
use rein_core::state::Budget;
use rein_core::usage::Usd;
use rein_store::{GoalRecord, Store};

/// What a goal has spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// Cost, all told.
    pub cost: Usd,
    /// Tokens, all told.
    pub tokens: u64,
}

impl Ledger {
    /// The budget of a new work's operation: what its agent allows, within what the goal has
    /// left (the goal's policy when the goal's limit is the tighter).
    pub fn for_work(&self, goal: &Budget, agent: &Budget) -> Budget {
        let left_cost = goal.max_cost.map(|m| m.saturating_sub(self.cost));
        let left_tokens = goal.max_tokens.map(|m| m.saturating_sub(self.tokens));
        let tighter_cost = match (agent.max_cost, left_cost) {
            (Some(a), Some(l)) => Some(a.min(l)),
            (a, l) => a.or(l),
        };
        let tighter_tokens = match (agent.max_tokens, left_tokens) {
            (Some(a), Some(l)) => Some(a.min(l)),
            (a, l) => a.or(l),
        };
        let goal_binds =
            tighter_cost.is_some_and(|c| left_cost == Some(c)) || tighter_tokens == left_tokens;
        Budget {
            max_cost: tighter_cost,
            max_tokens: tighter_tokens,
            on_exceeded: if goal_binds && (goal.max_cost.is_some() || goal.max_tokens.is_some()) {
                goal.on_exceeded
            } else {
                agent.on_exceeded
            },
            ..agent.clone()
        }
    }
}

impl Ledger {
    /// The limits of a work's operation that has spent what `record` says, under `current`
    /// limits, once the goal's became `goal`: what it spent plus what the goal has left, never
    /// less than it had (a limit the goal does not set stays the operation's own).
    pub fn for_running_work(
        &self,
        goal: &Budget,
        current: &Budget,
        record: &rein_store::OperationRecord,
    ) -> Budget {
        let cost = goal
            .max_cost
            .map(|m| record.cost + m.saturating_sub(self.cost));
        let tokens = goal.max_tokens.map(|m| {
            record
                .total_tokens
                .saturating_add(m.saturating_sub(self.tokens))
        });
        Budget {
            max_cost: match (current.max_cost, cost) {
                (Some(c), Some(n)) => Some(c.max(n)),
                (c, _) => c,
            },
            max_tokens: match (current.max_tokens, tokens) {
                (Some(c), Some(n)) => Some(c.max(n)),
                (c, _) => c,
            },
            ..current.clone()
        }
    }
}

impl GoalRunner {
    /// What goal `record` has spent: its own calls, its works' operations and its verifier
    /// agent's (each attempt's judgement, each revision's final acceptance).
    pub async fn ledger(&self, record: &GoalRecord) -> Result<Ledger, GoalRunError> {
        let goal = &record.goal;
        let mut operations = Vec::new();
        for w in &goal.works {
            for a in &w.attempts {
                operations.push(a.operation);
                if record.settings.verifier_agent.is_some() {
                    operations.push(verification_operation_id(
                        goal.id,
                        Some(&w.id),
                        w.revision,
                        a.n,
                    ));
                }
            }
        }
        if record.settings.verifier_agent.is_some() {
            let revisions = u32::try_from(goal.revisions.len()).unwrap_or(u32::MAX);
            operations
                .extend((1..=revisions).map(|r| verification_operation_id(goal.id, None, r, 0)));
        }
        let mut l = Ledger {
            cost: record.spent,
            tokens: record.spent_tokens,
        };
        for id in operations {
            if let Some(op) = self.store.operation(id).await? {
                l.cost += op.cost;
                l.tokens = l.tokens.saturating_add(op.total_tokens);
            }
        }
        Ok(l)
    }

    /// What ran out, when goal `record` is past its budget or its deadline (`known`: its
    /// ledger, when the caller has just read it).
    pub(super) async fn over_budget(
        &self,
        record: &GoalRecord,
        known: Option<&Ledger>,
    ) -> Result<Option<String>, GoalRunError> {
        let b = &record.settings.budget;
        if let Some(deadline) = record.settings.deadline
            && chrono::Utc::now() > deadline
        {
            return Ok(Some(format!(
                "its deadline {} passed",
                deadline.to_rfc3339()
            )));
        }
        if b.max_cost.is_none() && b.max_tokens.is_none() {
            return Ok(None);
        }
        let l = match known {
            Some(l) => *l,
            None => self.ledger(record).await?,
        };
        if let Some(max) = b.max_cost
            && l.cost >= max
        {
            return Ok(Some(format!("spent {} of its {} cost limit", l.cost, max)));
        }
        if let Some(max) = b.max_tokens
            && l.tokens >= max
        {
            return Ok(Some(format!("used {} of its {} tokens", l.tokens, max)));
        }
        Ok(None)
    }
}
