//! A task's updates as they happen, for a stream (`SendStreamingMessage`, `SubscribeToTask`)
//! and for push notifications: each change of its state (a completed task's answer artifact
//! just before), and, while it works, the model's words between its tool calls, until it ends
//! or waits on the client.

use super::task::{answer_artifact, look};
use super::wire::{
    StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use crate::AppState;
use crate::routes::follow::{Seen, follow, last_seq};
use rein_core::OperationId;
use rein_core::event::EventKind;
use rein_store::Store as _;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often a task is looked at without an event of its own: a sub-agent's park leaves none
/// in the task's log.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The updates of task `id` after the client last saw it in state `last`, until it ends or
/// waits on the client, the server stops, or `credential` is revoked.
pub fn updates(
    app: AppState,
    id: OperationId,
    last: TaskState,
    credential: Option<crate::auth::Credential>,
) -> mpsc::Receiver<StreamResponse> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        if let Err(e) = pump(app, id, last, credential, &tx).await {
            tracing::warn!(operation = %id, error = %e, "an A2A task's updates stopped");
        }
    });
    rx
}

async fn pump(
    app: AppState,
    id: OperationId,
    mut last: TaskState,
    credential: Option<crate::auth::Credential>,
    tx: &mpsc::Sender<StreamResponse>,
) -> Result<(), super::rpc::A2aError> {
    let cursor = last_seq(&app, id)
        .await
        .map_err(super::rpc::A2aError::from)?;
    let mut events = follow(app.clone(), id, cursor, credential);
    let mut tick = tokio::time::interval(LOOK_EVERY);
    loop {
        let (relevant, closed) = tokio::select! {
            () = tx.closed() => return Ok(()),
            _ = tick.tick() => (true, false),
            seen = events.recv() => match seen {
                None => (true, true),
                Some(Seen::Preview(_)) => (false, false),
                Some(Seen::Committed(event)) => match event.kind {
                    EventKind::LlmStream { .. } | EventKind::ContextReport { .. } => (false, false),
                    EventKind::LlmResult { content, tool_calls, .. } => {
                        // Words before tool calls are progress; the last words are the answer.
                        if last == TaskState::Working && !tool_calls.is_empty() && !content.trim().is_empty() {
                            let Some(record) = app.store.operation(id).await? else { return Ok(()) };
                            let status = TaskStatus {
                                state: TaskState::Working,
                                message: Some(super::task::agent_message(&record, vec![super::wire::Part::text(content)])),
                                timestamp: Some(chrono::Utc::now().to_rfc3339()),
                            };
                            if tx.send(status_update(&record, status)).await.is_err() {
                                return Ok(());
                            }
                        }
                        (true, false)
                    }
                    _ => (true, false),
                },
            },
        };
        if !relevant {
            continue;
        }
        let Some(record) = app.store.operation(id).await? else {
            return Ok(());
        };
        let seen = look(&app, &record).await?;
        if seen.state != last {
            if let Some(answer) = &seen.answer {
                let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: id.to_string(),
                    context_id: record.topic_id.clone(),
                    artifact: answer_artifact(answer),
                    append: false,
                    last_chunk: true,
                });
                if tx.send(artifact).await.is_err() {
                    return Ok(());
                }
            }
            let status = TaskStatus {
                state: seen.state,
                message: seen.message.clone(),
                timestamp: Some(record.updated_at.to_rfc3339()),
            };
            if tx.send(status_update(&record, status)).await.is_err() {
                return Ok(());
            }
            last = seen.state;
        }
        if last.ends_stream() || closed {
            return Ok(());
        }
    }
}

fn status_update(record: &rein_store::OperationRecord, status: TaskStatus) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: record.id.to_string(),
        context_id: record.topic_id.clone(),
        status,
    })
}
