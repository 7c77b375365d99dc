//! rein-server: `rein serve`. It owns the HTTP API under `/v1` (operations, their SSE event
//! streams replayed from the durable log, approvals of whole operation trees, agents, groups,
//! topics and their sub-agents' threads, models, tasks run by a dispatcher loop, knowledge
//! bases with uploads ingested in the background (`knowledge`), memories learnt from
//! conversations (`memories`), and the OpenAI-compatible `/v1/chat/completions`) as one route table (`api`) from which both the
//! router and the OpenAPI document come, Prometheus metrics at `/metrics`, a health check for
//! load balancers at `/healthz` (`503` once the process stops), bearer-token auth with per-user isolation (another user's things are 404)
//! and, without tokens, the Host/Origin guard that keeps browser pages out (`origin`), running
//! operations in the background under the store's admission limits, crash recovery in the
//! background with the reason recorded on what cannot be resumed yet, the embedded web UI
//! at `/`, rein's own MCP server (`mcp_server`: `/mcp`, and the handler `rein mcp` serves
//! over stdio), its A2A server (`a2a`: agent cards and `/a2a`), and the Agent Client Protocol
//! agent `rein acp` serves over stdio (`acp`). What an operation may do and how drivers are made are `rein_operation`'s: routes
//! parse, call it, and map the result.

pub mod a2a;
pub mod acp;
pub mod api;
pub mod auth;
pub mod brief_hooks;
pub mod caps;
pub mod commit_notices;
pub mod devices;
pub mod error;
pub mod error_code;
pub mod goals;
pub mod health;
pub mod hub;
pub mod knowledge;
pub mod mcp_server;
pub mod memories;
pub mod metrics;
pub mod oidc;
pub mod openapi;
pub mod origin;
pub mod routes;
pub mod runner;
pub mod signin;
pub mod tasks;
mod ui;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use rein_store::SqlStore;
use routes::tasks as tasks_api;
use routes::{
    agents, briefs, devices as devices_api, groups, models, openai, operations, skills, topics,
};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use auth::{AuthMode, IssueError, TokenFor, hash_token, issue_token, new_token};
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
    /// How long an event stream waits before re-reading the log when nothing woke it (the
    /// fallback for commits made by other processes).
    pub stream_poll: Duration,
    /// Brief hooks may post to loopback and private addresses (`--allow-private-hooks`).
    pub private_hooks: bool,
    /// What each user's operations may cost per day and per month.
    pub caps: caps::SpendCaps,
    /// Largest file `POST /v1/files` keeps, in bytes (bigger is a 413, nothing stored).
    pub upload_limit: usize,
    /// The models answer from a recorded cassette (`rein --replay`): said on `/v1/models`, so
    /// a front-end can say its answers are a replay and offer the questions it holds.
    pub replay: Option<routes::models::Replay>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            heartbeat: Duration::from_secs(15),
            body_limit: 1024 * 1024,
            stream_poll: Duration::from_secs(1),
            private_hooks: false,
            caps: caps::SpendCaps::default(),
            upload_limit: rein_operation::attachment::MAX_ATTACHMENT_BYTES as usize,
            replay: None,
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
    /// Connected devices and what was sent to them.
    pub devices: Arc<devices::DeviceGateway>,
    /// Wakes the knowledge ingester ([`knowledge::ingest_loop`]) when an upload recorded a job.
    pub ingest: Arc<tokio::sync::Notify>,
    /// The OpenID Connect provider people may sign in through (`rein serve --oidc-issuer`).
    pub oidc: Option<Arc<oidc::Oidc>>,
    /// The A2A tasks this process posts push notifications for.
    pub a2a_followed: Arc<a2a::push::Followed>,
    /// Wakes the goal loop ([`goals::spawn`]): a goal was created or decided on.
    pub goals_wake: Arc<tokio::sync::Notify>,
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
            caps: config.caps,
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
            devices: Arc::default(),
            ingest: Arc::default(),
            oidc: None,
            a2a_followed: Arc::default(),
            goals_wake: Arc::default(),
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

/// Every `/v1` route with its document: the one route table.
pub fn api() -> api::Api {
    operations::api()
        .merge(routes::fork::api())
        .merge(routes::replay::api())
        .merge(routes::archive::api())
        .merge(routes::evals::api())
        .merge(agents::api())
        .merge(groups::api())
        .merge(topics::api())
        .merge(models::api())
        .merge(skills::api())
        .merge(routes::tools::api())
        .merge(openai::api())
        .merge(tasks_api::api())
        .merge(briefs::api())
        .merge(devices_api::api())
        .merge(routes::knowledge::api())
        .merge(routes::memories::api())
        .merge(routes::grants::api())
        .merge(routes::goals::api())
        .merge(routes::logins::api())
        .merge(routes::users::api())
        .merge(routes::sessions::api())
        .merge(routes::oidc::api())
        .merge(routes::own_providers::api())
        .merge(routes::own_mcp::api())
        .merge(routes::files::api())
        .merge(routes::artifacts::api())
        .merge(routes::audio::api())
        .merge(routes::responses::api())
        .merge(routes::agui::api())
        .merge(routes::ui_stream::api())
        .merge(routes::workdir::api())
        .merge(routes::usage::api())
}

/// Every route.
pub fn router(app: AppState) -> Router {
    let body_limit = app.config.body_limit;
    let (routes, _, _) = api().finish();
    routes
        // The web app at the root (and under /app/, where it was first served); the classic
        // console, kept while the app proves itself, under /classic/.
        .route("/", get(ui::root))
        .route(
            "/classic",
            get(|| async { axum::response::Redirect::permanent("/classic/") }),
        )
        .route("/classic/", get(ui::index))
        .route(
            "/app",
            get(|| async { axum::response::Redirect::permanent("/app/") }),
        )
        .route("/app/", get(ui::app))
        .route("/app/{*path}", get(ui::app))
        .route("/metrics", get(metrics::scrape))
        .route("/healthz", get(health::check))
        // A WebSocket, not a JSON route: documented in docs/surfaces.md.
        .route("/v1/devices/connect", get(devices::session::connect))
        .route("/v1/openapi.json", get(ui::openapi))
        // MCP's Streamable HTTP transport, not a JSON route: documented in docs/protocols.md.
        .route(
            "/mcp",
            axum::routing::any_service(mcp_server::service(app.clone())).layer(
                axum::middleware::from_fn_with_state(app.clone(), mcp_server::guard),
            ),
        )
        // A2A's cards and JSON-RPC endpoints: documented in docs/protocols.md.
        .merge(a2a::router())
        .fallback(error::no_route)
        .method_not_allowed_fallback(error::wrong_method)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn(error::uri_limit))
        .with_state(app)
}

/// Serve on `listener` until `shutdown` resolves; then event streams end (with a reconnect
/// hint) and in-flight requests finish. Running operations are the runner's: the caller hands
/// them over ([`runner::Runner::hand_over`]).
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
