//! One device's connection: `GET /v1/devices/connect` upgraded to a WebSocket, authenticated
//! by a device token (an API token cannot connect a device, a device token cannot call the
//! API). The device says `hello` with its tools; its record is refreshed, its awaited calls are
//! sent ([`super::dispatch`]); then its acks and results come in until it goes.

use super::protocol::{DeviceMessage, ServerMessage};
use crate::AppState;
use crate::auth::{bearer_token, hash_token};
use crate::error::ApiError;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use rein_core::engine::ports::ToolOutput;
use rein_core::spec::Surface;
use rein_store::{DeviceRecord, Devices, Store, User};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a new connection has to say `hello`.
const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// The largest frame a device may send (a result is cut by its tool long before this).
const MAX_FRAME: usize = 4 * 1024 * 1024;

/// `GET /v1/devices/connect`: authenticate the device token, then upgrade.
pub async fn connect(
    State(app): State<AppState>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    let token = bearer_token(&headers)?;
    let (user, device) = app
        .store
        .device_for_token(&hash_token(token))
        .await?
        .ok_or_else(|| ApiError::unauthorized("unknown or revoked device token"))?;
    Ok(ws
        .max_message_size(MAX_FRAME)
        .on_upgrade(move |socket| session(app, user, device, socket)))
}

async fn send(socket: &mut WebSocket, m: &ServerMessage) -> bool {
    match serde_json::to_string(m) {
        Ok(text) => socket.send(Message::Text(text.into())).await.is_ok(),
        Err(_) => false,
    }
}

/// Refuse the connection with `reason`, then close it.
async fn refuse(mut socket: WebSocket, reason: String) {
    tracing::info!(%reason, "device connection refused");
    let _ = send(&mut socket, &ServerMessage::Refused { reason }).await;
    let _ = socket.close().await;
}

async fn session(app: AppState, user: User, device: String, mut socket: WebSocket) {
    let hello = match tokio::time::timeout(HELLO_WITHIN, socket.recv()).await {
        Ok(Some(Ok(Message::Text(t)))) => serde_json::from_str::<DeviceMessage>(&t).ok(),
        _ => None,
    };
    let Some(DeviceMessage::Hello {
        name,
        tools,
        workdir,
        platform,
    }) = hello
    else {
        return refuse(socket, "the first message must be a `hello`".into()).await;
    };
    if name != device {
        let reason = format!("this token connects device `{device}`, not `{name}`");
        return refuse(socket, reason).await;
    }
    let now = chrono::Utc::now();
    let created_at = match app.store.device(&user.id, &device).await {
        Ok(Some(d)) => d.created_at,
        _ => now,
    };
    let record = DeviceRecord {
        owner: user.id.clone(),
        name: device.clone(),
        tools,
        workdir,
        platform,
        last_seen: now,
        created_at,
    };
    if let Err(e) = app.store.put_device(&record).await {
        return refuse(socket, format!("the device could not be recorded: {e}")).await;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Queued before the connection is registered, so it goes out before any call.
    let _ = tx.send(ServerMessage::Welcome {
        name: device.clone(),
    });
    let epoch = app.devices.connect(&user.id, &device, tx);
    tracing::info!(device = %device, user = %user.name, "device connected");
    let (mut sink, mut stream) = socket.split();
    loop {
        tokio::select! {
            out = rx.recv() => {
                let Some(m) = out else { break };
                let refused = matches!(m, ServerMessage::Refused { .. });
                let Ok(text) = serde_json::to_string(&m) else { continue };
                if sink.send(Message::Text(text.into())).await.is_err() || refused {
                    break;
                }
            }
            incoming = stream.next() => {
                let text = match incoming {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Binary(_))) => continue,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                };
                match serde_json::from_str::<DeviceMessage>(&text) {
                    Ok(DeviceMessage::Ack { call_id }) => app.devices.mark_taken(&call_id),
                    Ok(DeviceMessage::Result { operation_id, call_id, success, content }) => {
                        let app = std::sync::Arc::clone(&app);
                        let (owner, device) = (user.id.clone(), device.clone());
                        tokio::spawn(async move {
                            answer(&app, &owner, &device, operation_id, &call_id, success, content).await;
                        });
                    }
                    Ok(DeviceMessage::AgentLine { operation_id, line }) => app.devices.agent_frame(
                        &user.id,
                        &device,
                        operation_id,
                        super::agents::AgentFrame::Line(line),
                    ),
                    Ok(DeviceMessage::AgentEnded { operation_id, code, stderr, refused }) => {
                        app.devices.agent_frame(
                            &user.id,
                            &device,
                            operation_id,
                            super::agents::AgentFrame::Ended { code, stderr, refused },
                        )
                    }
                    Ok(DeviceMessage::Hello { .. }) => {}
                    Err(e) => tracing::info!(device = %device, error = %e, "device sent a frame that is not a message"),
                }
            }
        }
    }
    app.devices.disconnect(&user.id, &device, epoch);
    let _ = sink.close().await;
    tracing::info!(device = %device, user = %user.name, "device disconnected");
}

/// A device's answer: taken only for a call of an operation of its user that runs on it;
/// acknowledged (`settled`) once recorded, or when nothing awaits it any more.
async fn answer(
    app: &AppState,
    owner: &str,
    device: &str,
    op: rein_core::OperationId,
    call_id: &str,
    success: bool,
    content: String,
) {
    let ours = match app.store.load_operation(op).await {
        Ok(Some(o)) => {
            o.spec.owner.as_deref() == Some(owner)
                && o.spec.surface == Surface::Device(device.to_owned())
        }
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(operation = %op, error = %e, "device answer not read");
            return;
        }
    };
    if !ours {
        tracing::warn!(operation = %op, device, "a device answered a call that is not its own");
        app.devices.send(
            owner,
            device,
            ServerMessage::Settled {
                call_id: call_id.to_owned(),
            },
        );
        return;
    }
    let output = if success {
        ToolOutput::ok(content)
    } else {
        ToolOutput::failed(content)
    };
    if super::dispatch::complete(app, op, owner, call_id, output).await {
        app.devices.send(
            owner,
            device,
            ServerMessage::Settled {
                call_id: call_id.to_owned(),
            },
        );
    }
}
