//! rein as an A2A (Agent2Agent 1.0) server: other agents reach a user's agents over A2A's
//! JSON-RPC binding, each request authenticated as rein's API is (a bearer token; another
//! user's tasks are not found).
//!
//! - **Cards** (`card.rs`): `/.well-known/agent-card.json` for the default agent,
//!   `/a2a/NAME/.well-known/agent-card.json` for each agent its owner exposes (`expose: true`,
//!   as for MCP).
//! - **Endpoints**: `POST /a2a` (the default agent) and `POST /a2a/NAME`, speaking the methods
//!   of A2A 1.0 (`rpc.rs`: the envelope and errors; `door.rs`: what each method does); a
//!   request must say `A2A-Version: 1.0`.
//! - **Tasks** (`task.rs`): a task is an operation, its context the operation's topic; a message
//!   without a task starts one (on the context's conversation when it names one), a message to
//!   a task that waits (`input-required`) decides what it waits on. States: submitted (queued),
//!   working, input-required (an approval or a question, each with a data part saying which),
//!   completed (the answer as the `answer` artifact), failed, canceled, and rejected: refused
//!   before anything ran (a cap, a full slot, a setting the caller may not use), a task that
//!   is not kept.
//! - **Streams** (`watch.rs`): status and artifact updates from the operation's events, until
//!   it ends or waits; `SubscribeToTask` picks a task up again. **Push** (`push.rs`): the same
//!   updates posted to the client's URL.

mod card;
mod door;
pub mod push;
mod rpc;
mod task;
mod watch;

use crate::AppState;
use crate::auth::AuthMode;
use crate::error::ApiError;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rein_operation::a2a::wire;
use rein_operation::{AgentProfile, SpecOrigin};
use rein_store::{Accounts as _, User};
use serde_json::Value;

/// The A2A routes (outside `/v1`: documented in docs/protocols.md).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/.well-known/agent-card.json", get(server_card))
        .route("/a2a", post(default_rpc))
        .route("/a2a/{agent}", post(agent_rpc))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(agent_card))
}

/// `GET /.well-known/agent-card.json`: the default agent's card: the caller's when the request
/// carries a credential, else the server's (what a new user's default agent is).
async fn server_card(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let carries = headers.contains_key(axum::http::header::AUTHORIZATION)
        || crate::signin::cookie_secret(&headers).is_some()
        || matches!(app.auth, AuthMode::Open(_));
    let spec = if carries {
        let user = match crate::auth::caller_for(&headers, &app, false).await {
            Ok(u) => u,
            Err(e) => return e.into_response(),
        };
        match spec_of(&app, &user, None).await {
            Ok(s) => (Some(user), s),
            Err(e) => return e.into_response(),
        }
    } else {
        match app
            .runner
            .host
            .spec(&AgentProfile::default(), SpecOrigin::default())
        {
            Ok(s) => (None, s),
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    let (user, spec) = spec;
    let base = card::base_url(&headers);
    let owner = user.as_ref().map(|u| u.id.as_str());
    axum::Json(card::card(&app, owner, None, &spec, &base, "/a2a").await).into_response()
}

/// `GET /a2a/NAME/.well-known/agent-card.json`: the card of the caller's exposed agent `NAME`.
async fn agent_card(
    State(app): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    let user = match crate::auth::caller_for(&headers, &app, false).await {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = exposed(&app, &user, &agent).await {
        return e.into_response();
    }
    let spec = match spec_of(&app, &user, Some(&agent)).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let base = card::base_url(&headers);
    let endpoint = format!("/a2a/{agent}");
    axum::Json(card::card(&app, Some(&user.id), Some(&agent), &spec, &base, &endpoint).await)
        .into_response()
}

/// How `user`'s `agent` (their default one: `None`) runs.
async fn spec_of(
    app: &AppState,
    user: &User,
    agent: Option<&str>,
) -> Result<rein_core::spec::OperationSpec, ApiError> {
    let host = &app.runner.host;
    let origin = host.origin(&*app.store, &user.id).await?;
    Ok(host
        .agent_spec(
            &*app.store,
            &user.id,
            agent,
            &AgentProfile::default(),
            origin,
        )
        .await?)
}

/// `agent` is one of `user`'s, exposed; 404 otherwise.
async fn exposed(app: &AppState, user: &User, agent: &str) -> Result<(), ApiError> {
    let shown = app
        .store
        .get_agent(&user.id, agent)
        .await?
        .and_then(|a| serde_json::from_value::<AgentProfile>(a.config).ok())
        .is_some_and(|p| p.expose == Some(true));
    if shown {
        Ok(())
    } else {
        Err(ApiError::not_found(format!(
            "no exposed agent {agent} (an agent is reached over A2A once its owner sets expose: true)"
        )))
    }
}

async fn default_rpc(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    rpc(app, headers, None, body).await
}

async fn agent_rpc(
    State(app): State<AppState>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    rpc(app, headers, Some(agent), body).await
}

/// One JSON-RPC request: checked (origin, credential, exposed agent, version), then answered
/// as JSON or, for the streaming methods, as server-sent events (an error too: one event).
async fn rpc(
    app: AppState,
    headers: HeaderMap,
    agent: Option<String>,
    body: axum::body::Bytes,
) -> Response {
    if let Err(e) = crate::origin::own_pages_only(&headers) {
        return e.into_response();
    }
    let req = match rpc::parse(&body) {
        Ok(r) => r,
        Err((id, e)) => return axum::Json(e.answer(&id)).into_response(),
    };
    let user = match crate::auth::caller_for(&headers, &app, req.method.changes()).await {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    if let Some(a) = &agent
        && let Err(e) = exposed(&app, &user, a).await
    {
        return e.into_response();
    }
    let door = door::Door {
        credential: crate::auth::credential(&app, &headers),
        base: card::base_url(&headers),
        app,
        user,
        agent,
    };
    let id = req.id;
    if req.method.streams() {
        let items = match rpc::check_version(&headers) {
            Ok(()) => door.stream(req.method, req.params).await,
            Err(e) => Err(e),
        };
        let heartbeat = door.app.config.heartbeat;
        let first = match items {
            Ok(rx) => Ok(rx),
            Err(e) => Err(e.answer(&id)),
        };
        let out = futures::stream::unfold((first, id, false), |(state, id, done)| async move {
            if done {
                return None;
            }
            match state {
                Err(answer) => Some((Ok(event(&answer)), (Err(Value::Null), id, true))),
                Ok(mut rx) => {
                    let item = rx.recv().await?;
                    let answer = rpc::answer(&id, serde_json::to_value(&item).unwrap_or_default());
                    Some((
                        Ok::<_, std::convert::Infallible>(event(&answer)),
                        (Ok(rx), id, false),
                    ))
                }
            }
        });
        return Sse::new(out)
            .keep_alive(KeepAlive::new().interval(heartbeat).text(""))
            .into_response();
    }
    let result = match rpc::check_version(&headers) {
        Ok(()) => door.call(req.method, req.params).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(v) => axum::Json(rpc::answer(&id, v)).into_response(),
        Err(e) => axum::Json(e.answer(&id)).into_response(),
    }
}

fn event(answer: &Value) -> Event {
    Event::default().data(answer.to_string())
}
