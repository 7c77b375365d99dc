//! What one process brings to the operations it runs: the store, where models come from, the
//! catalog, tools beyond the built-ins (MCP servers), an embedder, and the defaults of new
//! operations. The CLI and the server both make their drivers here, and make new operations'
//! specs here from an agent profile, so the two cannot drift apart.

use crate::driver::Driver;
use crate::models::ModelSource;
use crate::profile::{AgentProfile, ProfileError, SpecOrigin};
use rein_core::spec::AgentRef;
use rein_core::spec::{ContextSettings, OperationSpec};
use rein_core::state::ModelRef;
use rein_model::{Catalog, ModelProvider};
use rein_store::{Accounts, Store, StoreError};
use std::sync::Arc;

/// Why a spec could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The named agent does not exist.
    #[error("no agent `{0}`")]
    AgentMissing(String),
    /// The named group does not exist.
    #[error("no group `{0}`")]
    GroupMissing(String),
    /// The settings are invalid.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The store failed (or holds an unreadable agent).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The working directory the user chose is no longer allowed here.
    #[error("your working directory: {0}; choose another with `rein settings workdir`")]
    Workdir(#[from] crate::workdirs::WorkdirRefusal),
}

/// A stored agent: its profile and which version it is.
#[derive(Clone, Debug)]
pub struct StoredAgent {
    /// Its settings.
    pub profile: AgentProfile,
    /// Its name and version, as a spec records them.
    pub agent: AgentRef,
}

/// The agent `name` of user `owner`, if it exists.
pub async fn stored_agent(
    accounts: &dyn Accounts,
    owner: &str,
    name: &str,
) -> Result<Option<StoredAgent>, StoreError> {
    let Some(record) = accounts.get_agent(owner, name).await? else {
        return Ok(None);
    };
    stored_from(record).map(Some)
}

/// A stored agent from its record.
pub(crate) fn stored_from(record: rein_store::AgentRecord) -> Result<StoredAgent, StoreError> {
    let profile = serde_json::from_value(record.config)
        .map_err(|e| StoreError::corrupt("agent config", e))?;
    Ok(StoredAgent {
        profile,
        agent: AgentRef {
            name: record.name,
            version: Some(record.version),
        },
    })
}

/// A process's setup for running operations.
#[derive(Clone)]
pub struct Host {
    /// Where operations are kept.
    pub store: Arc<dyn Store>,
    /// Providers for the models operations name.
    pub models: Arc<dyn ModelSource>,
    /// Windows, prices and tokenizer hints of models.
    pub catalog: Arc<Catalog>,
    /// The model of an operation whose agent and request name none.
    pub default_model: ModelRef,
    /// Prices of models the catalog does not price (or prices otherwise), by `provider/model`:
    /// every operation of this host starts with them (the configuration file's `[prices]`).
    pub prices: std::collections::BTreeMap<String, rein_core::usage::Prices>,
    /// The secrets replaced in every tool result (this process's secret environment variables
    /// and configured keys).
    pub redactor: crate::redact::Redactor,
    /// What new operations' context engine is told (cassettes turn date, paths and memories
    /// off so a recording replays anywhere).
    pub context: ContextSettings,
    /// Tools beyond the built-ins (MCP servers, custom tools).
    pub tools: Vec<Arc<dyn crate::Tool>>,
    /// Settings of the built-in tools (`[web]`: search backend, addresses fetch may reach).
    pub builtins: rein_tools::BuiltinConfig,
    /// The model `image.generate` draws with (none: the tool is not offered).
    pub image_model: Option<ModelRef>,
    /// The model `video.generate` renders with (none: the tool is not offered).
    pub video_model: Option<ModelRef>,
    /// How often `video.generate` polls its render.
    pub video_poll: std::time::Duration,
    /// The model `speech.say` and `POST /v1/audio/speech` speak with.
    pub speech_model: Option<ModelRef>,
    /// The model `speech.transcribe` and `POST /v1/audio/transcriptions` listen with.
    pub transcription_model: Option<ModelRef>,
    /// Embeds memories so they are recalled by meaning (`provider`, model).
    pub embedder: Option<(Arc<dyn ModelProvider>, ModelRef)>,
    /// Where operations find the agents they may delegate to (none: they cannot delegate).
    pub agents: Option<Arc<dyn crate::AgentDirectory>>,
    /// Directory the file and shell tools of new operations work in when the request names
    /// none (`rein serve --workdir`); without one, a server's operations have no file or shell
    /// access.
    pub working_directory: Option<String>,
    /// Skills operations may activate.
    pub skills: Arc<rein_tools::skills::SkillCatalog>,
    /// Who gets the briefs of operations without an owner (the CLI's local user).
    pub brief_owner: Option<String>,
    /// What the shell's commands may touch in this process's operations (an agent's profile
    /// can only narrow it).
    pub sandbox: rein_core::spec::Sandbox,
    /// The model for rein's own small jobs: conversation titles, task run handoffs and
    /// judgements (none: the prompt's start, extracted handoffs, rules).
    pub system_model: Option<ModelRef>,
    /// Where this host runs operations: its own surface and the external agents it may start.
    pub surfaces: crate::surface::Surfaces,
    /// The devices operations may run on (`rein serve`'s gateway).
    pub devices: Option<Arc<dyn crate::devices::DeviceDirectory>>,
    /// Starts external agents on devices (`rein serve`'s gateway).
    pub remote_agents: Option<Arc<dyn crate::external::RemoteAgents>>,
    /// How users' own providers serve their operations (`rein serve`; none: this process's
    /// providers serve every operation).
    pub own_provider_keys: Option<crate::own_models::OwnProviderKeys>,
    /// Where users may choose their operations' working directory (`rein serve
    /// --user-workdir-root`; empty: nowhere, [`Host::working_directory`] serves everyone).
    pub user_workdirs: crate::workdirs::WorkdirRoots,
    /// Users' own MCP servers (`rein serve --user-mcp-origin`; none: users define none).
    pub own_mcp: Option<Arc<crate::own_mcp::OwnMcp>>,
    /// The client that does file and shell calls for the operations it drives (`rein acp`'s
    /// editor; none: rein's own tools do them all).
    pub client_tools: Option<Arc<dyn crate::client_tools::ClientTools>>,
    /// When a step's commit must be on disk (`durability` in `rein.toml`, `REIN_DURABILITY`).
    pub durability: crate::Durability,
    /// Where every driver of this host learns of cancel requests: one poll for all runs.
    pub cancels: Arc<crate::CancelWatch>,
}

