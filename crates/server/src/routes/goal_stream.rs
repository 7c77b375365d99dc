//! `GET /v1/goals/{id}/stream`: a goal's committed events as Server-Sent Events.
//!
//! Each event goes once, in order, as `id: <seq>` and `data:` the event with its commit and
//! time (as `GET /v1/goals/{id}/events` lists them); `Last-Event-ID` (or `?after=`) resumes
//! exactly after that commit. Goals are advanced by whichever process holds their claim, so
//! the stream reads the goal's log every `stream_poll` rather than waiting on this process's
//! commits. It ends once the goal is over and its last event is sent; it stays open while the
//! goal waits for a person. Closing it changes nothing about the goal.

use crate::AppState;
use crate::api::{OperationDoc, Output};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{GoalPath, Params};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use rein_core::ids::GoalId;
use rein_store::Goals;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use tokio::sync::mpsc;

/// `GET /v1/goals/{id}/stream` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalStreamQuery {
    /// Send only events after this commit (`Last-Event-ID` wins).
    #[serde(default)]
    #[schemars(range(max = 9_223_372_036_854_775_807u64))]
    pub after: Option<u64>,
}

type Events = futures::stream::BoxStream<'static, Result<Event, Infallible>>;

/// The goal's events as an SSE response.
pub struct GoalStream(Sse<axum::response::sse::KeepAliveStream<Events>>);

impl IntoResponse for GoalStream {
    fn into_response(self) -> Response {
        self.0.into_response()
    }
}

impl Output for GoalStream {
    fn document(doc: &mut OperationDoc, _g: &mut schemars::SchemaGenerator) {
        doc.success = Some((
            200,
            crate::api::event_stream(
                "Server-Sent Events: `id:` the commit, each `data:` one committed event as `GET /v1/goals/{id}/events` lists it (`{seq, event, at}`)",
            ),
        ));
    }
}

/// The SSE endpoint.
pub async fn stream(
    State(app): State<AppState>,
    Caller(user): Caller,
    GoalPath(id): GoalPath,
    headers: HeaderMap,
    Params(q): Params<GoalStreamQuery>,
) -> Result<GoalStream, ApiError> {
    let goal = super::goals::owned(&app, &user.id, &id).await?;
    let cursor = match headers.get("last-event-id") {
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be a goal's commit"))?,
        None => match q.after {
            Some(a) if a > i64::MAX as u64 => {
                return Err(ApiError::bad_request(
                    "after is a goal's commit (at most 9223372036854775807)",
                ));
            }
            a => a.unwrap_or(0),
        },
    };
    let credential = crate::auth::credential(&app, &headers);
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(pump(app.clone(), goal.goal.id, cursor, tx, credential));
    let events: Events = Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok(e), rx))
    }));
    let keep_alive = KeepAlive::new().interval(app.config.heartbeat).text("");
    Ok(GoalStream(Sse::new(events).keep_alive(keep_alive)))
}

/// Send goal `id`'s log after `cursor`, then what is committed next, until the goal is over,
/// the client goes away, or its credential is revoked.
async fn pump(
    app: AppState,
    id: GoalId,
    mut cursor: u64,
    tx: mpsc::Sender<Event>,
    credential: Option<crate::auth::Credential>,
) {
    loop {
        // The status is read before the log: a goal over by then has all its events in it.
        let over = match app.store.goal(None, id).await {
            Ok(Some(r)) => r.goal.status.is_final(),
            Ok(None) => true,
            Err(e) => {
                tracing::warn!(goal = %id, error = %e, "a goal's stream could not read it; retrying");
                false
            }
        };
        match app.store.goal_events(id, cursor).await {
            Ok(events) => {
                for e in events {
                    let view = super::goals::GoalEventView {
                        seq: e.seq,
                        event: e.event,
                        at: e.at,
                    };
                    let Ok(data) = serde_json::to_string(&view) else {
                        continue;
                    };
                    cursor = e.seq;
                    if tx
                        .send(Event::default().id(e.seq.to_string()).data(data))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                if over {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(goal = %id, error = %e, "a goal's events could not be read; retrying");
            }
        }
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(app.config.stream_poll) => {}
        }
        if !crate::auth::still_valid(&app, credential.as_ref()).await {
            tracing::info!(goal = %id, "a goal's stream ended: its credential was revoked");
            return;
        }
    }
}
