//! `GET /v1/operations/{id}/events`: Server-Sent Events from the durable event log.
//!
//! Every committed event is sent once, in order, with `id: <seq>`; `Last-Event-ID` (or
//! `?after=`) resumes exactly after that event, then the stream tails new commits with no gap
//! and no duplicate: it sends a commit's events as the hub hands them over only when they
//! follow its cursor, and reads the log otherwise (after a gap, a lag, or a commit made by
//! another process, which a periodic read picks up).
//! While a step runs, its events are also sent as `event: live` previews without an id (a step
//! that is not committed may be re-run after a crash, so previews are never a cursor). The
//! stream ends after the log holds the operation's end; it stays open while the operation is
//! parked. Closing it never cancels the operation.

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::hub::{Signal, WireEvent};
use crate::routes::{OperationPath, Params, owned_record};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use rein_core::OperationId;
use rein_store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// `GET /v1/operations/{id}/events` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Send only events after this sequence number (like `Last-Event-ID`, which wins).
    #[serde(default)]
    #[schemars(range(max = 9_223_372_036_854_775_807u64))]
    pub after: Option<u64>,
    /// Send `event: live` previews of the running step (default true).
    #[serde(default)]
    pub live: Option<bool>,
    /// Keep following new commits (default true); `false` sends what the log holds and ends.
    #[serde(default)]
    pub follow: Option<bool>,
}

/// `200 text/event-stream`: each committed event as `id: <seq>` and `data: <event JSON>`; live
/// previews as `event: live` with no id.
impl<S> crate::api::Output for Sse<S> {
    fn document(doc: &mut crate::api::OperationDoc, _g: &mut schemars::generate::SchemaGenerator) {
        doc.success = Some((
            200,
            serde_json::json!({
                "description": "Server-Sent Events. Committed events carry `id: <seq>`; `event: live` \
                    previews of the step in progress carry none. Each `data:` is one event:",
                // Before OpenAPI 3.2, `schema` of an event stream describes one event: its
                // fields, with the JSON in `data` described by `contentSchema`.
                "content": {"text/event-stream": {"schema": {
                    "type": "object",
                    "required": ["data"],
                    "properties": {
                        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The event's sequence number (committed events only)"},
                        "event": {"type": "string", "enum": ["message", "live"], "description": "`live`: a preview of the step in progress"},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": {
                                "type": "object",
                                "required": ["operation_id", "step", "seq", "type"],
                                "properties": {
                                    "operation_id": {"type": "string", "format": "uuid"},
                                    "step": {"type": "integer", "minimum": 0},
                                    "seq": {"type": "integer", "minimum": 0},
                                    "type": {"type": "string", "description": "llm_start, llm_stream, llm_result, tool_call, tool_result, human_approve_required, step_complete, done, error, ..."}
                                },
                                "additionalProperties": true
                            }
                        }
                    }
                }}}
            }),
        ));
    }
}

/// The SSE endpoint.
pub async fn stream(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
    headers: HeaderMap,
    Params(q): Params<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Sequence numbers are stored as signed 64-bit integers: a larger cursor names nothing.
    if q.after.is_some_and(|a| a > i64::MAX as u64) {
        return Err(ApiError::bad_request(
            "after is an event sequence number (at most 9223372036854775807)",
        ));
    }
    let op = owned_record(&app, &user, &id).await?;
    // The stream re-checks the caller's credential, so revoking a token or ending a session
    // ends the streams it opened.
    let credential = crate::auth::credential(&app, &headers);
    let cursor = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .filter(|&n| n <= i64::MAX as u64)
                .ok_or_else(|| {
                    ApiError::bad_request("Last-Event-ID must be an event sequence number")
                })?,
        ),
        None => q.after,
    };
    // Subscribe before the first read, so a commit between the two is not missed.
    let signals = app.hub.subscribe(op.id);
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(pump(
        app.clone(),
        op.id,
        cursor,
        signals,
        tx,
        Mode {
            live: q.live.unwrap_or(true),
            follow: q.follow.unwrap_or(true),
        },
        credential,
    ));
    let out = futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    );
    Ok(Sse::new(out).keep_alive(KeepAlive::new().interval(app.config.heartbeat).text("")))
}

