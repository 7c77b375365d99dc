//! `rein serve` and `rein worker`: the HTTP server, and a process that dispatches tasks and
//! runs operations without it.

use anyhow::{Context, anyhow, bail};
use rein_core::usage::Usd;
use rein_server::{App, AuthMode, Hub, Runner, ServerConfig};
use rein_store::{Accounts, SqlStore};
use std::net::SocketAddr;
use std::sync::Arc;

/// `rein serve` options.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: String,
    /// Serve without authentication, every request acting as the user `local` (only on a
    /// loopback address).
    #[arg(long)]
    no_auth: bool,
    /// Operations one user may have running at once (across every server and worker on the
    /// database).
    #[arg(long, default_value_t = 4)]
    max_running: usize,
    /// Operations all users together may have running at once (no limit by default).
    #[arg(long)]
    max_running_total: Option<usize>,
    /// Model when neither the request nor its agent names one (default: $REIN_MODEL, else the
    /// configuration's default_model, else openai/gpt-4o-mini).
    #[arg(long)]
    model: Option<String>,
    /// Seconds between SSE heartbeat comments.
    #[arg(long, default_value_t = 15)]
    heartbeat_secs: u64,
    /// Largest file users may upload to send with a message (`POST /v1/files`), in MiB; a
    /// bigger one is refused (413) before anything is stored.
    #[arg(long, value_name = "MIB", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_upload_mib: u32,
    /// Seconds an event stream waits before re-reading the log when nothing woke it: the
    /// fallback for commits made by other processes (on PostgreSQL their commit notices wake
    /// streams at once, so this can be raised to read the database less).
    #[arg(long, default_value_t = 1)]
    stream_poll_secs: u64,
    /// Seconds an operation's lease lasts without renewal: after a crash, other processes (or
    /// this one restarted) resume its operations once it has run out.
    #[arg(long, default_value_t = 30, env = rein_operation::env::LEASE_SECS)]
    lease_secs: u64,
    /// Seconds a stopping server (SIGTERM, Ctrl-C) waits for the steps under way to commit
    /// before it exits; their operations are then handed over at once (what is still
    /// mid-step is left to its lease running out).
    #[arg(long, default_value_t = 20, env = rein_operation::env::GRACE_SECS)]
    grace_secs: u64,
    /// Seconds a call waits for a device that is not connected before it fails.
    #[arg(long = "device-timeout", default_value_t = 300, value_name = "SECS")]
    device_timeout_secs: u64,
    /// Directory the file and shell tools of the API's operations work in (none by default:
    /// then they have no file or shell access). The shell still needs approval and the
    /// command guard applies.
    #[arg(long, value_name = "DIR")]
    workdir: Option<std::path::PathBuf>,
    /// Let users' brief hooks post to loopback and private addresses (refused by default, so
    /// a user cannot make the server call its own network).
    #[arg(long)]
    allow_private_hooks: bool,
    /// Spending caps, per user (defaults an admin overrides with `rein user caps`) and for the
    /// whole server.
    #[command(flatten)]
    caps: CapsArgs,
    /// Compact operations that finished more than this many days ago, every 10 minutes in
    /// batches (their steps, events and tool results go; record and messages stay: `rein gc`).
    #[arg(long, value_name = "DAYS")]
    retain_days: Option<u32>,
    /// Delete conversations that got no message for this many days, every 10 minutes in
    /// batches (their operations' records stay; one with an operation that is not done or
    /// failed stays: `rein gc --topics-older-than`).
    #[arg(long, value_name = "DAYS")]
    retain_topic_days: Option<u32>,
    /// Make this user an admin (created when missing; a new user's first token is printed
    /// once on stderr): the first admin of a fresh server.
    #[arg(long, value_name = "NAME")]
    init_admin: Option<String>,
    /// The providers users bring.
    #[command(flatten)]
    own: OwnProviderArgs,
    /// Signing in through an OpenID Connect provider.
    #[command(flatten)]
    oidc: OidcArgs,
    /// Where users may choose their operations' working directory.
    #[command(flatten)]
    workdirs: UserWorkdirArgs,
}

