//! Sending awaited calls to their devices, failing those of devices that stayed away too long,
//! and recording answers. The operations themselves are the queue: an operation on
//! `device:NAME` waiting in `waiting_for_async_tool` lists its awaited calls, so nothing is
//! sent that its step did not commit, and a restarted server sends them again.

use super::protocol::{DeviceCall, ServerMessage};
use crate::AppState;
use crate::runner::Job;
use rein_core::OperationId;
use rein_core::engine::ports::ToolOutput;
use rein_core::message::Role;
use rein_core::spec::Surface;
use rein_core::state::Status;
use rein_store::{InterventionStatus, OperationFilter, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Send and expire calls until `stop`: at once when woken (a device connected, a step parked
/// on a device), and every second.
pub async fn dispatch_loop(app: AppState, stop: CancellationToken) {
    loop {
        if let Err(e) = dispatch_once(&app).await {
            tracing::warn!(error = %e, "device dispatch failed");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = app.devices.wake.notified() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// One pass over the operations waiting for devices.
pub async fn dispatch_once(app: &AppState) -> Result<(), rein_store::StoreError> {
    let waiting = app
        .store
        .list_operations(&OperationFilter {
            status: Some(Status::WaitingForAsyncTool),
            limit: 1000,
            ..Default::default()
        })
        .await?;
    let now = chrono::Utc::now();
    for record in waiting {
        let Some(op) = app.store.load_operation(record.id).await? else {
            continue;
        };
        let Surface::Device(device) = &op.spec.surface else {
            continue;
        };
        let owner = op.spec.owner.clone().unwrap_or_default();
        let mut approved: Option<Vec<String>> = None;
        for call_id in &op.state.async_calls {
            let Some(call) = op
                .state
                .messages
                .iter()
                .flat_map(|m| m.tool_calls.iter())
                .find(|c| &*c.id == call_id)
            else {
                continue;
            };
            if approved.is_none() {
                approved = Some(
                    app.store
                        .interventions(op.record.id)
                        .await?
                        .into_iter()
                        .filter(|i| i.status == InterventionStatus::Approved)
                        .map(|i| i.call.id.to_string())
                        .collect(),
                );
            }
            let was_approved = approved.as_ref().is_some_and(|a| a.contains(call_id));
            let connected = app.devices.send_call(&owner, device, call_id, || {
                ServerMessage::Call(DeviceCall {
                    operation_id: op.record.id,
                    call_id: call_id.clone(),
                    tool: call.identifier.to_string(),
                    api: call.api.to_string(),
                    arguments: call.arguments.to_string(),
                    approved: was_approved,
                    sandbox: op.spec.sandbox,
                })
            });
            if connected {
                continue;
            }
            // Away: the call waits from when it was made, up to the offline timeout.
            let made = op
                .state
                .messages
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call_id))
                .map_or(record.updated_at, |m| m.created_at);
            let waited = (now - made).to_std().unwrap_or_default();
            if waited >= app.devices.offline_timeout {
                let content = if app.devices.was_taken(call_id) {
                    format!(
                        "Device `{device}` took this call and went offline before answering; whether it ran is unknown (waited {} s).",
                        waited.as_secs()
                    )
                } else {
                    format!(
                        "Device `{device}` is offline: the call was not run (waited {} s).",
                        waited.as_secs()
                    )
                };
                complete(app, record.id, &owner, call_id, ToolOutput::failed(content)).await;
            }
        }
    }
    Ok(())
}

/// Record `output` as the result of `call_id` of operation `id` and run the operation on (in
/// the runner, under its lease); whether the answer was taken (recorded now, or not awaited any
/// more: answered before, settled by a cancellation). An operation running for a moment, or a
/// user at their running limit, is waited for (up to about 30 s; past that the device sends
/// the answer again when it next connects).
pub async fn complete(
    app: &AppState,
    id: OperationId,
    owner: &str,
    call_id: &str,
    output: ToolOutput,
) -> bool {
    for _ in 0..120 {
        let job = Job::CompleteAsync {
            call_id: call_id.to_owned(),
            output: Box::new(output.clone()),
        };
        match app
            .runner
            .spawn(id, owner.to_owned(), app.runner.driver(), job)
            .await
        {
            Ok(ended) => {
                if let Some(Err(e)) = ended.wait().await {
                    tracing::info!(operation = %id, call = call_id, error = %e, "device answer not taken");
                }
                app.devices.forget(call_id);
                return true;
            }
            Err(e)
                if matches!(
                    e.status,
                    axum::http::StatusCode::CONFLICT | axum::http::StatusCode::TOO_MANY_REQUESTS
                ) =>
            {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                tracing::warn!(operation = %id, call = call_id, error = %e.message, "device answer not recorded");
                return false;
            }
        }
    }
    false
}

/// Start [`dispatch_loop`] for `app` in the background.
pub fn spawn(app: &AppState, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(dispatch_loop(Arc::clone(app), stop))
}
