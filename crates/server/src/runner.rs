//! Running operations inside the server: one driver per run (so cancelling one never touches
//! another), at most one run per operation in this process, a per-user limit on concurrent
//! runs, crash recovery at start-up, and the hand-over when the process stops
//! ([`Runner::hand_over`]).

use crate::error::ApiError;
use crate::hub::{Hub, HubSink, Signal};
use rein_core::OperationId;
use rein_core::state::Status;
use rein_model::Catalog;
use rein_operation::DriverError;
use rein_operation::{Decision, Driver, Host, RunEnd};
use rein_store::{Admission, Claim, OperationFilter, RunLimits, SqlStore, Store, Trigger};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a spawned run does.
pub enum Job {
    /// Step a new (or accepted but never started) operation.
    Run,
    /// Continue from the last committed step.
    Resume,
    /// Record these decisions in order (each call's, with who decided when it was not the
    /// caller: a grant), then continue.
    Decide(Vec<(String, Decision, Option<String>)>),
    /// Record a device's answer of an async call, then continue if nothing else is awaited.
    CompleteAsync {
        /// The call.
        call_id: String,
        /// Its result.
        output: Box<rein_core::engine::ports::ToolOutput>,
    },
}

/// How a run started with [`Runner::spawn`] ended, once it has: its end, or why it failed.
#[derive(Debug)]
pub struct Ended(tokio::sync::oneshot::Receiver<Result<RunEnd, Arc<DriverError>>>);

impl Ended {
    /// Wait for the run to end (`None` if the run's task was dropped without saying).
    pub async fn wait(self) -> Option<Result<RunEnd, Arc<DriverError>>> {
        self.0.await.ok()
    }
}

/// Hands a run's live events to several sinks: the hub, the metrics, a request waiting on them.
struct Tee(Vec<Arc<dyn rein_core::engine::EventSink>>);

impl rein_core::engine::EventSink for Tee {
    fn publish(&self, event: &rein_core::AgentEvent) {
        for sink in &self.0 {
            sink.publish(event);
        }
    }
}

/// How long a new run of an operation waits for this process's previous run of it to finish
/// its last writes (the lease release after it parked) before the request is a 409.
pub const FINISHING: std::time::Duration = std::time::Duration::from_secs(2);

/// The refusal of new work while the process stops.
fn stopping() -> ApiError {
    let mut e = ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        crate::error_code::ApiErrorCode::ShuttingDown,
        "this server is stopping: retry, and another replica (or this one restarted) takes it",
    );
    e.retry_after = Some(1);
    e
}

/// Whether a server runs operations of this trigger (a terminal runs its own).
fn server_owned(trigger: Trigger) -> bool {
    match trigger {
        Trigger::Api | Trigger::Schedule | Trigger::Heartbeat => true,
        Trigger::Cli | Trigger::SubAgent => false,
    }
}

/// Builds drivers and runs operations in the background.
pub struct Runner {
    store: Arc<SqlStore>,
    hub: Arc<Hub>,
    /// What this process brings to operations: models, tools beyond the built-ins, the
    /// defaults of new operations. Each operation runs as its stored spec says.
    pub host: Host,
    /// Operations that may run at once (per user, and in all), each under a live lease: the
    /// store claims a slot in the same transaction that creates or leases the operation, so
    /// concurrent requests cannot overshoot.
    pub limits: RunLimits,
    /// Also told about every commit (the load benchmark times deliveries against it).
    pub observer: Option<rein_operation::CommitHook>,
    /// What this server's runs did, for `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    active: Mutex<HashMap<OperationId, String>>,
    /// Woken each time a run leaves `active`.
    finished: tokio::sync::Notify,
    /// This process's name in operation leases.
    pub node: String,
    /// How long a run's lease lasts without renewal (renewed every third of it); a process
    /// that dies leaves its operations to others after this long.
    pub lease: std::time::Duration,
    /// Cancelled when this process stops: runs end between steps and no new one starts.
    stopping: tokio_util::sync::CancellationToken,
    /// Wakes the recovery sweep before its next tick (another process handed operations
    /// over).
    pub wake_recovery: Arc<tokio::sync::Notify>,
    /// Operations whose runs this process handed over as it stopped.
    released: Mutex<Vec<OperationId>>,
}

