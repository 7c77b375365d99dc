//! `finish`: the operation ends with a reason (budgets end it through [`finish`] too).

use crate::engine::executor::{ExecContext, ExecError, ExecOutput};
use crate::event::EventKind;
use crate::instruction::{Instruction, InstructionKind};
use crate::state::{AgentState, Finish, Status};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::*;

/// `finish`: the operation is done.
pub struct FinishExecutor;

impl PayloadExecutor for FinishExecutor {
    /// Why, and the detail.
    type Payload = (crate::state::FinishReason, Option<String>);
    const KIND: InstructionKind = InstructionKind::Finish;

    fn payload(ins: Instruction) -> Result<Self::Payload, Instruction> {
        match ins {
            Instruction::Finish {
                reason,
                reason_detail,
            } => Ok((reason, reason_detail)),
            other => Err(other),
        }
    }

    fn run<'a>(
        &'a self,
        (reason, reason_detail): Self::Payload,
        state: &'a mut AgentState,
        cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            finish(state, cx, reason, reason_detail);
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}

pub(crate) fn finish(
    state: &mut AgentState,
    cx: &ExecContext<'_>,
    reason: crate::state::FinishReason,
    detail: Option<String>,
) {
    state.status = Status::Done;
    state.finish = Some(Finish {
        reason,
        detail: detail.clone(),
    });
    cx.emit(EventKind::Done {
        reason,
        reason_detail: detail,
    });
}