impl Host {
    /// A host with models from `models`, defaulting to `default_model`, no tools beyond the
    /// built-ins, no embedder and the default context settings.
    pub fn new(
        store: Arc<dyn Store>,
        models: Arc<dyn ModelSource>,
        catalog: Arc<Catalog>,
        default_model: ModelRef,
    ) -> Self {
        Self {
            models,
            catalog,
            default_model,
            prices: Default::default(),
            context: ContextSettings::default(),
            redactor: crate::redact::Redactor::from_env(),
            tools: Vec::new(),
            builtins: Default::default(),
            image_model: None,
            video_model: None,
            video_poll: crate::videos::DEFAULT_POLL,
            speech_model: None,
            transcription_model: None,
            embedder: None,
            agents: None,
            working_directory: None,
            skills: Arc::default(),
            brief_owner: None,
            system_model: None,
            sandbox: Default::default(),
            surfaces: Default::default(),
            devices: None,
            remote_agents: None,
            own_provider_keys: None,
            user_workdirs: Default::default(),
            own_mcp: None,
            client_tools: None,
            durability: Default::default(),
            cancels: Arc::new(crate::CancelWatch::new(Arc::clone(&store))),
            store,
        }
    }

    /// What a new operation of `owner` starts from: them, and the working directory they chose
    /// (checked again against the allowed roots), else this host's.
    pub async fn origin(
        &self,
        accounts: &dyn Accounts,
        owner: &str,
    ) -> Result<SpecOrigin, SpecError> {
        let chosen = match accounts.working_directory(owner).await? {
            Some(dir) => Some(self.user_workdirs.check(&dir)?),
            None => None,
        };
        Ok(SpecOrigin {
            owner: Some(owner.to_owned()),
            working_directory: chosen,
            ..Default::default()
        })
    }

    /// Where `owner`'s model calls go: their own providers over this host's, when it serves
    /// them ([`Host::own_provider_keys`]).
    pub async fn models_of(
        &self,
        owner: Option<&str>,
    ) -> Result<Arc<dyn ModelSource>, rein_store::StoreError> {
        crate::own_models::models_for(
            self.own_provider_keys.as_ref(),
            &*self.store,
            &self.models,
            owner,
        )
        .await
    }