/// `rein serve`'s OpenID Connect sign-in.
#[derive(clap::Args)]
struct OidcArgs {
    /// Let people sign in to the web UI through this OpenID Connect provider (its issuer URL:
    /// https, or http on a loopback address); a first sign-in makes a user.
    #[arg(long, value_name = "URL", requires = "oidc_client_id")]
    oidc_issuer: Option<String>,
    /// This server's client id at the provider.
    #[arg(long, value_name = "ID")]
    oidc_client_id: Option<String>,
    /// File holding the client secret (none: a public client, PKCE only).
    #[arg(long, value_name = "FILE")]
    oidc_client_secret_file: Option<std::path::PathBuf>,
    /// The callback URL registered at the provider (default: this server as the browser names
    /// it, with /v1/oidc/callback).
    #[arg(long, value_name = "URL")]
    oidc_redirect_url: Option<String>,
    /// The role of a user made by their first sign-in.
    #[arg(long, value_name = "ROLE", default_value = "member", value_parser = crate::named::named::<rein_store::UserRole>())]
    oidc_role: rein_store::UserRole,
    /// What the sign-in button names (default: the issuer's host).
    #[arg(long, value_name = "TEXT")]
    oidc_label: Option<String>,
}

impl OidcArgs {
    fn provider(&self) -> anyhow::Result<Option<rein_server::oidc::Oidc>> {
        let (Some(issuer), Some(client_id)) = (&self.oidc_issuer, &self.oidc_client_id) else {
            return Ok(None);
        };
        let url = reqwest::Url::parse(issuer)
            .map_err(|e| anyhow!("--oidc-issuer `{issuer}` is not a URL: {e}"))?;
        let loopback = url.host_str().is_some_and(|h| {
            h == "localhost"
                || h.trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
            bail!("--oidc-issuer `{issuer}` must be https (http only on a loopback address)");
        }
        let client_secret = self
            .oidc_client_secret_file
            .as_ref()
            .map(|f| {
                std::fs::read_to_string(f)
                    .map(|s| s.trim().to_owned())
                    .with_context(|| format!("--oidc-client-secret-file {}", f.display()))
            })
            .transpose()?;
        Ok(Some(rein_server::oidc::Oidc::new(
            rein_server::oidc::OidcConfig {
                issuer: issuer.clone(),
                client_id: client_id.clone(),
                client_secret,
                redirect_url: self.oidc_redirect_url.clone(),
                default_role: self.oidc_role,
                label: self
                    .oidc_label
                    .clone()
                    .or_else(|| url.host_str().map(str::to_owned))
                    .unwrap_or_else(|| issuer.clone()),
            },
        )))
    }
}

/// Where users may choose their operations' working directory (`rein serve`, `rein worker`).
#[derive(clap::Args)]
pub struct UserWorkdirArgs {
    /// Let users choose their operations' working directory inside DIR (repeatable; `rein
    /// settings workdir PATH`); every server and worker on one database needs the same.
    #[arg(long, value_name = "DIR")]
    user_workdir_root: Vec<std::path::PathBuf>,
}

impl UserWorkdirArgs {
    fn roots(&self) -> anyhow::Result<rein_operation::workdirs::WorkdirRoots> {
        rein_operation::workdirs::WorkdirRoots::new(&self.user_workdir_root)
            .map_err(|e| anyhow!("--user-workdir-root: {e}"))
    }
}

/// How users' own model providers serve their operations (`rein serve`, `rein worker`).
#[derive(clap::Args)]
pub struct OwnProviderArgs {
    /// File holding the secret key that seals the API keys users store (`rein settings
    /// provider set`); `rein serve` makes it (mode 0600) when missing. Without it,
    /// REIN_SECRET_KEY gives the key itself (base64 of 32 bytes), else secret.key in $REIN_HOME
    /// or ~/.rein. Every server and worker on one database needs the same key.
    #[arg(long, value_name = "FILE", env = rein_operation::env::SECRET_KEY_FILE)]
    secret_key_file: Option<std::path::PathBuf>,
    /// Users' operations use only the provider keys they stored: this server's own
    /// (environment, configuration) serve nobody.
    #[arg(long)]
    no_server_keys: bool,
    /// Refuse base URLs users choose for providers (with them, the server sends model requests
    /// wherever a user says).
    #[arg(long)]
    no_user_base_urls: bool,
    /// Let users define MCP servers on ORIGIN (`https://mcp.example`, `http://10.0.0.5:3001`;
    /// repeatable; `rein settings mcp set`): their operations are offered those servers'
    /// tools, and this server connects there for them. Without it users define none.
    #[arg(long, value_name = "ORIGIN")]
    user_mcp_origin: Vec<rein_operation::own_mcp::McpOrigin>,
}

impl OwnProviderArgs {
    /// The host's setting; `create` makes the secret key when there is none (a server).
    fn keys(&self, create: bool) -> anyhow::Result<rein_operation::own_models::OwnProviderKeys> {
        let env = |k: &str| std::env::var(k).ok();
        let place = rein_operation::secrets::KeyPlace::find(
            &env,
            self.secret_key_file.clone(),
            &rein_operation::settings::data_dir()?,
        );
        let secret = if create {
            Some(place.load_or_create(&env)?)
        } else {
            place.load(&env)?
        };
        Ok(rein_operation::own_models::OwnProviderKeys {
            secret,
            lend_keys: !self.no_server_keys,
            base_urls: !self.no_user_base_urls,
        })
    }