/// What a stream sends besides the log.
#[derive(Clone, Copy)]
struct Mode {
    live: bool,
    follow: bool,
}

/// Send the log after `cursor`, then each commit as it lands, until the operation ends, the
/// client goes away, or its token is revoked (checked twice per heartbeat interval).
async fn pump(
    app: AppState,
    id: OperationId,
    mut cursor: Option<u64>,
    mut signals: crate::hub::Subscription,
    tx: mpsc::Sender<Event>,
    mode: Mode,
    credential: Option<crate::auth::Credential>,
) {
    let recheck = (app.config.heartbeat / 2).max(Duration::from_millis(250));
    let mut auth_at = tokio::time::Instant::now() + recheck;
    let numbered = |w: &WireEvent| Event::default().id(w.seq.to_string()).data(&*w.json);
    loop {
        // Catch up from the log.
        let events = match app.store.events(id, cursor).await {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(operation = %id, error = %e, "event log read failed; retrying");
                tokio::time::sleep(app.config.stream_poll).await;
                continue;
            }
        };
        let fresh = !events.is_empty();
        let mut ended = false;
        for w in events.iter().filter_map(WireEvent::of) {
            ended |= w.terminal;
            if tx.send(numbered(&w)).await.is_err() {
                return;
            }
            cursor = Some(w.seq);
        }
        if !mode.follow {
            return;
        }
        if (ended || !fresh) && operation_ended(&app, id).await {
            // A commit is one transaction: whatever followed the end event came with it. One
            // more read catches a final commit racing with the status check.
            if let Ok(rest) = app.store.events(id, cursor).await {
                for w in rest.iter().filter_map(WireEvent::of) {
                    if tx.send(numbered(&w)).await.is_err() {
                        return;
                    }
                }
            }
            return;
        }
        // Follow commits as they land; anything out of step sends us back to the log.
        let poll = tokio::time::sleep(app.config.stream_poll);
        tokio::pin!(poll);
        loop {
            let signal = tokio::select! {
                () = tx.closed() => return,
                () = app.shutdown.cancelled() => {
                    // The client reconnects (with `Last-Event-ID`) in a second, to another
                    // replica or to this one restarted.
                    let _ = tx
                        .send(
                            Event::default()
                                .retry(Duration::from_secs(1))
                                .comment("server stopping: reconnect with Last-Event-ID"),
                        )
                        .await;
                    return;
                }
                () = tokio::time::sleep_until(auth_at), if credential.is_some() => {
                    if !crate::auth::still_valid(&app, credential.as_ref()).await {
                        tracing::info!(operation = %id, "event stream ended: its credential was revoked");
                        return;
                    }
                    auth_at = tokio::time::Instant::now() + recheck;
                    continue;
                }
                () = &mut poll => break,
                signal = signals.recv() => signal,
            };
            match signal {
                Ok(Signal::Committed(batch)) => {
                    let next = cursor.map_or(0, |c| c + 1);
                    if batch.first().is_some_and(|w| w.seq > next) {
                        break; // a gap: the log has what we missed
                    }
                    let mut ended = false;
                    for w in batch.iter().filter(|w| w.seq >= next) {
                        ended |= w.terminal;
                        if tx.send(numbered(w)).await.is_err() {
                            return;
                        }
                        cursor = Some(w.seq);
                    }
                    if ended {
                        break; // confirm the end against the store
                    }
                    poll.as_mut()
                        .reset(tokio::time::Instant::now() + app.config.stream_poll);
                }
                Ok(Signal::Live(w)) => {
                    if mode.live
                        && cursor.is_none_or(|c| w.seq > c)
                        && tx
                            .send(Event::default().event("live").data(&*w.json))
                            .await
                            .is_err()
                    {
                        return;
                    }
                }
                Ok(Signal::Wake) | Err(broadcast::error::RecvError::Lagged(_)) => break,
                Err(broadcast::error::RecvError::Closed) => {
                    // Not reachable while the hub holds the sender; fall back to polling.
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