    /// A driver with everything this process brings (add a sink or commit hook to it).
    pub fn driver(&self) -> Driver {
        let mut d = Driver::from_source(
            Arc::clone(&self.store),
            Arc::clone(&self.models),
            self.default_model.clone(),
            Arc::clone(&self.catalog),
        );
        d = d.with_builtins(&self.builtins);
        d = d.with_cancel_watch(Arc::clone(&self.cancels));
        if let Some(model) = &self.image_model {
            d = d.with_image_model(model.clone());
        }
        if let Some(model) = &self.video_model {
            d = d.with_video_model(model.clone(), self.video_poll);
        }
        d = d.with_speech_models(self.speech_model.clone(), self.transcription_model.clone());
        for t in &self.tools {
            d = d.with_tool(Arc::clone(t));
        }
        if let Some((provider, model)) = &self.embedder {
            d = d.with_embedder(Arc::clone(provider), model.clone());
        }
        if let Some(agents) = &self.agents {
            d = d.with_agents(Arc::clone(agents));
        }
        if let Some(owner) = &self.brief_owner {
            d = d.with_brief_owner(owner.clone());
        }
        if let Some(model) = &self.system_model {
            d = d.with_system_model(model.clone());
        }
        if let Some(devices) = &self.devices {
            d = d.with_devices(Arc::clone(devices));
        }
        if let Some(remote) = &self.remote_agents {
            d = d.with_remote_agents(Arc::clone(remote));
        }
        if let Some(keys) = &self.own_provider_keys {
            d = d.with_own_provider_keys(keys.clone());
        }
        if let Some(own) = &self.own_mcp {
            d = d.with_own_mcp(Arc::clone(own));
        }
        if let Some(clients) = &self.client_tools {
            d = d.with_client_tools(Arc::clone(clients));
        }
        d.with_redactor(self.redactor.clone())
            .with_durability(self.durability)
            .with_skills(Arc::clone(&self.skills))
            .with_external(self.surfaces.external.clone())
    }

    /// The spec of a new operation run with `profile` (an agent's settings merged with the
    /// request's) for `origin`, on this host's defaults.
    pub fn spec(
        &self,
        profile: &AgentProfile,
        origin: SpecOrigin,
    ) -> Result<OperationSpec, ProfileError> {
        let base = OperationSpec {
            model: Some(self.default_model.clone()),
            prices: self.prices.clone(),
            context: self.context.clone(),
            working_directory: self.working_directory.clone(),
            sandbox: self.sandbox,
            ..Default::default()
        };
        let mut spec = profile.spec(&base, origin)?;
        spec.surface = crate::surface::route(
            crate::surface::RouteRequest {
                asked: profile.surface.as_ref(),
                parent: None,
            },
            &self.surfaces,
        )?;
        if matches!(spec.surface, rein_core::spec::Surface::External(_))
            && self.surfaces.own == rein_core::spec::Surface::Server
            && spec.working_directory.is_none()
        {
            return Err(crate::surface::SurfaceError::NeedsWorkdir.into());
        }
        Ok(spec)
    }

    /// The spec of a new operation run as the stored agent `agent` of user `agents_of` (or as
    /// no agent), with `over` (the request's settings) winning over the agent's.
    pub async fn agent_spec(
        &self,
        accounts: &dyn Accounts,
        agents_of: &str,
        agent: Option<&str>,
        over: &AgentProfile,
        mut origin: SpecOrigin,
    ) -> Result<OperationSpec, SpecError> {
        let profile = match agent {
            Some(name) => {
                let stored = stored_agent(accounts, agents_of, name)
                    .await?
                    .ok_or_else(|| SpecError::AgentMissing(name.to_owned()))?;
                origin.agent = Some(stored.agent);
                stored.profile.merged(over)
            }
            None => over.clone(),
        };
        Ok(self.spec(&profile, origin)?)
    }

    /// The spec of a run of the stored group `name` of user `groups_of`: its supervisor's
    /// settings with `over` (the request's) winning, its members checked to exist (for the
    /// run's owner) and the only agents it may hand turns to.
    pub async fn group_spec(
        &self,
        accounts: &dyn Accounts,
        groups_of: &str,
        name: &str,
        over: &AgentProfile,
        origin: SpecOrigin,
    ) -> Result<OperationSpec, SpecError> {
        let record = accounts
            .get_group(groups_of, name)
            .await?
            .ok_or_else(|| SpecError::GroupMissing(name.to_owned()))?;
        let group: crate::GroupProfile = serde_json::from_value(record.config)
            .map_err(|e| StoreError::corrupt("group config", e))?;
        for member in &group.members {
            let found = match &self.agents {
                Some(d) => d.agent(origin.owner.as_deref(), member).await?.is_some(),
                None => stored_agent(accounts, groups_of, member).await?.is_some(),
            };
            if !found {
                return Err(SpecError::AgentMissing(member.clone()));
            }
        }
        let mut spec = self.spec(&group.supervisor().merged(over), origin)?;
        spec.group = Some(group.spec(name));
        spec.sub_agents.agents = Some(group.members.clone());
        spec.agent = None;
        Ok(spec)
    }
}
