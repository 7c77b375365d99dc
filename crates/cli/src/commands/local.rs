//! [`Local`]: commands on this machine's database, opened (and migrated) when a command first
//! needs it: `config show` and `models` never do. Operations are continued in this process by
//! a driver that prints their events as they happen (made once, when a command first needs
//! one: it connects the configured MCP servers).

use super::{Backend, Granted, Ran, Start};
use crate::agent_profile::RunAs;
use crate::invocation::Invocation;
use anyhow::{anyhow, bail};
use chrono::Utc;
use rein_core::intervention::GrantScope;
use rein_core::state::Status;
use rein_core::{AgentEvent, OperationId};
use rein_operation::context_report::CallContext;
use rein_operation::{
    AgentProfile, Decision, Driver, DriverError, RunEnd, SpecOrigin, StartOptions,
};
use rein_server::routes::agents::Agent;
use rein_server::routes::devices::DeviceOut;
use rein_server::routes::operations::OperationDetail;
use rein_store::{
    Accounts, AgentRecord, GrantFilter, GrantRecord, Grants, OperationFilter, OperationRecord,
    SqlStore, Store,
};
use std::sync::Arc;

/// Who the driver says decided (the store's `decided_by`, a grant's `created_by`).
const BY: Option<&str> = Some("cli");

/// This machine's database and this process's settings.
pub struct Local {
    /// The database: a SQLite file or a `postgres://` URL.
    pub target: String,
    /// Where knowledge vectors are searched.
    vector_search: rein_store::VectorIndex,
    /// The command line's settings and the configuration file.
    pub given: Invocation,
    store: tokio::sync::OnceCell<Arc<SqlStore>>,
    host: tokio::sync::OnceCell<rein_operation::Host>,
    driver: tokio::sync::OnceCell<Driver>,
}

impl Local {
    /// Commands on the database at `target` with what this run was `given`.
    pub fn new(target: String, vector_search: rein_store::VectorIndex, given: Invocation) -> Self {
        Self {
            target,
            vector_search,
            given,
            store: tokio::sync::OnceCell::new(),
            host: tokio::sync::OnceCell::new(),
            driver: tokio::sync::OnceCell::new(),
        }
    }

    /// The database, opened and brought up to date on first use.
    pub async fn store(&self) -> anyhow::Result<&Arc<SqlStore>> {
        self.store
            .get_or_try_init(|| async {
                let mut store =
                    SqlStore::open(&self.target, rein_store::Synchronous::Normal).await?;
                if self.vector_search == rein_store::VectorIndex::Pgvector {
                    store.enable_pgvector().await?;
                }
                Ok::<_, anyhow::Error>(Arc::new(store))
            })
            .await
    }

    /// This process's host (its models, tools and defaults), made on first use: it connects
    /// the configured MCP servers.
    pub async fn host(&self) -> anyhow::Result<&rein_operation::Host> {
        let store = self.store().await?;
        self.host
            .get_or_try_init(|| crate::host::host(Arc::clone(store), &self.given, None))
            .await
    }

    /// A driver of this process's host that prints the events of the operations it runs or
    /// continues, each as its stored spec says.
    pub async fn driver(&self) -> anyhow::Result<&Driver> {
        let host = self.host().await?;
        self.driver
            .get_or_try_init(|| async {
                Ok::<_, anyhow::Error>(crate::host::printing_driver(host, self.given.json))
            })
            .await
    }