    /// Users' MCP servers, their headers sealed with `keys`' secret.
    fn mcp(
        &self,
        keys: &rein_operation::own_models::OwnProviderKeys,
    ) -> Arc<rein_operation::own_mcp::OwnMcp> {
        Arc::new(rein_operation::own_mcp::OwnMcp::new(
            keys.secret.clone(),
            self.user_mcp_origin.clone(),
        ))
    }
}

/// `rein serve`'s spending caps.
#[derive(clap::Args)]
struct CapsArgs {
    /// What each user's operations may cost per UTC day, in USD: past it, new operations are
    /// refused (429 until the day ends) and a running one's cost limit is what was left.
    #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
    daily_cost_cap: Option<Usd>,
    /// What each user's operations may cost per UTC month, in USD (as --daily-cost-cap).
    #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
    monthly_cost_cap: Option<Usd>,
    /// Tokens (in and out) each user's operations may use per UTC day (as --daily-cost-cap:
    /// a running one's token limit is what was left).
    #[arg(long, value_name = "TOKENS")]
    daily_token_cap: Option<u64>,
    /// Tokens each user's operations may use per UTC month.
    #[arg(long, value_name = "TOKENS")]
    monthly_token_cap: Option<u64>,
    /// What all users' operations together may cost per UTC day, in USD.
    #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
    server_daily_cost_cap: Option<Usd>,
    /// What all users' operations together may cost per UTC month, in USD.
    #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
    server_monthly_cost_cap: Option<Usd>,
    /// Tokens all users' operations together may use per UTC day.
    #[arg(long, value_name = "TOKENS")]
    server_daily_token_cap: Option<u64>,
    /// Tokens all users' operations together may use per UTC month.
    #[arg(long, value_name = "TOKENS")]
    server_monthly_token_cap: Option<u64>,
}

impl CapsArgs {
    fn caps(&self) -> rein_server::caps::SpendCaps {
        rein_server::caps::SpendCaps {
            per_user: rein_store::Caps {
                daily_cost: self.daily_cost_cap,
                monthly_cost: self.monthly_cost_cap,
                daily_tokens: self.daily_token_cap,
                monthly_tokens: self.monthly_token_cap,
            },
            server: rein_store::Caps {
                daily_cost: self.server_daily_cost_cap,
                monthly_cost: self.server_monthly_cost_cap,
                daily_tokens: self.server_daily_token_cap,
                monthly_tokens: self.server_monthly_token_cap,
            },
        }
    }
}

/// `--init-admin NAME`: `name` becomes an admin; when the user is new, its first token is
/// printed once (on stderr, beside the listening address), since nobody else can make one.
async fn init_admin(store: &SqlStore, name: &str) -> anyhow::Result<()> {
    rein_operation::profile::check_name(name).map_err(|e| anyhow!("--init-admin: {e}"))?;
    let existing = store.user_by_name(name).await?;
    let user = match &existing {
        Some(u) => u.clone(),
        None => store.create_user(name).await?,
    };
    store
        .set_role(&user.id, rein_store::UserRole::Admin)
        .await?;
    if existing.is_none() {
        let (token, _) = rein_server::issue_token(
            store,
            &user.id,
            rein_server::TokenFor::Api(&rein_store::TokenSpec {
                label: Some("init-admin".into()),
                ..Default::default()
            }),
        )
        .await?;
        eprintln!("rein: admin {name} created; their token (shown once): {token}");
    }
    Ok(())
}

/// A dispatcher's name in claims: what it is, where, and which process.
fn worker_name(role: &str) -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
    format!("{role}@{host}:{}", std::process::id())
}

