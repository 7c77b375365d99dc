//! What the driver reads before each step it runs, in one round trip
//! ([`rein_store::Store::step_check`]): a cancel requested from anywhere, the grants that
//! apply now, and whether the message the step's model call would answer still exists.

use super::Driver;
use super::landing::Landing;
use super::open::Loaded;
use crate::error::DriverError;
use crate::grants::{root_of, subject};
use rein_core::AgentState;
use rein_store::StepCheckFor;

impl Driver {
    /// Read `run`'s check before stepping `state`: a cancel request cancels this driver's
    /// runs, the grants replace `state`'s, and the last message (what a model call answers)
    /// is marked on `landing` as existing when it does, so the model port does not read it
    /// again. One the commit in flight adds is not looked up: it exists once that lands.
    pub(super) async fn check_step(
        &self,
        run: &Loaded,
        state: &mut AgentState,
        landing: &Landing,
    ) -> Result<(), DriverError> {
        let root = root_of(run.id, &run.spec);
        let message = state
            .messages
            .last()
            .map(|m| m.id)
            .filter(|id| !landing.adds(*id));
        let check = self
            .store
            .step_check(&StepCheckFor {
                operation: run.id,
                grants: subject(&run.spec, &root, &run.topic_id),
                message,
            })
            .await?;
        if check.cancel_requested {
            self.cancel.cancel();
        }
        state.intervention.grants = check.grants;
        landing.checked(message.filter(|_| check.message_exists == Some(true)));
        Ok(())
    }
}
