//! Shared fixtures of the store's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use rein_core::engine::initial_context;
use rein_core::spec::OperationSpec;
use rein_core::*;
use rein_store::*;
use std::path::PathBuf;

/// A SQLite store in a new temporary folder (removed by [`remove`]).
pub async fn sqlite_store(name: &str) -> (SqlStore, PathBuf) {
    let dir = std::env::temp_dir().join(format!("rein-{name}-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
        .await
        .unwrap();
    (store, dir)
}

/// Close `store` and remove its folder.
pub async fn remove(store: SqlStore, dir: PathBuf) {
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new operation for `state` in `topic_{id}`, started from the CLI with `spec`.
pub fn new_operation(state: &AgentState, spec: OperationSpec) -> NewOperation {
    NewOperation {
        prompt: None,
        state: state.clone(),
        topic_id: topic_of(state),
        agent: None,
        trigger: Trigger::Cli,
        parent_operation: None,
        next_context: Some(initial_context(state)),
        owner: None,
        spec,
        admission: None,
        thread: None,
        gate: None,
        response: None,
    }
}

/// The topic [`new_operation`] puts an operation in.
pub fn topic_of(state: &AgentState) -> String {
    format!("topic_{}", state.operation_id)
}

/// Commit `after` as step `step_index` after `before` (a model call, no events).
pub async fn commit_step(
    store: &SqlStore,
    before: &AgentState,
    after: &AgentState,
    step_index: u64,
) -> CommitOutcome {
    store
        .commit_step(&StepCommit {
            operation_id: after.operation_id,
            step_index,
            topic_id: topic_of(after),
            changes: StateChanges::between(before, after),
            state: after.clone(),
            next_context: None,
            instructions: vec![rein_core::instruction::InstructionKind::CallLlm.into()],
            events: Vec::new(),
            tool_executions: Vec::new(),
            interventions: Vec::new(),
            thread_id: None,
            children: Vec::new(),
        })
        .await
        .unwrap()
}