/// `rein worker` options.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// Operations one user may have running at once (across every server and worker on the
    /// database).
    #[arg(long, default_value_t = 4)]
    max_running: usize,
    /// Operations all users together may have running at once (no limit by default).
    #[arg(long)]
    max_running_total: Option<usize>,
    /// Model when neither a task's agent nor the configuration names one.
    #[arg(long)]
    model: Option<String>,
    /// Seconds an operation's lease lasts without renewal.
    #[arg(long, default_value_t = 30, env = rein_operation::env::LEASE_SECS)]
    lease_secs: u64,
    /// Seconds a stopping worker (SIGTERM, Ctrl-C) waits for the steps under way to commit
    /// before it exits; their operations are then handed over at once.
    #[arg(long, default_value_t = 20, env = rein_operation::env::GRACE_SECS)]
    grace_secs: u64,
    /// Let users' brief hooks post to loopback and private addresses.
    #[arg(long)]
    allow_private_hooks: bool,
    /// The providers users bring (as the servers on the database were started).
    #[command(flatten)]
    own: OwnProviderArgs,
    /// Where users may choose their operations' working directory (as the servers were
    /// started).
    #[command(flatten)]
    workdirs: UserWorkdirArgs,
}

/// Post urgent briefs to their owners' hooks in the background (every server and worker
/// does; the outbox's claims keep each delivery to one of them).
fn spawn_brief_hooks(app: &App) {
    tokio::spawn(rein_server::brief_hooks::delivery_loop(
        Arc::clone(&app.store),
        std::time::Duration::from_secs(1),
        app.config.private_hooks,
        app.shutdown.clone(),
    ));
}

/// Follow again the unfinished A2A tasks whose clients asked for push notifications.
fn spawn_a2a_pushes(app: &Arc<App>) {
    tokio::spawn(rein_server::a2a::push::resume(Arc::clone(app)));
}

