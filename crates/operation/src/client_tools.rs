//! A client's hands: the process that drives an operation may do some of its tools' work in its
//! own world. An editor speaking the Agent Client Protocol reads and writes files through its
//! buffers and runs commands in its terminal ([`rein_tools::delegate`] says which calls, and
//! words their results as the tools do). The tool host asks the process's [`ClientTools`]
//! after the call was approved, validated and recorded as under way, so the durable execution
//! record, the approvals and the command guard are the same whoever does the work; a call no
//! client takes runs here.

use futures::future::BoxFuture;
use rein_core::engine::ports::ToolOutput;
use rein_tools::delegate::Delegable;

/// One delegable call, as the tool host hands it over.
#[derive(Clone, Debug)]
pub struct ClientCall<'a> {
    /// The conversation the operation works on (a client holds its sessions by it).
    pub topic: &'a str,
    /// The operation that made it (the session's own, or one of its sub-agents).
    pub operation_id: rein_core::OperationId,
    /// The call's id (the client shows its work under it).
    pub call_id: &'a str,
    /// The call, checked.
    pub call: Delegable,
}

/// Clients that can do calls for the operations they drive.
pub trait ClientTools: Send + Sync {
    /// Do `call`, or `None` when no client holds its conversation or the one that does cannot
    /// do this kind of work (rein's own tool then runs).
    fn run<'a>(&'a self, call: ClientCall<'a>) -> Option<BoxFuture<'a, ToolOutput>>;
}
