//! What each model call of an operation admitted, read back from its events (the
//! `context_report` event every call commits with its step), for `rein op show --context`,
//! `GET /v1/operations/{id}/context` and the inspector.

use rein_core::event::{ContextReport, EventKind};
use rein_core::{MessageId, OperationId};
use rein_store::{Store, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One model call's accounting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallContext {
    /// The step that made the call (as events and `rein op show` number steps).
    pub step: u32,
    /// The assistant message the call wrote.
    pub assistant_message_id: MessageId,
    /// Tokens per admitted item, and what each processor changed.
    pub report: ContextReport,
}

/// The accounting of every model call of operation `id` (of step `step` only, when given), in
/// order.
pub async fn call_contexts(
    store: &dyn Store,
    id: OperationId,
    step: Option<u32>,
) -> Result<Vec<CallContext>, StoreError> {
    Ok(store
        .events(id, None)
        .await?
        .into_iter()
        .filter(|e| step.is_none_or(|s| e.step == s))
        .filter_map(|e| match e.kind {
            EventKind::ContextReport {
                assistant_message_id,
                report,
            } => Some(CallContext {
                step: e.step,
                assistant_message_id,
                report,
            }),
            _ => None,
        })
        .collect())
}