    /// The tasks and briefs of this machine's database, and the local user's id (whose they
    /// are).
    pub async fn task_service(&self) -> anyhow::Result<(rein_scheduler::TaskService, String)> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        let tasks = rein_scheduler::TaskService::new(
            Arc::clone(store) as _,
            Arc::new(rein_scheduler::SystemClock),
        );
        Ok((tasks, user.id))
    }

    /// The spec of an operation run here as `who` with `over` winning; a model this process
    /// cannot reach is refused now, not when the turn starts.
    async fn spec(
        &self,
        who: RunAs<'_>,
        over: &AgentProfile,
    ) -> anyhow::Result<rein_core::spec::OperationSpec> {
        let store = self.store().await?;
        let host = self.host().await?;
        // Where this command runs, but a replay's recorded working directory.
        let origin = SpecOrigin {
            working_directory: host.working_directory.clone().or_else(|| {
                std::env::current_dir()
                    .ok()
                    .map(|d| d.to_string_lossy().into_owned())
            }),
            ..Default::default()
        };
        let spec =
            crate::agent_profile::spec(store, &self.given.config, host, who, over, origin).await?;
        if let Some(m) = &spec.model {
            host.models.provider(m)?;
        }
        Ok(spec)
    }

    /// Learn from the conversation of a run that ended `end` (when it is done): after the
    /// answer is out, so a failure is only logged and the next run tries again.
    pub async fn learn(&self, end: &RunEnd) {
        if !matches!(end, RunEnd::Done { .. }) {
            return;
        }
        let learnt = match self.host().await {
            Ok(host) => super::memory::extract(host, false).await,
            Err(e) => Err(e),
        };
        if let Err(e) = learnt {
            tracing::warn!(error = %e, "memory extraction could not run");
        }
    }

    async fn record(&self, name: &str) -> anyhow::Result<AgentRecord> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        store
            .get_agent(&user.id, name)
            .await?
            .ok_or_else(|| anyhow!("no agent `{name}`"))
    }
}

fn shown(r: AgentRecord) -> anyhow::Result<Agent> {
    let name = r.name.clone();
    Agent::of_record(r).map_err(|e| anyhow!("stored agent `{name}` cannot be read: {e}"))
}

impl Backend for Local {
    fn local(&self) -> anyhow::Result<&Local> {
        Ok(self)
    }

    async fn operations(&self, status: Option<Status>) -> anyhow::Result<Vec<OperationRecord>> {
        Ok(self
            .store()
            .await?
            .list_operations(&OperationFilter {
                status,
                limit: 200,
                ..Default::default()
            })
            .await?)
    }

    async fn operation(&self, id: OperationId) -> anyhow::Result<OperationDetail> {
        let store = self.store().await?;
        let op = store
            .load_operation(id)
            .await?
            .ok_or_else(|| anyhow!("no operation {id}"))?;
        let catalog = Arc::new(rein_model::Catalog::builtin()?);
        Ok(OperationDetail::load(&**store, catalog, op).await?)
    }

    async fn call_contexts(&self, id: OperationId, step: u32) -> anyhow::Result<Vec<CallContext>> {
        let store = self.store().await?;
        store
            .operation(id)
            .await?
            .ok_or_else(|| anyhow!("no operation {id}"))?;
        Ok(rein_operation::context_report::call_contexts(&**store, id, Some(step)).await?)
    }

