//! The CLI's [`Host`]: models from the registry over the network (or a cassette), the catalog,
//! the configured MCP servers (connected once), the test tools, an embedder, and the
//! defaults of new operations. Every command that runs operations (`run`, `chat`, `approve`,
//! `reject`, `op resume|cancel`, `task run`, `serve`, `worker`) makes its drivers from it.

use crate::invocation::Invocation;
use anyhow::anyhow;
use rein_core::state::ModelRef;
use rein_model::cassette::{RecordingTransport, ReplayTransport};
use rein_model::transport::Timeouts;
use rein_model::{Catalog, Registry, ReqwestTransport, Transport};
use rein_operation::{ContextSettings, Driver, Host, RegistryModels};
use rein_store::SqlStore;
use std::sync::Arc;

/// The models this process may call (the configured providers, through the cassette when
/// `--replay`/`--record` name one) and the catalog of their prices.
pub fn models(given: &Invocation) -> anyhow::Result<(Arc<RegistryModels>, Arc<Catalog>)> {
    let transport: Arc<dyn Transport> = match &given.cli_replay {
        Some(path) => Arc::new(ReplayTransport::from_file(path)?),
        None => Arc::new(ReqwestTransport::new(Timeouts::default())?),
    };
    let transport: Arc<dyn Transport> = match &given.cli_record {
        Some(path) => Arc::new(RecordingTransport::new(transport, path)),
        None => transport,
    };
    // A replay's answers cost nothing: what the cassette recorded is not billed again.
    let catalog = match &given.cli_replay {
        Some(_) => Arc::new(Catalog::builtin()?.free()),
        None => Arc::new(Catalog::builtin()?),
    };
    let models = Arc::new(RegistryModels::new(
        given.config.registry()?,
        transport,
        Arc::clone(&catalog),
        // A cassette answers without keys.
        given.cli_replay.is_none(),
    ));
    Ok((models, catalog))
}

/// The working directory a cassette was recorded in: the folder named like it, next to it
/// (`demo/` for `demo.jsonl`), when there is one. A replay reads the same files there from any
/// current directory, so what the tools read matches what was recorded.
pub fn replay_workdir(cassette: &std::path::Path) -> Option<String> {
    let dir = std::fs::canonicalize(cassette.with_extension("")).ok()?;
    dir.is_dir().then(|| dir.to_string_lossy().into_owned())
}