/// What [`Runner::hand_over`] did.
#[derive(Debug, Default)]
pub struct HandOver {
    /// Operations whose runs stopped between steps and were released to other processes.
    pub released: Vec<OperationId>,
    /// Operations still mid-step when the grace period ended: their leases run out.
    pub left: Vec<OperationId>,
}

/// How long a run's lease lasts without renewal, by default.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

impl Runner {
    /// A runner over `store`, publishing to `hub`, running operations on `host`.
    pub fn new(store: Arc<SqlStore>, hub: Arc<Hub>, host: Host) -> Self {
        Self {
            store,
            hub,
            host,
            limits: RunLimits {
                per_owner: Some(4),
                total: None,
            },
            observer: None,
            metrics: Arc::default(),
            active: Mutex::new(HashMap::new()),
            finished: tokio::sync::Notify::new(),
            lease: DEFAULT_LEASE,
            stopping: tokio_util::sync::CancellationToken::new(),
            wake_recovery: Arc::default(),
            released: Mutex::default(),
            node: format!(
                "{}:{}:{}",
                std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into()),
                std::process::id(),
                OperationId::new()
            ),
        }
    }

    /// The catalog models are priced and described from.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.host.catalog
    }

    /// A driver of this process: each operation it runs gets the model, tools and scope of
    /// its stored spec; its events go to the hub.
    pub fn driver(&self) -> Driver {
        self.driver_with(None)
    }

    /// [`Runner::driver`], its live events also handed to `also` (a request streaming them).
    pub fn driver_with(&self, also: Option<Arc<dyn rein_core::engine::EventSink>>) -> Driver {
        let hub = Arc::clone(&self.hub);
        let observer = self.observer.clone();
        let mut sinks: Vec<Arc<dyn rein_core::engine::EventSink>> = vec![
            Arc::new(HubSink(Arc::clone(&self.hub))),
            Arc::new(crate::metrics::MetricsSink(Arc::clone(&self.metrics))),
        ];
        sinks.extend(also);
        let sink = Arc::new(Tee(sinks));
        self.host
            .driver()
            .with_hand_over(self.stopping.clone())
            .with_sink(sink)
            .with_commit_hook(Arc::new(move |id, events| {
                if let Some(o) = &observer {
                    o(id, events);
                }
                hub.committed(id, events);
            }))
    }

    /// Runs `owner` has going in this process.
    pub fn running_for(&self, owner: &str) -> usize {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        active.values().filter(|o| o.as_str() == owner).count()
    }

    /// Whether the operation runs in this process now.
    pub fn is_running(&self, id: OperationId) -> bool {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        active.contains_key(&id)
    }

    /// A running slot with this process's lease, from now, under this runner's limits: give
    /// it to [`rein_operation::StartOptions::admission`] so an operation is created claimed.
    pub fn admission(&self) -> Admission {
        let now = chrono::Utc::now();
        let lease = chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::seconds(30));
        Admission {
            node: self.node.clone(),
            until: now + lease,
            now,
            limits: self.limits.clone(),
        }
    }

    /// Run `job` for operation `id` in the background; 409 when it still runs here after
    /// [`FINISHING`] or
    /// another process holds its lease. The lease is renewed while the run goes on and
    /// released when it ends, so a process that dies leaves it to run out.
    pub async fn spawn(
        self: &Arc<Self>,
        id: OperationId,
        owner: String,
        driver: Driver,
        job: Job,
    ) -> Result<Ended, ApiError> {
        if self.stopping.is_cancelled() {
            return match job {
                // The operation is stored and waits to be run: another process (or this one
                // restarted) runs it.
                Job::Run | Job::Resume => {
                    self.store.hand_over(id, &self.node).await?;
                    let (ended, on_end) = tokio::sync::oneshot::channel();
                    let _ = ended.send(Ok(RunEnd::Released));
                    Ok(Ended(on_end))
                }
                // What the request carries is applied by the run: refused, nothing written.
                Job::Decide(_) | Job::CompleteAsync { .. } => Err(stopping()),
            };
        }
        // A run that has just parked (a decision arriving as soon as its approval is visible)
        // is still releasing its lease: let it finish rather than refuse the decision.
        let deadline = tokio::time::Instant::now() + FINISHING;
        loop {
            // Registered before the check, so a run that ends in between still wakes it.
            let ended = self.finished.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if !self.is_running(id) || tokio::time::timeout_at(deadline, ended).await.is_err() {
                break;
            }
        }
        // A run here ends at its next boundary; a lease held elsewhere runs out within its
        // length even when its process died.
        let lease_secs = self.lease.as_secs();
        // The slot here is taken before the lease: two requests for the same operation (a
        // decision and the recovery sweep) would otherwise both claim it (the claim lets this
        // process renew its own lease), and the loser would leave a lease nobody releases,
        // holding one of the owner's running slots until it ran out.
        {
            let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
            if active.contains_key(&id) {
                return Err(ApiError::operation_busy(
                    format!("operation {id} is already running"),
                    1,
                ));
            }
            active.insert(id, owner);
        }
        let lease = chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::seconds(30));
        // The lease and a running slot, in one transaction (429 at the limit).
        let claimed = self.store.claim_operation(id, &self.admission()).await;
        if !matches!(claimed, Ok(Claim::Claimed)) {
            self.active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            self.finished.notify_waiters();
        }
        if claimed? == Claim::Busy {
            return Err(ApiError::operation_busy(
                format!(
                    "operation {id} is running in another process (or one that stopped: its lease runs out within {lease_secs} s)"
                ),
                lease_secs,
            ));
        }
        // Decisions are recorded before the request is answered: a process killed once it
        // said 202 leaves them recorded, and the recovery sweep carries them out
        // (`decided_while_parked`). Refused ones (a call no longer pending, decided by someone
        // else) give the slot and the lease back.
        if let Job::Decide(decisions) = &job
            && let Err(e) = driver.record_decisions(id, decisions).await
        {
            if let Err(e) = self.store.release_operation(id, &self.node).await {
                tracing::warn!(operation = %id, error = %e, "lease not released; it runs out");
            }
            self.active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            self.finished.notify_waiters();
            return Err(e.into());
        }
        let me = Arc::clone(self);
        let (ended, on_end) = tokio::sync::oneshot::channel();
        // The run's spans nest under the caller's (a task run's), across the spawn.
        let caller = tracing::Span::current();
        let run = async move {
            let renew = {
                let me = Arc::clone(&me);
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(me.lease / 3).await;
                        let now = chrono::Utc::now();
                        match me
                            .store
                            .lease_operation(id, &me.node, now + lease, now)
                            .await
                        {
                            Ok(true) => {}
                            Ok(false) => {
                                tracing::error!(operation = %id, "lease lost to another process");
                            }
                            Err(e) => {
                                tracing::warn!(operation = %id, error = %e, "lease not renewed")
                            }
                        }
                    }
                })
            };
            let end = match job {
                Job::Run => driver.run(id).await,
                Job::Resume => driver.resume(id).await,
                Job::CompleteAsync { call_id, output } => {
                    driver.complete_async_tool(id, &call_id, *output).await
                }
                Job::Decide(decisions) => {
                    let mut end = Ok(RunEnd::WaitingForHuman {
                        pending: Vec::new(),
                    });
                    for (call, decision, by) in decisions {
                        end = driver
                            .decide(
                                id,
                                Some(std::slice::from_ref(&call)),
                                decision,
                                by.as_deref(),
                            )
                            .await;
                        if end.is_err() {
                            break;
                        }
                    }
                    end
                }
            };
            renew.abort();
            let released = matches!(end, Ok(RunEnd::Released));
            // Whoever waits on the run (a request answering with it) learns how it ended.
            let end = end.map_err(Arc::new);
            let _ = ended.send(end.clone());
            match end {
                Ok(end) => {
                    tracing::info!(operation = %id, ?end, "run ended");
                    if let Err(e) = me.store.clear_recovery(id).await {
                        tracing::warn!(operation = %id, error = %e, "recovery note not cleared");
                    }
                }
                Err(e)
                    if matches!(
                        *e,
                        DriverError::ModelUnavailable(_) | DriverError::MissingTools { .. }
                    ) =>
                {
                    // Nothing was changed: the operation stays resumable and is tried again
                    // later, by this process or one that has what it needs.
                    me.note_unresumable(id, &e.to_string()).await;
                }
                Err(e) => tracing::warn!(operation = %id, error = %e, "run failed"),
            }
            let release = if released {
                me.released
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(id);
                me.store.hand_over(id, &me.node).await
            } else {
                me.store.release_operation(id, &me.node).await
            };
            if let Err(e) = release {
                tracing::warn!(operation = %id, error = %e, "lease not released; it runs out");
            }
            me.active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            me.finished.notify_waiters();
            // Streams re-check the log (and end when the operation did).
            me.hub.send(id, || Signal::Wake);
            // What waited for its turn in the conversation starts now.
            me.start_next(id).await;
        };
        tokio::spawn(tracing::Instrument::instrument(run, caller));
        Ok(Ended(on_end))
    }

    /// Start the operation queued behind `after` in its conversation, if `after` no longer
    /// holds it (and nothing else does).
    fn start_next(self: &Arc<Self>, after: OperationId) -> futures::future::BoxFuture<'static, ()> {
        let me = Arc::clone(self);
        Box::pin(async move {
            let driver = me.driver();
            match driver.promote_after(after, server_owned).await {
                Ok(Some(next)) => me.run_promoted(next, driver).await,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(operation = %after, error = %e, "the next queued operation was not started; the recovery sweep will")
                }
            }
        })
    }

    /// Run an operation just promoted from its conversation's queue.
    async fn run_promoted(self: &Arc<Self>, id: OperationId, driver: Driver) {
        let owner = match self.store.operation(id).await {
            Ok(Some(r)) => r.owner.unwrap_or_default(),
            _ => String::new(),
        };
        match self.spawn(id, owner, driver, Job::Run).await {
            Ok(_) => tracing::info!(operation = %id, "queued operation started"),
            Err(e) => {
                tracing::debug!(operation = %id, error = %e.message, "queued operation left to the recovery sweep")
            }
        }
    }

    /// Every half lease, and whenever another process hands operations over
    /// ([`Runner::wake_recovery`]), resume what no process runs (see [`Runner::recover`]).
    pub async fn recovery_loop(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let wake = Arc::clone(&self.wake_recovery);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.stopping.cancelled() => return,
                () = wake.notified() => {}
                () = tokio::time::sleep((self.lease / 2).max(std::time::Duration::from_secs(1))) => {}
            }
            match self.recover().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(recovered = n, "resumed operations whose lease ran out"),
                Err(e) => tracing::warn!(error = %e.message, "recovery sweep failed"),
            }
        }
    }

    /// Stop this process's runs for another process to continue: no new run starts (a
    /// request that would start one gets 503 `shutting_down`), each run ends once the step
    /// under way commits, and its lease is released at once (on PostgreSQL the other
    /// processes hear of it and take it up). Waits at most `grace` for the steps under way;
    /// what is still mid-step then is left to its lease running out, as after a crash.
    pub async fn hand_over(&self, grace: std::time::Duration) -> HandOver {
        self.stop();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let ended = self.finished.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let empty = self
                .active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty();
            if empty || tokio::time::timeout_at(deadline, ended).await.is_err() {
                break;
            }
        }
        let left: Vec<OperationId> = {
            let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
            active.keys().copied().collect()
        };
        let released =
            std::mem::take(&mut *self.released.lock().unwrap_or_else(|p| p.into_inner()));
        HandOver { released, left }
    }

    /// The start of [`Runner::hand_over`] without the wait: from now on runs end between
    /// steps and no new one starts.
    pub fn stop(&self) {
        self.stopping.cancel();
    }

    /// Whether this process is stopping ([`Runner::stop`]).
    pub fn is_stopping(&self) -> bool {
        self.stopping.is_cancelled()
    }

    /// Record that this process cannot run `id` now, with the reason, and when to try again
    /// (30 s, doubling per attempt, at most 15 min).
    async fn note_unresumable(&self, id: OperationId, reason: &str) {
        let attempts = match self.store.operation(id).await {
            Ok(Some(r)) => r.recovery.map_or(0, |n| n.attempts),
            _ => 0,
        };
        let wait = 30u64.saturating_mul(1 << attempts.min(5)).min(15 * 60);
        let retry_at = chrono::Utc::now() + chrono::Duration::seconds(wait as i64);
        tracing::warn!(
            operation = %id,
            %reason,
            retry_at = %retry_at.to_rfc3339(),
            "operation cannot be resumed here; left resumable"
        );
        if let Err(e) = self.store.note_recovery_failure(id, reason, retry_at).await {
            tracing::warn!(operation = %id, error = %e, "recovery note not recorded");
        }
    }

    /// Resume the API's and the scheduler's operations that are running (or accepted, never
    /// started) with no live lease: their process died. One that cannot be taken now (another
    /// process holds it, no running slot is free, its last attempt failed and its retry time
    /// has not come) is passed over; nothing stops the sweep. Returns how many were started.
    pub async fn recover(self: &Arc<Self>) -> Result<usize, ApiError> {
        self.recover_from(chrono::Utc::now()).await
    }

    /// [`Runner::recover`] as a process's first pass: operations whose last resume failed are
    /// tried at once, whatever their retry time (this process may have what the last one
    /// lacked).
    pub async fn recover_at_start(self: &Arc<Self>) -> Result<usize, ApiError> {
        self.recover_from(chrono::DateTime::<chrono::Utc>::MAX_UTC)
            .await
    }

    async fn recover_from(
        self: &Arc<Self>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<usize, ApiError> {
        let mut n = 0;
        // Conversations whose queue nobody moved on (the operation before ended in another
        // process, or this one stopped before it could).
        for topic in self.store.stalled_topics().await? {
            let driver = self.driver();
            match driver.promote_where(&topic, server_owned).await {
                Ok(Some(next)) => {
                    self.run_promoted(next, driver).await;
                    n += 1;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(%topic, error = %e, "queued operation not started"),
            }
        }
        // The CLI's operations belong to the processes that run them; the API's and the
        // scheduler's belong to the server.
        // Not the CLI's (see above), nor one whose last resume failed before its retry time.
        let due = |o: &rein_store::OperationRecord| {
            server_owned(o.trigger)
                && o.recovery
                    .as_ref()
                    .and_then(|r| r.retry_at)
                    .is_none_or(|at| at <= now)
        };
        for op in self.unfinished().await?.into_iter().filter(due) {
            if self.is_running(op.id) {
                continue;
            }
            let status = op.status;
            let driver = self.driver();
            if status == Status::WaitingForSubAgents {
                // Only a tree with work nobody does (not one parked on a human).
                match driver.tree_has_work(op.id).await {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(operation = %op.id, error = %e, "sub-agent tree not read");
                        continue;
                    }
                }
            }
            // A parked tree is run, not resumed: what a human interrupted stays interrupted.
            let job = if matches!(status, Status::Idle | Status::WaitingForSubAgents) {
                Job::Run
            } else {
                Job::Resume
            };
            let owner = op.owner.clone().unwrap_or_default();
            match self.spawn(op.id, owner, driver, job).await {
                Ok(_) => {
                    tracing::info!(operation = %op.id, ?status, "recovering operation");
                    n += 1;
                }
                Err(e) => {
                    tracing::debug!(operation = %op.id, error = %e.message, "not recovered now")
                }
            }
        }
        // Parked on a person whose decision was recorded, the process that recorded it gone
        // before the step it allowed committed: a resume carries the decision out.
        for op in self
            .store
            .decided_while_parked(&self.node)
            .await?
            .into_iter()
            .filter(|o| due(o) && !self.is_running(o.id))
        {
            let owner = op.owner.clone().unwrap_or_default();
            match self.spawn(op.id, owner, self.driver(), Job::Resume).await {
                Ok(_) => {
                    tracing::info!(operation = %op.id, "carrying out a decision recorded before a stop");
                    n += 1;
                }
                Err(e) => {
                    tracing::debug!(operation = %op.id, error = %e.message, "not recovered now")
                }
            }
        }
        Ok(n)
    }

    /// Operations whose last resume failed here or elsewhere, with the reason: logged when a
    /// server or worker starts, so what waits for a key or a tool is seen at once.
    pub async fn unresumable(&self) -> Result<Vec<rein_store::OperationRecord>, ApiError> {
        Ok(self
            .unfinished()
            .await?
            .into_iter()
            .filter(|o| o.recovery.is_some())
            .collect())
    }

    /// Operations that are running, accepted but never started, or waiting for sub-agents,
    /// whoever runs them.
    async fn unfinished(&self) -> Result<Vec<rein_store::OperationRecord>, ApiError> {
        let mut out = Vec::new();
        for status in [Status::Running, Status::Idle, Status::WaitingForSubAgents] {
            out.extend(
                self.store
                    .list_operations(&OperationFilter {
                        status: Some(status),
                        // What this process leased it runs or is about to (an operation the
                        // API created claimed, in the instant before it is spawned).
                        not_leased_by: Some(self.node.clone()),
                        limit: 10_000,
                        ..Default::default()
                    })
                    .await?,
            );
        }
        Ok(out)
    }
}
