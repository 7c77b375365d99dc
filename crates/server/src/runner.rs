//! Running operations inside the server: one driver per run (so cancelling one never touches
//! another), at most one run per operation in this process, a per-user limit on concurrent
//! runs, and crash recovery at start-up.

use crate::error::ApiError;
use crate::hub::{Hub, HubSink, Signal};
use rein_core::OperationId;
use rein_core::state::Status;
use rein_model::Catalog;
use rein_operation::{Decision, Driver, Host, RunEnd};
use rein_store::{OperationFilter, SqlStore, Store, Trigger};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a spawned run does.
pub enum Job {
    /// Step a new (or accepted but never started) operation.
    Run,
    /// Continue from the last committed step.
    Resume,
    /// Record these decisions in order, then continue.
    Decide(Vec<(String, Decision)>),
}

/// Builds drivers and runs operations in the background.
pub struct Runner {
    store: Arc<SqlStore>,
    hub: Arc<Hub>,
    /// What this process brings to operations: models, tools beyond the built-ins, the
    /// defaults of new operations. Each operation runs as its stored spec says.
    pub host: Host,
    /// Runs one user may have going at once.
    pub per_user_limit: usize,
    /// Also told about every commit (the load benchmark times deliveries against it).
    pub observer: Option<rein_operation::CommitHook>,
    active: Mutex<HashMap<OperationId, String>>,
    /// This process's name in operation leases.
    pub node: String,
    /// How long a run's lease lasts without renewal (renewed every third of it); a process
    /// that dies leaves its operations to others after this long.
    pub lease: std::time::Duration,
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
            per_user_limit: 4,
            observer: None,
            active: Mutex::new(HashMap::new()),
            lease: DEFAULT_LEASE,
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
        let hub = Arc::clone(&self.hub);
        let observer = self.observer.clone();
        self.host
            .driver()
            .with_sink(Arc::new(HubSink(Arc::clone(&self.hub))))
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

    /// Refuse with 429 when `owner` is at the limit of concurrent runs.
    pub fn check_capacity(&self, owner: &str) -> Result<(), ApiError> {
        if self.running_for(owner) >= self.per_user_limit {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "too_many_running",
                format!(
                    "{} operations of yours are running (the limit is {}); wait for one to end",
                    self.per_user_limit, self.per_user_limit
                ),
            ));
        }
        Ok(())
    }

    /// Run `job` for operation `id` in the background; 409 when it already runs here or
    /// another process holds its lease. The lease is renewed while the run goes on and
    /// released when it ends, so a process that dies leaves it to run out.
    pub async fn spawn(
        self: &Arc<Self>,
        id: OperationId,
        owner: String,
        driver: Driver,
        job: Job,
    ) -> Result<(), ApiError> {
        if self.is_running(id) {
            return Err(ApiError::conflict(format!(
                "operation {id} is already running"
            )));
        }
        let lease = chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::seconds(30));
        let now = chrono::Utc::now();
        if !self
            .store
            .lease_operation(id, &self.node, now + lease, now)
            .await?
        {
            return Err(ApiError::conflict(format!(
                "operation {id} is running in another process"
            )));
        }
        {
            let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
            if active.contains_key(&id) {
                return Err(ApiError::conflict(format!(
                    "operation {id} is already running"
                )));
            }
            active.insert(id, owner);
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
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
                Job::Decide(decisions) => {
                    let mut end = Ok(RunEnd::WaitingForHuman {
                        pending: Vec::new(),
                    });
                    for (call, decision) in decisions {
                        end = driver
                            .decide(id, Some(std::slice::from_ref(&call)), decision, None)
                            .await;
                        if end.is_err() {
                            break;
                        }
                    }
                    end
                }
            };
            renew.abort();
            match end {
                Ok(end) => tracing::info!(operation = %id, ?end, "run ended"),
                Err(e) => tracing::warn!(operation = %id, error = %e, "run failed"),
            }
            if let Err(e) = me.store.release_operation(id, &me.node).await {
                tracing::warn!(operation = %id, error = %e, "lease not released; it runs out");
            }
            me.active
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            // Streams re-check the log (and end when the operation did).
            me.hub.send(id, || Signal::Wake);
        });
        Ok(())
    }

    /// Every half lease, resume what a dead process left (see [`Runner::recover`]).
    pub async fn recovery_loop(self: Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep((self.lease / 2).max(std::time::Duration::from_secs(1))) => {}
            }
            match self.recover().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(recovered = n, "resumed operations whose lease ran out"),
                Err(e) => tracing::warn!(error = %e.message, "recovery sweep failed"),
            }
        }
    }

    /// Resume the API's and the scheduler's operations that are running (or accepted, never
    /// started) with no live lease: their process died. Returns how many.
    pub async fn recover(self: &Arc<Self>) -> Result<usize, ApiError> {
        let mut n = 0;
        for status in [Status::Running, Status::Idle] {
            let ops = self
                .store
                .list_operations(&OperationFilter {
                    status: Some(status),
                    limit: 10_000,
                    ..Default::default()
                })
                .await?;
            // The CLI's operations belong to the processes that run them; the API's and the
            // scheduler's belong to the server.
            for op in ops.into_iter().filter(|o| {
                matches!(
                    o.trigger,
                    Trigger::Api | Trigger::Schedule | Trigger::Heartbeat
                )
            }) {
                let driver = self.driver();
                let job = if status == Status::Idle {
                    Job::Run
                } else {
                    Job::Resume
                };
                let owner = op.owner.clone().unwrap_or_default();
                if self.spawn(op.id, owner, driver, job).await.is_ok() {
                    tracing::info!(operation = %op.id, ?status, "recovering operation");
                    n += 1;
                }
            }
        }
        Ok(n)
    }
}
