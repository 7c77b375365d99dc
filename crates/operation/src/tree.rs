//! An operation tree as stored: an operation's sub-agents (theirs too), and the approvals
//! waiting anywhere in it, for `rein op show --tree`, the API and the web UI.

use rein_core::OperationId;
use rein_store::StoreError;
use rein_store::{Intervention, InterventionStatus, OperationFilter, OperationRecord, Store};

/// Every operation under `root` (not `root` itself), each parent before its sub-agents, each
/// operation's sub-agents oldest first.
pub async fn descendants(
    store: &dyn Store,
    root: OperationId,
) -> Result<Vec<OperationRecord>, StoreError> {
    let mut out = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        let mut children = store
            .list_operations(&OperationFilter {
                parent: Some(parent),
                limit: 1000,
                ..Default::default()
            })
            .await?;
        // Listed newest first; a tree reads oldest first.
        children.reverse();
        parents.extend(children.iter().map(|c| c.id));
        out.extend(children);
    }
    Ok(out)
}

/// Every approval request in the tree under `root` (itself included), decided or not, each
/// naming the operation that asked.
pub async fn interventions(
    store: &dyn Store,
    root: OperationId,
) -> Result<Vec<Intervention>, StoreError> {
    let mut ids = vec![root];
    ids.extend(descendants(store, root).await?.into_iter().map(|r| r.id));
    let mut out = Vec::new();
    for id in ids {
        out.extend(store.interventions(id).await?);
    }
    Ok(out)
}

/// The approvals waiting in the tree under `root` (itself included).
pub async fn pending_approvals(
    store: &dyn Store,
    root: OperationId,
) -> Result<Vec<Intervention>, StoreError> {
    Ok(interventions(store, root)
        .await?
        .into_iter()
        .filter(|i| i.status == InterventionStatus::Pending)
        .collect())
}
