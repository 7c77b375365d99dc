//! Raising an interrupted operation's budget: the one change made to a parked operation's
//! limits, committed with its resumption as one transition (a goal whose limits a person
//! raised gives its works' operations their share). The operation is then running with no
//! process driving it yet, as after a crash: whoever follows it (the goal's runner, a server's
//! recovery sweep) drives it on from there.

use super::Driver;
use super::open::Opened;
use crate::error::{DriverError, Refusal};
use rein_core::OperationId;
use rein_core::state::{Budget, Status};

impl Driver {
    /// Give interrupted operation `id` the limits of `budget` (its policy and other bounds
    /// kept) and resume it, committed as one transition. `Ok(false)`: it is not interrupted
    /// (it ended, or runs), and nothing changed.
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
        let runtime = self.settling_runtime(&run.spec);
        let mut r = runtime
            .resume(state, "its limits were raised")
            .map_err(Refusal::Runtime)?;
        // Its sub-agents resume with it, as `resume_loaded` has them.
        if !r.state.sub_agents.is_empty() {
            r.state.status = Status::WaitingForSubAgents;
            r.next_context = None;
        }
        self.commit(&mut run, r).await?;
        Ok(true)
    }
}
