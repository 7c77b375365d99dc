//! rein-server: `rein serve`. It owns the HTTP API under `/v1` (operations, their SSE event
//! streams replayed from the durable log, approvals, agents, topics, models, an OpenAPI
//! document generated from the code), tasks (`/v1/tasks`, run by a dispatcher loop),
//! bearer-token auth with per-user isolation (another user's things are 404) and, without
//! tokens, the Host/Origin guard that keeps browser pages out (`origin`), running operations in
//! the background with a per-user limit and crash recovery at start-up, and the embedded web UI
//! at `/`. What an operation may do and how drivers are made are `rein_operation`'s: routes
//! parse, call it, and map the result.

pub mod auth;
pub mod error;
pub mod hub;
pub mod openapi;
pub mod origin;
pub mod routes;
pub mod runner;
pub mod tasks;
mod ui;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use rein_store::SqlStore;
use routes::tasks as tasks_api;
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
    /// Task operations.
    pub tasks: Arc<rein_scheduler::TaskService>,
    /// Starts task runs (manual ones from the API, due ones from the dispatcher).
    pub launcher: Arc<dyn rein_scheduler::Launcher>,
}

impl App {
    /// An app over `store` and `runner`, with tasks on the system clock.
    pub fn new(
        store: Arc<SqlStore>,
        runner: Arc<Runner>,
        hub: Arc<Hub>,
        auth: AuthMode,
        config: ServerConfig,
    ) -> Self {
        let tasks = Arc::new(rein_scheduler::TaskService::new(
            store.clone(),
            Arc::new(rein_scheduler::SystemClock),
        ));
        let launcher = Arc::new(tasks::ServerLauncher {
            runner: Arc::clone(&runner),
            store: Arc::clone(&store),
        });
        Self {
            store,
            runner,
            hub,
            auth,
            config,
            shutdown: CancellationToken::new(),
            tasks,
            launcher,
        }
    }

    /// A dispatcher for this app's tasks, named `worker`.
    pub fn dispatcher(&self, worker: &str) -> rein_scheduler::Dispatcher {
        rein_scheduler::Dispatcher::new(
            self.store.clone(),
            Arc::new(rein_scheduler::SystemClock),
            Arc::clone(&self.launcher),
            worker,
        )
    }
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
        .route("/v1/tasks", get(tasks_api::list).post(tasks_api::create))
        .route(
            "/v1/tasks/{id}",
            get(tasks_api::show)
                .patch(tasks_api::edit)
                .delete(tasks_api::delete),
        )
        .route("/v1/tasks/{id}/pause", post(tasks_api::pause))
        .route("/v1/tasks/{id}/resume", post(tasks_api::resume))
        .route("/v1/tasks/{id}/run", post(tasks_api::run))
        .route("/v1/tasks/{id}/history", get(tasks_api::history))
        .route("/v1/tasks/{id}/next", get(tasks_api::next))
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
    let mut routes = router(Arc::clone(&app));
    if matches!(app.auth, AuthMode::Open(_)) {
        // Without tokens, only requests that name this server (and, when they change
        // something, come from its own pages) are served: see `origin`.
        let local = Arc::new(origin::LocalOrigin {
            port: listener.local_addr()?.port(),
        });
        routes = routes.layer(axum::middleware::from_fn_with_state(local, origin::guard));
    }
    axum::serve(listener, routes)
        .with_graceful_shutdown(async move {
            shutdown.await;
            token.cancel();
        })
        .await
}
