//! rein-server: `rein serve`. It owns the HTTP API under `/v1` (operations, their SSE event
//! streams replayed from the durable log, approvals, agents, topics, models, an OpenAPI
//! document generated from the code), bearer-token auth with per-user isolation (another
//! user's things are 404), running operations in the background with a per-user limit and
//! crash recovery at start-up, and the embedded web UI at `/`.

pub mod auth;
pub mod error;
pub mod hub;
pub mod openapi;
pub mod routes;
pub mod runner;
mod ui;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use rein_store::SqlStore;
use routes::{agents, events, models, operations, topics};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use auth::{AuthMode, hash_token, new_token};
pub use error::ApiError;
pub use hub::Hub;
pub use runner::Runner;

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Interval of SSE heartbeat comments.
    pub heartbeat: Duration,
    /// Largest request body accepted (bigger is a 413).
    pub body_limit: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            heartbeat: Duration::from_secs(15),
            body_limit: 1024 * 1024,
        }
    }
}

/// Everything a request handler reaches.
pub struct App {
    /// The store (operations, accounts).
    pub store: Arc<SqlStore>,
    /// Runs operations.
    pub runner: Arc<Runner>,
    /// Wakes event streams.
    pub hub: Arc<Hub>,
    /// How callers are authenticated.
    pub auth: AuthMode,
    /// Settings.
    pub config: ServerConfig,
    /// Cancelled when the server shuts down: event streams end so connections can close.
    pub shutdown: CancellationToken,
}

/// The state handlers share.
pub type AppState = Arc<App>;

/// Every route.
pub fn router(app: AppState) -> Router {
    let body_limit = app.config.body_limit;
    Router::new()
        .route("/", get(ui::index))
        .route("/v1/openapi.json", get(ui::openapi))
        .route(
            "/v1/operations",
            post(operations::create).get(operations::list),
        )
        .route("/v1/operations/{id}", get(operations::show))
        .route("/v1/operations/{id}/cancel", post(operations::cancel))
        .route("/v1/operations/{id}/resume", post(operations::resume))
        .route("/v1/operations/{id}/events", get(events::stream))
        .route(
            "/v1/operations/{id}/interventions",
            get(operations::interventions).post(operations::decide),
        )
        .route("/v1/agents", get(agents::list).post(agents::create))
        .route(
            "/v1/agents/{name}",
            get(agents::show).put(agents::update).delete(agents::delete),
        )
        .route("/v1/topics", get(topics::list))
        .route("/v1/topics/{id}/messages", get(topics::messages))
        .route("/v1/models", get(models::list))
        .fallback(error::no_route)
        .method_not_allowed_fallback(error::wrong_method)
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(app)
}

/// Serve on `listener` until `shutdown` resolves; then event streams end, in-flight requests
/// finish, and running operations are left where their last commit put them (the next start
/// resumes them).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let token = app.shutdown.clone();
    axum::serve(listener, router(app))
        .with_graceful_shutdown(async move {
            shutdown.await;
            token.cancel();
        })
        .await
}
