//! What a run reads before each step, in one round trip: whether someone asked it to stop,
//! the grants that apply to it now, and whether the message its model call would answer still
//! exists. Each was its own read before; at a thousand operations in flight those reads, each
//! a hand-off to the pool's worker, cost more than the steps' commits.

use crate::grants::GrantSubject;
use rein_core::intervention::ActiveGrant;
use rein_core::{MessageId, OperationId};

/// What to read for one step of `operation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepCheckFor<'a> {
    /// The operation about to step.
    pub operation: OperationId,
    /// What it is, for its grants (as [`crate::Grants::grants_for`]).
    pub grants: GrantSubject<'a>,
    /// A message that must still exist for the step (the one its model call answers), if any.
    pub message: Option<MessageId>,
}

/// What [`crate::Store::step_check`] read, all as of one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepCheck {
    /// A cancel was requested ([`crate::Store::request_cancel`]).
    pub cancel_requested: bool,
    /// The active grants that apply, oldest first.
    pub grants: Vec<ActiveGrant>,
    /// Whether [`StepCheckFor::message`] exists (`None` when none was asked about).
    pub message_exists: Option<bool>,
}
