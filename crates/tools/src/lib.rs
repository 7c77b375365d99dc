//! rein-tools: what an agent can do.
//!
//! The [`Tool`] trait (manifest with JSON-schema parameters and intervention policy, an effect
//! class per API, the call itself), a [`ToolRegistry`] that validates every call's arguments
//! against its schema before the tool sees them, and the built-in tools: `calculator`, `files`
//! (confined to the operation's working directory), `shell` (timeout, capped output, approval
//! required, each command confined by the OS [`sandbox`]: Landlock and seccomp), `web`
//! (`fetch`, a page's [`readable`] Markdown, refusing private and loopback targets; `search`
//! over the configured [`search`] backend), `python` (the [`interpreter`]: code in a
//! per-conversation workspace, confined tighter than the shell, its files returned to be kept
//! as artifacts), `todo` (the agent's plan, kept in the
//! operation's state), `ask_user` (a question for the person; the brain parks it until
//! answered, so the tool runs only in headless runs, where it may also raise it as a decision
//! brief) and `tools`
//! (`activate_tools`, for progressive disclosure); [`brief`] (`brief.create`, the agent's
//! reports to the person's inbox, kept through a [`brief::BriefSink`]); [`skills`] (discovery
//! of Agent Skills folders and `skills.activate`); [`mcp`], which turns an MCP server's
//! tools into one more tool; [`delegate`], the calls of `files` and `shell` a client (an
//! editor over ACP) can do in its own world, checked and worded as the tools do them. A call
//! that waits for an outside job records it through its [`CallJob`], so an interrupted wait
//! resumes.
//! (Reading files for knowledge bases is `rein-knowledge`'s.)

/// Parse a tool call's arguments into `$t`, or make the enclosing `call` return a failed
/// result naming what did not fit. The registry validated them against the same schema, so
/// this fails only for a tool called directly.
macro_rules! tool_args {
    ($api:expr, $args:expr, $t:ty) => {
        match serde_json::from_value::<$t>($args) {
            Ok(a) => a,
            Err(e) => {
                return Ok(ToolOutput::failed(format!(
                    "Invalid arguments for `{}`: {e}",
                    $api
                )));
            }
        }
    };
}

pub mod activate;
pub mod agents;
pub mod ask_user;
pub mod brief;
pub mod calculator;
pub mod delegate;
pub mod documents;
pub mod files;
mod fsguard;
pub mod interpreter;
pub mod mcp;
mod path;
mod process;
pub mod readable;
#[cfg(target_os = "linux")]
mod reaper;
pub mod sandbox;
pub mod search;
pub mod secrets;
pub mod shell;
pub mod skills;
pub mod todo;
pub mod web;

use futures::future::BoxFuture;
use rein_core::OperationId;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolManifest};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// What a call knows about where it runs.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The operation.
    pub operation_id: OperationId,
    /// Directory file and shell tools are confined to.
    pub working_directory: Option<PathBuf>,
    /// Stable across re-runs of one call (for idempotent effects).
    pub idempotency_key: String,
    /// Identifiers of the tools installed for the operation.
    pub available_tools: Vec<String>,
    /// Owner of memories and notes: `user:<id>/agent:<id>`.
    pub scope: String,
    /// Folders of the operation's active skills, by name: `files` reads `skill://NAME/…`
    /// there, read-only.
    pub skill_dirs: Vec<(String, PathBuf)>,
    /// Nobody watches the run and its questions are to be raised as urgent decision briefs
    /// (the question tool's behaviour, from the operation's spec).
    pub question_briefs: bool,
    /// What the shell's commands may touch ([`sandbox`]).
    pub sandbox: rein_core::spec::Sandbox,
    /// The knowledge bases the operation may search, by name.
    pub knowledge: Vec<String>,
    /// The hosts `web.fetch` may reach (`example.com`, `*.example.com`), the operation's
    /// egress allow-list; `None`: any public host.
    pub egress: Option<Vec<String>>,
    /// The user the operation belongs to (`None`: the local CLI's).
    pub owner: Option<String>,
    /// The conversation the operation is part of, if any (the interpreter keeps one workspace
    /// per conversation).
    pub topic: Option<String>,
    /// How many calls of the same tool API the operation's conversation holds before this one
    /// (a limit per operation counts them).
    pub earlier_calls: u32,
    /// Whose artifacts and uploads the operation's calls keep and read: its user, or the CLI's
    /// local user for an operation without one.
    pub files_owner: String,
    /// The outside job this call waits for (see [`CallJob`]).
    pub job: CallJob,
}

/// An outside job a call starts and then waits for (a video render): recorded with the call's
/// execution the moment it exists, so a call interrupted while it waits (the process killed,
/// the server restarted) resumes waiting for the same job instead of starting, and paying
/// for, another. A call that records nothing is settled as interrupted, as any at-most-once
/// call found running is.
#[derive(Clone, Default)]
pub struct CallJob {
    /// The job an earlier run of this call started (`None`: this run is the first, or the
    /// earlier one recorded none).
    pub started: Option<String>,
    /// Records the job this run starts; `None` where nothing is recorded (a test's context,
    /// a call that is not at-most-once).
    pub recorder: Option<Arc<dyn JobRecorder>>,
}