    async fn events(
        &self,
        id: OperationId,
        after: Option<u64>,
        follow: bool,
        each: &mut (dyn FnMut(&AgentEvent) -> anyhow::Result<()> + Send),
    ) -> anyhow::Result<()> {
        let store = self.store().await?;
        let mut cursor = after;
        loop {
            let events = store.events(id, cursor).await?;
            for e in &events {
                each(e)?;
                cursor = Some(e.seq);
            }
            if !follow {
                return Ok(());
            }
            let status = store
                .operation_status(id)
                .await?
                .ok_or_else(|| anyhow!("no operation {id}"))?;
            if status.is_terminal() && events.is_empty() {
                return Ok(());
            }
            // Another process commits: nothing here is told, so the log is read again.
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    }

    async fn run(&self, turn: Start<'_>) -> anyhow::Result<Ran> {
        let spec = self.spec(turn.who, turn.over).await?;
        let attachments = turn
            .attachments
            .iter()
            .map(|p| rein_operation::attachment::from_path(p))
            .collect::<Result<Vec<_>, _>>()?;
        let opts = StartOptions {
            spec,
            attachments,
            topic_id: turn.topic.map(str::to_owned),
            turn: turn.turn,
            ..Default::default()
        };
        let driver = self.driver().await?;
        let id = driver.start(turn.prompt, &opts).await?;
        let cancel = driver.cancel_token();
        let interrupt = turn.interrupt.then(|| {
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            })
        });
        let end = crate::queue::run_in_turn(driver, id).await;
        if let Some(i) = interrupt {
            i.abort();
        }
        let topic = match turn.topic {
            Some(t) => t.to_owned(),
            None => self
                .store()
                .await?
                .operation(id)
                .await?
                .map(|r| r.topic_id)
                .ok_or_else(|| anyhow!("operation {id} has no topic"))?,
        };
        Ok(Ran {
            id,
            topic,
            end: end?,
        })
    }

    async fn skill_names(&self) -> anyhow::Result<Vec<String>> {
        Ok(self
            .host()
            .await?
            .skills
            .skills()
            .iter()
            .map(|s| s.name.clone())
            .collect())
    }

    async fn model_of(&self, who: RunAs<'_>, over: &AgentProfile) -> anyhow::Result<String> {
        let spec = self.spec(who, over).await?;
        Ok(spec.model.map(|m| m.key()).unwrap_or_default())
    }

    async fn resume(&self, id: OperationId) -> anyhow::Result<RunEnd> {
        Ok(self.driver().await?.resume(id).await?)
    }

    async fn cancel(&self, id: OperationId) -> anyhow::Result<RunEnd> {
        Ok(self.driver().await?.cancel(id).await?)
    }

    async fn export_operation(
        &self,
        id: OperationId,
    ) -> anyhow::Result<rein_store::OperationArchive> {
        Ok(self.driver().await?.export_operation(id).await?)
    }

    async fn import_operation(
        &self,
        archive: &rein_store::OperationArchive,
    ) -> anyhow::Result<(OperationId, String)> {
        Ok(self.driver().await?.import_operation(archive, None).await?)
    }

    async fn replay(
        &self,
        id: OperationId,
        request: &rein_server::routes::replay::ReplayStep,
    ) -> anyhow::Result<rein_operation::StepReplay> {
        let models = request
            .models
            .iter()
            .map(|m| rein_operation::profile::model_ref(m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self
            .driver()
            .await?
            .replay(&rein_operation::ReplayOptions {
                from: id,
                step: request.step,
                models,
                runs: request.runs.unwrap_or(1),
            })
            .await?)
    }

    async fn replay_chain(
        &self,
        id: OperationId,
        request: &rein_server::routes::replay::ReplayChain,
    ) -> anyhow::Result<rein_operation::ChainReplay> {
        let model = rein_operation::profile::model_ref(&request.model)?;
        Ok(self.driver().await?.replay_chain(id, &model).await?)
    }

    async fn fork(
        &self,
        id: OperationId,
        request: &rein_server::routes::fork::ForkOperation,
    ) -> anyhow::Result<(OperationId, RunEnd)> {
        let driver = self.driver().await?;
        let fork = driver
            .fork(&rein_operation::ForkOptions {
                from: id,
                at: request.step,
                changes: rein_operation::ForkChanges {
                    model: request
                        .model
                        .as_deref()
                        .map(rein_operation::profile::model_ref)
                        .transpose()?,
                    system_role: request.system_role.clone(),
                    tools: request.tools.clone(),
                    approval: request.approval,
                },
                trigger: rein_store::Trigger::Cli,
                admission: None,
                max_cost: None,
                max_tokens: None,
            })
            .await?;
        eprintln!(
            "forked {id} after step {} as {} (conversation {})",
            request.step, fork.id, fork.topic_id
        );
        Ok((fork.id, driver.run(fork.id).await?))
    }

    async fn decide(
        &self,
        id: OperationId,
        calls: Option<Vec<String>>,
        decision: Decision,
    ) -> anyhow::Result<RunEnd> {
        Ok(self
            .driver()
            .await?
            .decide(id, calls.as_deref(), decision, BY)
            .await?)
    }

    async fn approve_always(
        &self,
        id: OperationId,
        call: &str,
        scope: GrantScope,
    ) -> anyhow::Result<Granted> {
        match self
            .driver()
            .await?
            .approve_always(id, call, scope, BY)
            .await
        {
            Ok((end, grant)) => Ok(Granted::Made {
                end,
                grant: Box::new(grant),
            }),
            Err(DriverError::Grant(e)) => Ok(Granted::Refused(e.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    async fn grants(
        &self,
        scope: Option<GrantScope>,
        revoked: bool,
    ) -> anyhow::Result<Vec<GrantRecord>> {
        // The local user's grants have no owner.
        Ok(self
            .store()
            .await?
            .list_grants(
                None,
                &GrantFilter {
                    scope,
                    target: None,
                    include_revoked: revoked,
                },
            )
            .await?)
    }

    async fn revoke_grant(&self, id: &str) -> anyhow::Result<GrantRecord> {
        Ok(self.driver().await?.revoke_grant(None, id, BY).await?)
    }

    async fn agents(&self) -> anyhow::Result<Vec<Agent>> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        store
            .list_agents(&user.id)
            .await?
            .into_iter()
            .map(shown)
            .collect()
    }

    async fn agent(&self, name: &str) -> anyhow::Result<Agent> {
        shown(self.record(name).await?)
    }

    async fn create_agent(&self, name: &str, config: AgentProfile) -> anyhow::Result<Agent> {
        rein_operation::profile::check_name(name)?;
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        if store.get_agent(&user.id, name).await?.is_some() {
            bail!("agent `{name}` already exists (change it with `rein agent edit`)");
        }
        // The CLI's user reaches their own machine and network.
        let config = rein_operation::a2a::card::registered(name, config.checked()?, None, true)
            .await?
            .checked()?;
        let now = Utc::now();
        let mut record = AgentRecord {
            owner: user.id,
            name: name.to_owned(),
            config: serde_json::to_value(&config)?,
            created_at: now,
            updated_at: now,
            version: 0,
        };
        record.version = store.put_agent(&record).await?;
        shown(record)
    }

    async fn export_agent(&self, name: &str) -> anyhow::Result<rein_operation::AgentArchive> {
        let a = self.agent(name).await?;
        // This machine's memories and knowledge bases belong to no user id.
        Ok(self
            .driver()
            .await?
            .export_agent(None, &a.name, a.version, a.config)
            .await?)
    }

    async fn import_agent(&self, archive: &rein_operation::AgentArchive) -> anyhow::Result<Agent> {
        let driver = self.driver().await?;
        driver.check_agent_import(archive, None).await?;
        let agent = self
            .create_agent(&archive.name, archive.config.clone())
            .await?;
        driver
            .import_agent_memories(archive, None, &agent.name)
            .await?;
        Ok(agent)
    }

    async fn update_agent(&self, name: &str, config: AgentProfile) -> anyhow::Result<Agent> {
        let mut record = self.record(name).await?;
        let before = serde_json::from_value::<AgentProfile>(record.config.clone()).ok();
        let config =
            rein_operation::a2a::card::registered(name, config.checked()?, before.as_ref(), true)
                .await?
                .checked()?;
        record.config = serde_json::to_value(config)?;
        record.updated_at = Utc::now();
        record.version = self.store().await?.put_agent(&record).await?;
        shown(record)
    }

    async fn agent_versions(
        &self,
        name: &str,
    ) -> anyhow::Result<Vec<rein_server::routes::agents::AgentVersionOut>> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        Ok(rein_server::routes::agents::versions_of(store, &user.id, name).await?)
    }

    async fn rollback_agent(&self, name: &str, version: u64) -> anyhow::Result<Agent> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        shown(rein_server::routes::agents::roll_back(store, &user.id, name, version).await?)
    }

    async fn delete_agent(&self, name: &str) -> anyhow::Result<()> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        if !store.delete_agent(&user.id, name).await? {
            bail!("no agent `{name}`");
        }
        Ok(())
    }

    async fn devices(&self) -> anyhow::Result<Vec<DeviceOut>> {
        bail!(NOT_HERE)
    }

    async fn revoke_device(&self, _name: &str) -> anyhow::Result<()> {
        bail!(NOT_HERE)
    }

    async fn print_models(&self, json: bool) -> anyhow::Result<()> {
        super::models::models(&self.given.config, json)
    }

    async fn provider_models(
        &self,
        provider: &str,
    ) -> anyhow::Result<rein_server::routes::models::ProviderModels> {
        super::models::provider_models(&self.given.config, provider).await
    }
}

/// Devices connect to a server; this machine's database has none.
const NOT_HERE: &str = "this command talks to a rein server: give --server URL (or REIN_SERVER)";