/// This process's host: `model` is the default model (a flag's, else the configuration's).
pub async fn host(
    store: Arc<SqlStore>,
    given: &Invocation,
    model: Option<&str>,
) -> anyhow::Result<Host> {
    let registry = given.config.registry()?;
    let cassette = given.cli_replay.is_some() || given.cli_record.is_some();
    let (models, catalog) = models(given)?;
    let (default, _) = given.config.model(model);
    let default_model = rein_operation::profile::model_ref(&default)?;
    let embedder = match std::env::var(rein_operation::env::EMBED_MODEL)
        .ok()
        .filter(|s| !s.trim().is_empty() && !cassette)
    {
        Some(spec) => {
            let (provider_id, model_id) =
                Registry::split(&spec).map_err(|e| anyhow!("REIN_EMBED_MODEL: {e}"))?;
            let provider = rein_model::Provider::new(
                registry.provider(provider_id)?,
                Arc::new(ReqwestTransport::new(Timeouts::default())?),
            );
            let model = ModelRef {
                provider: provider_id.into(),
                model: model_id.into(),
            };
            Some((
                Arc::new(provider) as Arc<dyn rein_model::ModelProvider>,
                model,
            ))
        }
        None => None,
    };
    // The crash tests' ledger tool exists only in builds with the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    let mut tools = crate::test_tools::tools();
    #[cfg(not(feature = "test-hooks"))]
    let mut tools: Vec<Arc<dyn rein_tools::Tool>> = Vec::new();
    for (name, entry) in given.config.mcp(&given.mcp)? {
        tools.push(rein_tools::mcp::McpServer::connect(entry.server(&name)?).await?);
    }
    // Sub-agents: the local user's stored agents (a server's operations: their owner's), and
    // the configuration file's under the names the store does not have.
    let local = crate::agent_profile::local_user(&store).await?;
    let agents = Arc::new(rein_operation::StoredAgents {
        accounts: Arc::clone(&store) as Arc<dyn rein_store::Accounts>,
        local_user: Some(local.id.clone()),
        fixed: given
            .config
            .file
            .agents
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    });
    // A cassette replays exactly the requests it recorded: no titling call.
    let system_model = given
        .config
        .system_model()
        .filter(|_| !cassette)
        .map(|m| {
            rein_operation::profile::model_ref(&m).map_err(|e| anyhow!("title model {m:?}: {e}"))
        })
        .transpose()?;
    Ok(Host {
        surfaces: rein_operation::surface::Surfaces {
            own: rein_core::spec::Surface::Local,
            external: given.config.external_agents(true)?,
            devices: false,
        },
        devices: None,
        remote_agents: None,
        // The local CLI's operations are its user's: the environment's keys are theirs, and
        // they work where the command runs.
        own_provider_keys: None,
        user_workdirs: Default::default(),
        own_mcp: None,
        client_tools: None,
        durability: given.config.durability()?,
        sandbox: given.sandbox,
        system_model,
        working_directory: given.cli_replay.as_deref().and_then(replay_workdir),
        agents: Some(agents),
        brief_owner: Some(local.id),
        cancels: Arc::new(rein_operation::CancelWatch::new(store.clone())),
        store,
        models,
        catalog,
        default_model,
        prices: if given.cli_replay.is_some() {
            Default::default()
        } else {
            given.config.file.prices.clone()
        },
        // A cassette must replay byte for byte on any day, in any checkout, with any memories.
        context: if cassette {
            ContextSettings {
                date: false,
                workspace: false,
                memories: false,
                knowledge: false,
                // The cache key names the operation, new in every run.
                prompt_cache: false,
                ..ContextSettings::default()
            }
        } else {
            ContextSettings::default()
        },
        tools,
        redactor: given.config.redactor(),
        // A cassette's requests list the tools as recorded: no search backend there.
        builtins: if cassette {
            Default::default()
        } else {
            given.config.builtins()?
        },
        image_model: configured_model("image_model", &given.config.file.image_model, cassette)?,
        video_model: configured_model("video_model", &given.config.file.video_model, cassette)?,
        video_poll: given.config.file.video_poll_secs.map_or(
            rein_operation::videos::DEFAULT_POLL,
            std::time::Duration::from_secs_f64,
        ),
        speech_model: configured_model("speech_model", &given.config.file.speech_model, cassette)?,
        transcription_model: configured_model(
            "transcription_model",
            &given.config.file.transcription_model,
            cassette,
        )?,
        embedder,
        // Nor with any skills installed: a cassette's requests list none.
        skills: if cassette {
            Arc::default()
        } else {
            Arc::new(crate::skills::catalog(&given.config)?)
        },
    })
}

/// The model a configuration entry `name` names (none in a cassette's replay, whose requests
/// list the tools they were recorded with).
fn configured_model(
    name: &str,
    given: &Option<String>,
    cassette: bool,
) -> anyhow::Result<Option<rein_core::state::ModelRef>> {
    match given {
        Some(m) if !cassette => Ok(Some(
            rein_operation::profile::model_ref(m).map_err(|e| anyhow!("{name} {m:?}: {e}"))?,
        )),
        _ => Ok(None),
    }
}

/// Make `host` a server's (or worker's): operations run on its own surface, on the devices its
/// store knows, or on the external agents its configuration names (only those: they run with
/// the server's rights, outside rein's approvals).
pub fn serve_from(
    host: &mut Host,
    store: &Arc<SqlStore>,
    given: &Invocation,
) -> anyhow::Result<()> {
    host.surfaces = server_surfaces(given)?;
    host.devices = Some(Arc::new(rein_operation::devices::StoredDevices(
        Arc::clone(store) as Arc<dyn rein_store::Devices>,
    )));
    Ok(())
}

fn server_surfaces(given: &Invocation) -> anyhow::Result<rein_operation::surface::Surfaces> {
    Ok(rein_operation::surface::Surfaces {
        own: rein_core::spec::Surface::Server,
        external: given.config.external_agents(false)?,
        devices: true,
    })
}

/// A driver of `host` that prints the operation's events as they happen.
pub fn printing_driver(host: &Host, json: bool) -> Driver {
    host.driver()
        .with_sink(Arc::new(crate::output::Printer::new(json)))
}