/// `--retain-days` and `--retain-topic-days`: compact what finished before the retention
/// window and delete conversations untouched for longer than theirs, now and every 10 minutes,
/// in batches of 500 (each its own transaction, so requests are served between them), until the
/// server stops.
fn spawn_retention(app: &App, days: Option<u32>, topic_days: Option<u32>) {
    let (store, stop) = (Arc::clone(&app.store), app.shutdown.clone());
    let ago = |days: u32| chrono::Utc::now() - chrono::Duration::days(i64::from(days));
    tokio::spawn(async move {
        loop {
            if let Some(days) = days {
                match rein_store::compact_all(&*store, ago(days), 500, true).await {
                    Ok(c) if c.operations > 0 => {
                        tracing::info!(
                            operations = c.operations,
                            steps = c.steps,
                            events = c.events,
                            tool_executions = c.tool_executions,
                            "compacted finished operations"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "compaction failed; tried again later"),
                }
            }
            if let Some(days) = topic_days {
                match rein_store::delete_stale_topics(&*store, ago(days), 500, true).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(topics = n, "deleted untouched conversations"),
                    Err(e) => {
                        tracing::warn!(error = %e, "deleting old conversations failed; tried again later");
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(std::time::Duration::from_secs(600)) => {}
            }
        }
    });
}

/// Streams and the dispatcher follow what other processes on the same PostgreSQL commit: the
/// returned handle wakes the dispatcher.
fn follow_other_processes(app: &App) -> Arc<tokio::sync::Notify> {
    let wake = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(rein_server::commit_notices::forward(
        Arc::clone(&app.store),
        Arc::clone(&app.hub),
        Arc::clone(&wake),
        Arc::clone(&app.runner.wake_recovery),
        app.shutdown.clone(),
    ));
    wake
}

/// `rein worker`: the dispatcher and operation execution without the HTTP API (several
/// workers share one PostgreSQL; each due fire runs once).
pub async fn worker(
    store: Arc<SqlStore>,
    args: WorkerArgs,
    given: &crate::Invocation,
) -> anyhow::Result<()> {
    let hub = Arc::new(Hub::default());
    let mut host = crate::host::host(Arc::clone(&store), given, args.model.as_deref()).await?;
    crate::host::serve_from(&mut host, &store, given)?;
    let keys = args.own.keys(false)?;
    host.own_mcp = Some(args.own.mcp(&keys));
    host.own_provider_keys = Some(keys);
    host.user_workdirs = args.workdirs.roots()?;
    let mut runner = Runner::new(Arc::clone(&store), Arc::clone(&hub), host);
    runner.limits = rein_store::RunLimits {
        per_owner: Some(args.max_running.max(1) as u64),
        total: args.max_running_total.map(|n| n.max(1) as u64),
    };
    runner.lease = std::time::Duration::from_secs(args.lease_secs.max(1));
    let runner = Arc::new(runner);
    let app = App::new(
        store,
        Arc::clone(&runner),
        hub,
        AuthMode::Tokens,
        ServerConfig {
            private_hooks: args.allow_private_hooks,
            ..Default::default()
        },
    );
    spawn_recovery(Arc::clone(&runner));
    let name = worker_name("worker");
    eprintln!("rein: worker {name} dispatching");
    eprintln!(
        "rein: {}",
        rein_tools::sandbox::Mechanism::detect().describe(runner.host.sandbox)
    );
    tokio::spawn(Arc::clone(&runner).recovery_loop(app.shutdown.clone()));
    spawn_brief_hooks(&app);
    let wake = follow_other_processes(&app);
    let stop = app.shutdown.clone();
    let stopping = Arc::clone(&runner);
    let signal = tokio::spawn(async move {
        shutdown_signal().await;
        stopping.stop();
        stop.cancel();
    });
    rein_server::tasks::dispatch_loop(
        app.dispatcher(&name),
        std::time::Duration::from_secs(1),
        wake,
        app.shutdown.clone(),
    )
    .await;
    signal.abort();
    hand_over(&runner, args.grace_secs).await;
    Ok(())
}

/// Let the steps under way commit (at most `grace_secs`) and release their operations to
/// the other processes, saying what was handed over and what was left to its lease.
async fn hand_over(runner: &Runner, grace_secs: u64) {
    let done = runner
        .hand_over(std::time::Duration::from_secs(grace_secs))
        .await;
    for id in &done.released {
        tracing::info!(operation = %id, "handed over: another process continues it");
    }
    for id in &done.left {
        tracing::warn!(
            operation = %id,
            "still mid-step after the grace period: left to its lease running out"
        );
    }
    eprintln!(
        "rein: stopped; {} operation(s) handed over, {} left to their lease",
        done.released.len(),
        done.left.len()
    );
}

/// Resume what the last process left, in the background, after logging the operations whose
/// last resume failed (with why), so what waits for a key or a tool is seen at start-up.
fn spawn_recovery(runner: Arc<Runner>) {
    tokio::spawn(async move {
        match runner.unresumable().await {
            Ok(ops) => {
                for op in ops {
                    if let Some(note) = &op.recovery {
                        tracing::warn!(
                            operation = %op.id,
                            reason = %note.reason,
                            attempts = note.attempts,
                            "operation could not be resumed on its last attempt"
                        );
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "cannot list operations to recover"),
        }
        match runner.recover_at_start().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                recovered = n,
                "resumed operations left running by the last process"
            ),
            Err(e) => {
                tracing::warn!(error = %e.message, "recovery sweep failed; the next one retries")
            }
        }
    });
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}

/// `rein serve`.
pub async fn serve(
    store: Arc<SqlStore>,
    args: ServeArgs,
    given: &crate::Invocation,
) -> anyhow::Result<()> {
    let addr: SocketAddr = args.addr.parse().map_err(|_| {
        anyhow!(
            "--addr `{}` is not host:port (e.g. 127.0.0.1:7878)",
            args.addr
        )
    })?;
    if let Some(name) = &args.init_admin {
        init_admin(&store, name).await?;
    }
    let auth = if args.no_auth {
        if !addr.ip().is_loopback() {
            bail!(
                "--no-auth is only allowed on a loopback address, not {}",
                addr.ip()
            );
        }
        AuthMode::Open(crate::agent_profile::local_user(&store).await?)
    } else {
        AuthMode::Tokens
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let (app, runner) = start(store, &args, given, auth).await?;
    // Tests and scripts read this line to find the port.
    eprintln!("rein: listening on http://{local}");
    tracing::info!(%local, "listening");
    let stopping = Arc::clone(&runner);
    let stop = async move {
        shutdown_signal().await;
        // Runs end between steps from now on (a request waiting on one gets its answer); then
        // streams end and the listener closes.
        stopping.stop();
    };
    rein_server::serve(listener, app, stop).await?;
    hand_over(&runner, args.grace_secs).await;
    Ok(())
}

/// `rein mcp`: the server's work (runs, recovery, tasks, ingestion) in this process, its MCP
/// door on stdin and stdout for the database's local user, until the client closes stdin.
pub async fn mcp(
    store: Arc<SqlStore>,
    args: ServeArgs,
    given: &crate::Invocation,
) -> anyhow::Result<()> {
    let user = crate::agent_profile::local_user(&store).await?;
    let (app, runner) = start(store, &args, given, AuthMode::Open(user.clone())).await?;
    rein_server::mcp_server::serve_stdio(Arc::clone(&app), user)
        .await
        .context("the MCP connection on stdin/stdout failed")?;
    runner.stop();
    app.shutdown.cancel();
    hand_over(&runner, args.grace_secs).await;
    Ok(())
}

/// `rein acp`'s options: `rein serve`'s, and the agent the editor talks to.
#[derive(clap::Args)]
pub struct AcpArgs {
    /// Run this agent of the local user's (default: the default agent).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    #[command(flatten)]
    serve: ServeArgs,
}

/// `rein acp`: the Agent Client Protocol on stdin and stdout until the editor closes stdin,
/// with the server's background work in this process.
pub async fn acp(
    store: Arc<SqlStore>,
    args: AcpArgs,
    given: &crate::Invocation,
) -> anyhow::Result<()> {
    let user = crate::agent_profile::local_user(&store).await?;
    if let Some(name) = &args.agent {
        rein_store::Accounts::get_agent(&*store, &user.id, name)
            .await?
            .with_context(|| format!("no agent {name}: rein agent create {name} …"))?;
    }
    // The editor does the file and shell calls of its sessions' operations when it offers to.
    let editor = Arc::new(rein_server::acp::Editor::new());
    let (app, runner) = start_with(
        store,
        &args.serve,
        given,
        AuthMode::Open(user.clone()),
        Some(editor.hands()),
    )
    .await?;
    rein_server::acp::serve_stdio(Arc::clone(&app), user, args.agent, editor)
        .await
        .context("the ACP connection on stdin/stdout failed")?;
    runner.stop();
    app.shutdown.cancel();
    hand_over(&runner, args.serve.grace_secs).await;
    Ok(())
}

/// The server's state and its background work (recovery, devices, retention, brief hooks,
/// ingestion, memories, task dispatch), started; what serves it is the caller's.
async fn start(
    store: Arc<SqlStore>,
    args: &ServeArgs,
    given: &crate::Invocation,
    auth: AuthMode,
) -> anyhow::Result<(rein_server::AppState, Arc<Runner>)> {
    start_with(store, args, given, auth, None).await
}

/// [`start`], with `clients` doing the calls they take ([`rein_operation::client_tools`]).
async fn start_with(
    store: Arc<SqlStore>,
    args: &ServeArgs,
    given: &crate::Invocation,
    auth: AuthMode,
    clients: Option<Arc<dyn rein_operation::client_tools::ClientTools>>,
) -> anyhow::Result<(rein_server::AppState, Arc<Runner>)> {
    let hub = Arc::new(Hub::default());
    let mut host = crate::host::host(Arc::clone(&store), given, args.model.as_deref()).await?;
    host.client_tools = clients;
    crate::host::serve_from(&mut host, &store, given)?;
    let keys = args.own.keys(true)?;
    host.own_mcp = Some(args.own.mcp(&keys));
    host.own_provider_keys = Some(keys);
    host.user_workdirs = args.workdirs.roots()?;
    if let Some(dir) = &args.workdir {
        let dir =
            std::fs::canonicalize(dir).map_err(|e| anyhow!("--workdir {}: {e}", dir.display()))?;
        if !dir.is_dir() {
            anyhow::bail!("--workdir {}: not a directory", dir.display());
        }
        host.working_directory = Some(dir.to_string_lossy().into_owned());
    }
    let gateway = Arc::new(rein_server::devices::DeviceGateway::new(
        std::time::Duration::from_secs(args.device_timeout_secs.max(1)),
    ));
    host.remote_agents = Some(Arc::new(rein_server::devices::agents::GatewayAgents(
        Arc::clone(&gateway),
    )));
    let mut runner = Runner::new(Arc::clone(&store), Arc::clone(&hub), host);
    runner.limits = rein_store::RunLimits {
        per_owner: Some(args.max_running.max(1) as u64),
        total: args.max_running_total.map(|n| n.max(1) as u64),
    };
    runner.lease = std::time::Duration::from_secs(args.lease_secs.max(1));
    let runner = Arc::new(runner);
    let mut app = App::new(
        store,
        Arc::clone(&runner),
        hub,
        auth,
        ServerConfig {
            heartbeat: std::time::Duration::from_secs(args.heartbeat_secs.max(1)),
            stream_poll: std::time::Duration::from_secs(args.stream_poll_secs.max(1)),
            private_hooks: args.allow_private_hooks,
            caps: args.caps.caps(),
            upload_limit: args.max_upload_mib as usize * 1024 * 1024,
            replay: replay_info(given)?,
            ..Default::default()
        },
    );
    app.devices = gateway;
    app.oidc = args.oidc.provider()?.map(Arc::new);
    let app = Arc::new(app);
    tokio::spawn(Arc::clone(&runner).recovery_loop(app.shutdown.clone()));
    rein_server::devices::dispatch::spawn(&app, app.shutdown.clone());
    rein_server::goals::spawn(&app, app.shutdown.clone());
    if args.retain_days.is_some() || args.retain_topic_days.is_some() {
        spawn_retention(&app, args.retain_days, args.retain_topic_days);
    }
    spawn_brief_hooks(&app);
    spawn_a2a_pushes(&app);
    tokio::spawn(rein_server::knowledge::ingest_loop(
        Arc::clone(&app),
        std::time::Duration::from_secs(2),
    ));
    tokio::spawn(rein_server::memories::extraction_loop(
        Arc::clone(&app),
        std::time::Duration::from_secs(2),
    ));
    let wake = follow_other_processes(&app);
    // Due tasks are dispatched by this process too.
    tokio::spawn(rein_server::tasks::dispatch_loop(
        app.dispatcher(&worker_name("serve")),
        std::time::Duration::from_secs(1),
        wake,
        app.shutdown.clone(),
    ));
    // Recovery runs in the background: the server serves at once, and an operation that
    // cannot be resumed here is left resumable with its reason.
    spawn_recovery(Arc::clone(&runner));
    eprintln!(
        "rein: {}",
        rein_tools::sandbox::Mechanism::detect().describe(runner.host.sandbox)
    );
    Ok((app, runner))
}

/// What `/v1/models` says of a replay: the cassette `--replay` names and its questions.
fn replay_info(
    given: &crate::Invocation,
) -> anyhow::Result<Option<rein_server::routes::models::Replay>> {
    let Some(path) = &given.cli_replay else {
        return Ok(None);
    };
    let cassette = rein_model::cassette::ReplayTransport::from_file(path)?;
    Ok(Some(rein_server::routes::models::Replay {
        cassette: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        questions: cassette.questions(),
    }))
}
