//! Answers of calls that ran outside any step (a device's tools): the answer becomes the call's
//! result in one commit, and once the operation has no call left to wait for it runs on.

use super::open::Opened;
use super::{Driver, RunEnd, end_of};
use crate::error::DriverError;
use crate::error::Refusal;
use rein_core::OperationId;
use rein_core::engine::ports::ToolOutput;
use rein_core::state::Status;
use rein_store::CommitOutcome;

impl Driver {
    /// Record `output` as the result of async call `tool_call_id` of operation `id`; then, if
    /// nothing else is awaited, run it on (its tree too, for a sub-agent). An answer for a call
    /// that is not awaited (answered already) is refused
    /// ([`rein_core::engine::DecisionError::UnknownToolCall`]); one for an operation that has
    /// ended (a cancellation settled the call) returns how it ended. Neither changes anything.
    pub async fn complete_async_tool(
        &self,
        id: OperationId,
        tool_call_id: &str,
        output: ToolOutput,
    ) -> Result<RunEnd, DriverError> {
        // Two answers of one operation may commit at once: the loser reloads and applies again.
        for _ in 0..8 {
            let mut run = match self.open(id).await? {
                Opened::Ready(run) => run,
                Opened::Ended(end) => return Ok(end),
            };
            // An operation that ended (a cancellation settled the call) takes no more answers.
            if run.committed.status.is_terminal() {
                return Ok(end_of(&run.committed));
            }
            let runtime = self.settling_runtime(&run.spec);
            let r = runtime.complete_async_tool(run.committed.clone(), tool_call_id, &output)?;
            if self.commit(&mut run, r).await? == CommitOutcome::Duplicate {
                continue;
            }
            if run.committed.status != Status::Running {
                return Ok(end_of(&run.committed));
            }
            return self.resume(id).await;
        }
        Err(Refusal::KeptChanging {
            operation: id,
            tool_call: tool_call_id.to_owned(),
        }
        .into())
    }
}
