//! An operation's events as values, for the routes that speak other protocols (AG-UI, the AI
//! SDK's UI message stream): the durable log after a cursor, then each commit as it lands, and
//! between commits the previews of the step in progress. A preview carries the sequence number
//! its event will have once committed, so a translator that remembers the last number it
//! translated says each event once, preview or committed (a step re-run after a crash commits
//! the numbers again; what was previewed of the lost run is not said twice).
//!
//! Unlike `GET /v1/operations/{id}/events`, which forwards committed batches as they are
//! serialized, this reads the log at every commit: a protocol stream needs the events
//! themselves, and there are few such streams per operation.

use crate::AppState;
use crate::hub::Signal;
use rein_core::{AgentEvent, OperationId};
use rein_store::Store;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// An event, committed or previewed.
#[derive(Debug)]
pub enum Seen {
    /// Durable: in the log with its sequence number.
    Committed(AgentEvent),
    /// Of the step in progress; the same number may be committed later.
    Preview(AgentEvent),
}

impl Seen {
    /// The event.
    pub fn event(&self) -> &AgentEvent {
        match self {
            Seen::Committed(e) | Seen::Preview(e) => e,
        }
    }
}

/// Follow operation `id` after `cursor` until it ends, the receiver is dropped, the server
/// shuts down, or `credential` stops being valid (checked twice per heartbeat interval).
pub fn follow(
    app: AppState,
    id: OperationId,
    cursor: Option<u64>,
    credential: Option<crate::auth::Credential>,
) -> mpsc::Receiver<Seen> {
    // Subscribe before the first read, so a commit between the two is not missed.
    let signals = app.hub.subscribe(id);
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(pump(app, id, cursor, signals, tx, credential));
    rx
}

async fn pump(
    app: AppState,
    id: OperationId,
    mut cursor: Option<u64>,
    mut signals: crate::hub::Subscription,
    tx: mpsc::Sender<Seen>,
    credential: Option<crate::auth::Credential>,
) {
    let recheck = (app.config.heartbeat / 2).max(Duration::from_millis(250));
    let mut auth_at = tokio::time::Instant::now() + recheck;
    loop {
        let events = match app.store.events(id, cursor).await {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(operation = %id, error = %e, "event log read failed; retrying");
                tokio::time::sleep(app.config.stream_poll).await;
                continue;
            }
        };
        let fresh = !events.is_empty();
        for e in events {
            cursor = Some(e.seq);
            if tx.send(Seen::Committed(e)).await.is_err() {
                return;
            }
        }
        if !fresh && operation_ended(&app, id).await {
            // One more read catches a final commit racing with the status check.
            if let Ok(rest) = app.store.events(id, cursor).await {
                for e in rest {
                    if tx.send(Seen::Committed(e)).await.is_err() {
                        return;
                    }
                }
            }
            return;
        }
        let poll = tokio::time::sleep(app.config.stream_poll);
        tokio::pin!(poll);
        loop {
            let signal = tokio::select! {
                () = tx.closed() => return,
                () = app.shutdown.cancelled() => return,
                () = tokio::time::sleep_until(auth_at), if credential.is_some() => {
                    if !crate::auth::still_valid(&app, credential.as_ref()).await {
                        tracing::info!(operation = %id, "protocol stream ended: its credential was revoked");
                        return;
                    }
                    auth_at = tokio::time::Instant::now() + recheck;
                    continue;
                }
                () = &mut poll => break,
                signal = signals.recv() => signal,
            };
            match signal {
                Ok(Signal::Live(w)) if cursor.is_none_or(|c| w.seq > c) => {
                    match serde_json::from_str::<AgentEvent>(&w.json) {
                        Ok(e) => {
                            if tx.send(Seen::Preview(e)).await.is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(operation = %id, error = %e, "preview not readable")
                        }
                    }
                }
                Ok(Signal::Live(_)) => {}
                Ok(Signal::Committed(_) | Signal::Wake)
                | Err(broadcast::error::RecvError::Lagged(_)) => break,
                Err(broadcast::error::RecvError::Closed) => {
                    (&mut poll).await;
                    break;
                }
            }
        }
    }
}

async fn operation_ended(app: &AppState, id: OperationId) -> bool {
    matches!(app.store.operation_status(id).await, Ok(Some(s)) if s.is_terminal())
}

/// The sequence number of operation `id`'s last committed event (`None`: nothing yet).
pub async fn last_seq(app: &AppState, id: OperationId) -> Result<Option<u64>, crate::ApiError> {
    Ok(app.store.events(id, None).await?.last().map(|e| e.seq))
}
