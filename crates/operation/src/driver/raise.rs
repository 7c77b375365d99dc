//! Raising an interrupted operation's budget: the one change made to a parked operation's
//! limits, committed as a transition of its own (a goal whose limits a person raised gives its
//! works' operations their share), so that resuming it runs on instead of stopping again.

use super::Driver;
use super::open::Opened;
use crate::error::DriverError;
use rein_core::OperationId;
use rein_core::engine::StepResult;
use rein_core::state::{Budget, Status};

impl Driver {
    /// Give interrupted operation `id` the limits `budget` (its policy and other bounds kept);
    /// committed, it stays interrupted until resumed. `Ok(false)`: it is not interrupted (it
    /// ended, or runs), and nothing changed.
    pub async fn raise_budget(
        &self,
        id: OperationId,
        budget: &Budget,
    ) -> Result<bool, DriverError> {
        let Opened::Ready(mut run) = self.open(id).await? else {
            return Ok(false);
        };
        if run.committed.status != Status::Interrupted {
            return Ok(false);
        }
        let mut state = run.committed.clone();
        state.budget.max_cost = budget.max_cost;
        state.budget.max_tokens = budget.max_tokens;
        state.updated_at = chrono::Utc::now();
        self.commit(&mut run, StepResult::transition(state, Vec::new(), None))
            .await?;
        Ok(true)
    }
}
