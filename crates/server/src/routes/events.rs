//! `GET /v1/operations/{id}/events`: Server-Sent Events from the durable event log.
//!
//! Every committed event is sent once, in order, with `id: <seq>`; `Last-Event-ID` (or
//! `?after=`) resumes exactly after that event, then the stream tails new commits with no gap
//! and no duplicate, because every numbered event is read from the log, never from memory.
//! While a step runs, its events are also sent as `event: live` previews without an id (a step
//! that is not committed may be re-run after a crash, so previews are never a cursor). The
//! stream ends after the log holds the operation's end; it stays open while the operation is
//! parked. Closing it never cancels the operation.

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::hub::Signal;
use crate::routes::{Params, owned_operation};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use rein_core::OperationId;
use rein_core::event::EventKind;
use rein_store::Store;
use schemars::JsonSchema;
use serde::Deserialize;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// `GET /v1/operations/{id}/events` query.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Send only events after this sequence number (like `Last-Event-ID`, which wins).
    #[serde(default)]
    pub after: Option<u64>,
    /// Send `event: live` previews of the running step (default true).
    #[serde(default)]
    pub live: Option<bool>,
}

/// How often a stream re-reads the log when nothing woke it (another process may be running
/// the operation).
const POLL: Duration = Duration::from_secs(1);

/// The SSE endpoint.
pub async fn stream(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    Params(q): Params<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let op = owned_operation(&app, &user, &id).await?;
    let cursor = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request("Last-Event-ID must be an event sequence number")
                })?,
        ),
        None => q.after,
    };
    // Subscribe before the first read, so a commit between the two is not missed.
    let signals = app.hub.subscribe(op.record.id);
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(pump(
        app.clone(),
        op.record.id,
        cursor,
        signals,
        tx,
        q.live.unwrap_or(true),
    ));
    let out = futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    );
    Ok(Sse::new(out).keep_alive(KeepAlive::new().interval(app.config.heartbeat).text("")))
}

/// Send the log after `cursor`, then whatever is committed next, until the operation ends or
/// the client goes away.
async fn pump(
    app: AppState,
    id: OperationId,
    mut cursor: Option<u64>,
    mut signals: broadcast::Receiver<Signal>,
    tx: mpsc::Sender<Event>,
    live: bool,
) {
    loop {
        let events = match app.store.events(id, cursor).await {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(operation = %id, error = %e, "event log read failed; retrying");
                tokio::time::sleep(POLL).await;
                continue;
            }
        };
        let mut ended = false;
        let fresh = !events.is_empty();
        for e in events {
            ended |= matches!(e.kind, EventKind::Done { .. } | EventKind::Error { .. });
            let data = match serde_json::to_string(&e) {
                Ok(d) => d,
                Err(err) => {
                    tracing::error!(operation = %id, seq = e.seq, error = %err, "event not serializable");
                    continue;
                }
            };
            if tx
                .send(Event::default().id(e.seq.to_string()).data(data))
                .await
                .is_err()
            {
                return;
            }
            cursor = Some(e.seq);
        }
        if (ended || !fresh) && operation_ended(&app, id).await {
            // Whatever the last commit added after the end event was read in the same batch
            // (a commit is one transaction); one more read picks up a racing final commit.
            if let Ok(rest) = app.store.events(id, cursor).await {
                for e in rest {
                    if let Ok(data) = serde_json::to_string(&e)
                        && tx
                            .send(Event::default().id(e.seq.to_string()).data(data))
                            .await
                            .is_err()
                    {
                        return;
                    }
                }
            }
            return;
        }
        // Wait for a commit, showing live previews meanwhile.
        let poll = tokio::time::sleep(POLL);
        tokio::pin!(poll);
        loop {
            tokio::select! {
                () = tx.closed() => return,
                () = app.shutdown.cancelled() => return,
                () = &mut poll => break,
                signal = signals.recv() => match signal {
                    Ok(Signal::Committed) | Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Ok(Signal::Live(e)) => {
                        if live && cursor.is_none_or(|c| e.seq > c)
                            && let Ok(data) = serde_json::to_string(&*e)
                            && tx.send(Event::default().event("live").data(data)).await.is_err()
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        // Not reachable while the hub holds the sender; fall back to polling.
                        (&mut poll).await;
                        break;
                    }
                },
            }
        }
    }
}

async fn operation_ended(app: &AppState, id: OperationId) -> bool {
    matches!(app.store.load_operation(id).await, Ok(Some(op)) if op.record.status.is_terminal())
}