impl std::fmt::Debug for CallJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallJob")
            .field("started", &self.started)
            .field("recorded", &self.recorder.is_some())
            .finish()
    }
}

impl CallJob {
    /// Record `job` as this call's, durably, before waiting for it. Without a recorder the
    /// job is not kept: an interrupted wait cannot resume.
    pub async fn record(&self, job: &str) -> Result<(), PortError> {
        match &self.recorder {
            Some(r) => r.record(job).await,
            None => Ok(()),
        }
    }
}

/// Keeps the job of one call with its execution record ([`CallJob::record`]).
pub trait JobRecorder: Send + Sync {
    /// Record `job`; returns once it is durable.
    fn record<'a>(&'a self, job: &'a str) -> BoxFuture<'a, Result<(), PortError>>;
}

/// A tool implementation.
pub trait Tool: Send + Sync {
    /// Its manifest.
    fn manifest(&self) -> ToolManifest;
    /// How repeating `api` behaves (default: at most once).
    fn effect(&self, _api: &str) -> Effect {
        Effect::AtMostOnce
    }
    /// Run `api` with arguments already validated against its schema.
    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>>;
}

/// A registry failure.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// A manifest's parameter schema does not compile.
    #[error("tool {tool}: the parameter schema of `{api}` is invalid: {message}")]
    InvalidSchema {
        /// Tool.
        tool: String,
        /// API.
        api: String,
        /// Why.
        message: String,
    },
}

/// Configuration of the built-in tools.
#[derive(Clone, Debug, Default)]
pub struct BuiltinConfig {
    /// `web` settings.
    pub web: web::WebConfig,
    /// `shell` settings.
    pub shell: shell::ShellConfig,
    /// `python` settings.
    pub interpreter: interpreter::InterpreterConfig,
}

/// Tools by identifier, with compiled argument validators.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    validators: HashMap<(String, String), jsonschema::Validator>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools.
    pub fn with_builtins(config: &BuiltinConfig) -> Result<Self, ToolError> {
        let mut r = Self::new();
        r.register(Arc::new(calculator::Calculator))?;
        r.register(Arc::new(files::Files))?;
        r.register(Arc::new(shell::Shell::new(config.shell.clone())))?;
        r.register(Arc::new(web::Web::new(config.web.clone())))?;
        // Offered only where this host keeps workspaces (a cassette's replay keeps none, so its
        // requests list the tools they were recorded with).
        if config.interpreter.workspaces.is_some() {
            for language in [interpreter::Language::Python, interpreter::Language::Node] {
                r.register(Arc::new(interpreter::Interpreter::new(
                    language,
                    config.interpreter.clone(),
                )))?;
            }
        }
        r.register(Arc::new(todo::Todo))?;
        r.register(Arc::new(ask_user::AskUser::default()))?;
        r.register(Arc::new(activate::ActivateTools))?;
        Ok(r)
    }

    /// Add (or replace) a tool; its parameter schemas are compiled now.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let m = tool.manifest();
        for api in &m.apis {
            let v = jsonschema::validator_for(&api.parameters).map_err(|e| {
                ToolError::InvalidSchema {
                    tool: m.identifier.clone(),
                    api: api.name.clone(),
                    message: e.to_string(),
                }
            })?;
            self.validators
                .insert((m.identifier.clone(), api.name.clone()), v);
        }
        self.tools.insert(m.identifier, tool);
        Ok(())
    }

    /// Every manifest.
    pub fn manifests(&self) -> Vec<ToolManifest> {
        self.tools.values().map(|t| t.manifest()).collect()
    }

    /// A tool by identifier.
    pub fn get(&self, identifier: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(identifier)
    }

    /// Check `args` against the API's schema; the error lists every problem with its location,
    /// in words the model can act on.
    pub fn validate(
        &self,
        identifier: &str,
        api: &str,
        args: &serde_json::Value,
    ) -> Result<(), ArgumentsRefused> {
        let Some(v) = self
            .validators
            .get(&(identifier.to_owned(), api.to_owned()))
        else {
            return Err(ArgumentsRefused::UnknownApi {
                identifier: identifier.to_owned(),
                api: api.to_owned(),
            });
        };
        let problems: Vec<String> = v
            .iter_errors(args)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ArgumentsRefused::Invalid(problems))
        }
    }
}

/// Why a call's arguments are refused before its tool runs (the model reads it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsRefused {
    /// The tool has no such API.
    #[error("`{identifier}` has no API named `{api}`")]
    UnknownApi {
        /// The tool.
        identifier: String,
        /// The API asked for.
        api: String,
    },
    /// The arguments break the API's schema: every problem, with where it is.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// A tool API's parameters as the JSON schema of `T` (derived with schemars): subschemas
/// inlined (providers such as Gemini take no `$ref`), root `$schema` and `title` left out.
pub fn parameters_of<T: schemars::JsonSchema>() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    schema.remove("$schema");
    schema.remove("title");
    schema.to_value()
}
