//! Settings: the configuration file (`$REIN_CONFIG`, else `~/.config/rein/config.toml`), the
//! environment and command-line flags, resolved in one place for the CLI and anything that
//! embeds the server. Precedence, for every setting that has several sources: a flag, then
//! its environment variable ([`crate::env`]), then the file, then the built-in default. A
//! missing file is an empty configuration; a malformed one is a [`SettingsError`] naming the
//! file and the problem, before anything runs.

use crate::AgentProfile;
use rein_model::Registry;
use rein_model::registry::ProviderOverride;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The built-in default model.
pub const DEFAULT_MODEL: &str = "openai/gpt-4o-mini";

/// Why the settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The configuration file exists but cannot be read.
    #[error("cannot read the configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration file says something rein cannot use.
    #[error("configuration {}: {problem}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What and where.
        problem: String,
    },
    /// An `[external.KIND]` entry names no external agent rein knows.
    #[error("configuration: [external.{name}]: {problem}")]
    External {
        /// The entry's name.
        name: String,
        /// Why.
        problem: String,
    },
    /// An MCP server given on the command line (`--mcp NAME=COMMAND`) or in the file cannot be
    /// one.
    #[error("--mcp `{given}`: {problem}")]
    Mcp {
        /// What was given.
        given: String,
        /// Why it is not a server.
        problem: &'static str,
    },
    /// An environment variable holds a value the setting cannot take.
    #[error("{name}: {problem}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// The providers (presets, the file's overrides, the environment) do not resolve.
    #[error(transparent)]
    Providers(#[from] rein_model::ModelError),
    /// `[web.search]` cannot be used (no address, no key, a bad URL).
    #[error("configuration: [web.search]: {0}")]
    WebSearch(#[from] rein_tools::search::SearchConfigError),
    /// Neither `REIN_HOME` nor `HOME` says where rein's data lives.
    #[error("neither REIN_HOME nor HOME is set")]
    NoHome,
    /// The data directory cannot be made.
    #[error("cannot create the data directory {}: {source}", path.display())]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the configuration file may hold.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileConfig {
    /// `provider/model` used when neither a flag nor `REIN_MODEL` names one.
    pub default_model: Option<String>,
    /// `provider/model` for rein's own small jobs (`REIN_SYSTEM_MODEL` wins): it titles each
    /// conversation after its first exchange, writes task runs' handoffs and judges whether a
    /// run needs a person. Without one: the start of the first message, extracted handoffs,
    /// rules.
    pub system_model: Option<String>,
    /// `provider/model` that `image.generate` draws with (`openai/gpt-image-1`,
    /// `gemini/gemini-2.5-flash-image`); without one the tool is not offered.
    pub image_model: Option<String>,
    /// `provider/model` that `video.generate` renders with (`gemini/veo-3.1-generate-preview`);
    /// without one the tool is not offered.
    pub video_model: Option<String>,
    /// Seconds between two polls of a video render (default 10).
    pub video_poll_secs: Option<f64>,
    /// `provider/model` that speaks (`speech.say`, `POST /v1/audio/speech`), through an
    /// OpenAI-compatible audio endpoint (`openai/gpt-4o-mini-tts`).
    pub speech_model: Option<String>,
    /// `provider/model` that transcribes (`speech.transcribe`, `POST /v1/audio/transcriptions`;
    /// `openai/gpt-4o-transcribe`).
    pub transcription_model: Option<String>,
    /// Per provider: `base_url`, `api_key`, `protocol`, `headers`, `quirks`.
    pub providers: BTreeMap<String, ProviderOverride>,
    /// MCP servers by name: a command line (stdio) or an http(s) URL, or a table with `url`
    /// and `headers` (sent with every request: `Authorization`, ...).
    pub mcp: BTreeMap<String, McpEntry>,
    /// Agents by name (an agent stored in the database with the same name wins).
    pub agents: BTreeMap<String, AgentProfile>,
    /// More directories of skills (searched after the project's `.rein/skills`, before
    /// `$REIN_HOME/skills`).
    pub skill_dirs: Vec<PathBuf>,
    /// Prices of models, by `provider/model`, in USD per million tokens:
    /// `[prices."openrouter/some-model"]` with `input`, `output` and optionally `cache_read`
    /// and `cache_write`. Every operation starts with them (over the catalog's), so a model the
    /// catalog does not know can run under a cost limit.
    pub prices: BTreeMap<String, rein_core::usage::Prices>,
    /// External agent CLIs by kind (`claude-code`, `codex`, `jsonl`): `command` and `args`.
    /// `rein run` may start Claude Code and Codex from `PATH` without an entry; `rein serve`
    /// starts only those named here (or in `REIN_EXTERNAL_<KIND>`).
    pub external: BTreeMap<String, ExternalEntry>,
    /// The `web` tool: `allow` (addresses `web.fetch` may reach although they are not public)
    /// and `[web.search]` (the backend `web.search` uses; without it only `fetch` is offered).
    pub web: WebSettings,
    /// When a step's commit must be on disk: `pipelined` (the default: a step that leaves the
    /// operation running commits while the next one runs; a tool with effects waits for it)
    /// or `sync` (each commit lands before the next step starts). `REIN_DURABILITY` wins.
    pub durability: Option<crate::Durability>,
}

/// `[web]` of the configuration file.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSettings {
    /// Addresses `web.fetch` may reach although they are not public (a documentation server on
    /// the local network). Everything else private, loopback or link-local stays refused.
    pub allow: Vec<std::net::IpAddr>,
    /// The search backend.
    pub search: Option<SearchSettings>,
}

/// `[web.search]` of the configuration file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSettings {
    /// `searxng`, `brave`, `tavily` or `serper`.
    pub backend: rein_tools::search::SearchBackend,
    /// The API's address: required for SearXNG (the instance), the hosted address otherwise.
    #[serde(default)]
    pub url: Option<String>,
    /// The API key (`REIN_WEB_SEARCH_API_KEY` wins); SearXNG needs none.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Results one search returns at most (1 to 20; default 10).
    #[serde(default)]
    pub max_results: Option<u32>,
    /// Searches one operation may make (default 20).
    #[serde(default)]
    pub per_operation: Option<u32>,
    /// What one search costs in USD (the plan's price), counted in operations' spending.
    #[serde(default)]
    pub price_per_search: Option<rein_core::usage::Usd>,
}

/// How one external agent is started.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalEntry {
    /// The program (on `PATH`, or a path).
    pub command: String,
    /// Arguments before rein's own.
    #[serde(default)]
    pub args: Vec<String>,
}

/// One MCP server of the file (or of a flag).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum McpEntry {
    /// `NAME = "command args"` (stdio) or `NAME = "https://…"` (Streamable HTTP).
    Line(String),
    /// `[mcp.NAME]` with `url` and `headers`.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl McpEntry {
    /// The server `name` this entry describes.
    pub fn server(&self, name: &str) -> Result<rein_tools::mcp::McpServerConfig, SettingsError> {
        match self {
            McpEntry::Line(line) => mcp_server(&format!("{name}={line}")),
            McpEntry::Http { url, headers } => {
                let mut c = rein_tools::mcp::McpServerConfig::http(name, url);
                if let rein_tools::mcp::McpTransport::Http { headers: h, .. } = &mut c.transport {
                    h.clone_from(headers);
                }
                Ok(c)
            }
        }
    }

    /// How it is shown (`rein config show`): a URL without its query (it may carry
    /// credentials), headers masked.
    pub fn shown(&self) -> serde_json::Value {
        let address = |u: &str| u.split('?').next().unwrap_or(u).to_owned();
        match self {
            McpEntry::Line(l) if l.starts_with("http") => serde_json::json!(address(l)),
            McpEntry::Line(l) => serde_json::json!(l),
            McpEntry::Http { url, headers } => serde_json::json!({
                "url": address(url),
                "headers": headers.iter().map(|(k, v)| (k.clone(), mask(v))).collect::<BTreeMap<_, _>>(),
            }),
        }
    }
}

/// `NAME=COMMAND ARGS...` (stdio, words separated by spaces) or `NAME=URL` (Streamable HTTP)
/// as an MCP server.
pub fn mcp_server(spec: &str) -> Result<rein_tools::mcp::McpServerConfig, SettingsError> {
    let refused = |problem| SettingsError::Mcp {
        given: spec.to_owned(),
        problem,
    };
    let (name, command) = spec
        .split_once('=')
        .ok_or_else(|| refused("expected NAME=COMMAND"))?;
    let mut words = command.split_whitespace();
    let program = words
        .next()
        .ok_or_else(|| refused("the command is empty"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(refused("the server name is empty"));
    }
    if program.starts_with("http://") || program.starts_with("https://") {
        return Ok(rein_tools::mcp::McpServerConfig::http(name, program));
    }
    let args: Vec<&str> = words.collect();
    Ok(rein_tools::mcp::McpServerConfig::stdio(
        name, program, &args,
    ))
}

/// Where the default model came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFrom {
    /// A command-line flag.
    Flag,
    /// `REIN_MODEL`.
    Env,
    /// The configuration file's `default_model`.
    File,
    /// [`DEFAULT_MODEL`].
    BuiltIn,
}

impl ModelFrom {
    /// How `rein config show` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelFrom::Flag => "flag",
            ModelFrom::Env => crate::env::MODEL,
            ModelFrom::File => "config file",
            ModelFrom::BuiltIn => "built-in default",
        }
    }
}

/// The settings in effect: the file as read, and what the environment says over it.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Where the file was looked for.
    pub path: Option<PathBuf>,
    /// Whether that file exists.
    pub loaded: bool,
    /// Its contents.
    pub file: FileConfig,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn file_path() -> Option<PathBuf> {
    if let Some(p) = env(crate::env::CONFIG) {
        return Some(PathBuf::from(p));
    }
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("rein").join("config.toml"))
}

impl Settings {
    /// Read the configuration file where the environment says it is (nothing there: empty
    /// settings), checking what it names.
    pub fn load() -> Result<Self, SettingsError> {
        let path = file_path();
        let Some(p) = path.as_ref().filter(|p| p.exists()) else {
            return Ok(Self {
                path,
                loaded: false,
                file: FileConfig::default(),
            });
        };
        let text = std::fs::read_to_string(p).map_err(|source| SettingsError::Read {
            path: p.clone(),
            source,
        })?;
        let file = Self::parse(p, &text)?;
        Ok(Self {
            path,
            loaded: true,
            file,
        })
    }

    /// The file at `path` holding `text`, checked: its models are `provider/model`, its prices
    /// usable.
    pub fn parse(path: &Path, text: &str) -> Result<FileConfig, SettingsError> {
        let invalid = |problem: String| SettingsError::Invalid {
            path: path.to_owned(),
            problem,
        };
        let file: FileConfig =
            toml::from_str(text).map_err(|e| invalid(e.to_string().trim().to_owned()))?;
        if let Some(m) = &file.default_model {
            Registry::split(m).map_err(|e| invalid(format!("default_model: {e}")))?;
        }
        for (name, m) in [
            ("image_model", &file.image_model),
            ("video_model", &file.video_model),
            ("speech_model", &file.speech_model),
            ("transcription_model", &file.transcription_model),
        ] {
            if let Some(m) = m {
                Registry::split(m).map_err(|e| invalid(format!("{name}: {e}")))?;
            }
        }
        if let Some(secs) = file.video_poll_secs
            && !(secs.is_finite() && (0.01..=3600.0).contains(&secs))
        {
            return Err(invalid(format!(
                "video_poll_secs: {secs} is not a number of seconds from 0.01 to 3600"
            )));
        }
        for (model, prices) in &file.prices {
            Registry::split(model).map_err(|e| invalid(format!("prices.{model}: {e}")))?;
            if !prices.valid() {
                return Err(invalid(format!(
                    "prices.{model}: prices are finite, non-negative USD per million tokens"
                )));
            }
        }
        Ok(file)
    }

    /// The built-in tools' settings: `[web]`, the search key from `REIN_WEB_SEARCH_API_KEY`
    /// over the file's.
    pub fn builtins(&self) -> Result<rein_tools::BuiltinConfig, SettingsError> {
        let web = &self.file.web;
        let search = match &web.search {
            Some(s) => {
                let key = env(crate::env::WEB_SEARCH_API_KEY).or_else(|| s.api_key.clone());
                let mut c =
                    rein_tools::search::SearchConfig::new(s.backend, s.url.as_deref(), key)?;
                if let Some(n) = s.max_results {
                    c.max_results = n.clamp(1, 20);
                }
                if let Some(n) = s.per_operation {
                    c.per_operation = n;
                }
                c.price = s.price_per_search;
                Some(c)
            }
            None => None,
        };
        Ok(rein_tools::BuiltinConfig {
            web: rein_tools::web::WebConfig {
                allow: web.allow.clone(),
                search,
                ..Default::default()
            },
            shell: Default::default(),
            interpreter: rein_tools::interpreter::InterpreterConfig {
                workspaces: Some(data_dir()?.join("workspaces")),
                ..Default::default()
            },
        })
    }

    /// What tool results never show: this process's secret environment variables, and the keys
    /// the file sets (providers', the search backend's).
    pub fn redactor(&self) -> crate::redact::Redactor {
        let mut r = crate::redact::Redactor::from_env();
        for (id, p) in &self.file.providers {
            if let Some(key) = &p.api_key {
                r.add(&format!("providers.{id}.api_key"), key);
            }
        }
        if let Some(key) = self
            .file
            .web
            .search
            .as_ref()
            .and_then(|s| s.api_key.as_ref())
        {
            r.add("web.search.api_key", key);
        }
        r
    }

    /// How `rein config show` shows `[web]`: the key masked, where it came from.
    pub fn web_shown(&self) -> serde_json::Value {
        let web = &self.file.web;
        let search = web.search.as_ref().map(|s| {
            let from_env = env(crate::env::WEB_SEARCH_API_KEY);
            let key = from_env.clone().or_else(|| s.api_key.clone());
            serde_json::json!({
                "backend": s.backend,
                "url": s.url.clone().or_else(|| s.backend.default_url().map(str::to_owned)),
                "api_key": key.as_deref().map(mask),
                "api_key_from": match (&from_env, &s.api_key) {
                    (Some(_), _) => format!("env {}", crate::env::WEB_SEARCH_API_KEY),
                    (None, Some(_)) => "config file".to_owned(),
                    (None, None) => "none".to_owned(),
                },
                "max_results": s.max_results.unwrap_or(10),
                "per_operation": s.per_operation.unwrap_or(rein_tools::search::DEFAULT_PER_OPERATION),
            })
        });
        serde_json::json!({ "allow": web.allow, "search": search })
    }

    /// Provider resolution: presets, then the file, then the environment.
    pub fn registry(&self) -> Result<Registry, SettingsError> {
        Ok(Registry::new(
            Registry::builtin_presets_json(),
            self.file.providers.clone(),
            Box::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        )?)
    }

    /// The default model (`flag` wins) and where that choice came from.
    pub fn model(&self, flag: Option<&str>) -> (String, ModelFrom) {
        if let Some(m) = flag {
            return (m.to_owned(), ModelFrom::Flag);
        }
        if let Some(m) = env(crate::env::MODEL) {
            return (m, ModelFrom::Env);
        }
        if let Some(m) = &self.file.default_model {
            return (m.clone(), ModelFrom::File);
        }
        (DEFAULT_MODEL.to_owned(), ModelFrom::BuiltIn)
    }

    /// The model for rein's own small jobs: `REIN_SYSTEM_MODEL`, else the file's.
    pub fn system_model(&self) -> Option<String> {
        env(crate::env::SYSTEM_MODEL)
            .filter(|m| !m.trim().is_empty())
            .or_else(|| self.file.system_model.clone())
    }

    /// When a step's commit must be on disk: `REIN_DURABILITY`, else the file's, else
    /// pipelined.
    pub fn durability(&self) -> Result<crate::Durability, SettingsError> {
        match env(crate::env::DURABILITY).filter(|v| !v.trim().is_empty()) {
            Some(v) => v.trim().parse().map_err(|problem| SettingsError::Env {
                name: crate::env::DURABILITY,
                problem,
            }),
            None => Ok(self.file.durability.unwrap_or_default()),
        }
    }

    /// The external agents this process may start: the file's entries, each program replaced
    /// by `REIN_EXTERNAL_<KIND>` when set; with `defaults`, Claude Code and Codex from `PATH`
    /// where neither names them (the CLI's own runs; a server starts only what is configured).
    pub fn external_agents(
        &self,
        defaults: bool,
    ) -> Result<crate::external::ExternalAgents, SettingsError> {
        use crate::external::{ExternalAgents, ExternalCommand, env_var};
        use rein_core::spec::ExternalKind;
        let mut agents = if defaults {
            ExternalAgents::defaults()
        } else {
            ExternalAgents::none()
        };
        for (name, entry) in &self.file.external {
            let kind: ExternalKind = name.parse().map_err(|e| SettingsError::External {
                name: name.clone(),
                problem: format!("{e}"),
            })?;
            agents.set(
                kind,
                ExternalCommand {
                    program: entry.command.clone(),
                    args: entry.args.clone(),
                },
            );
        }
        for kind in ExternalKind::ALL {
            if let Some(program) = env(&env_var(kind)) {
                let args = agents.get(kind).map(|c| c.args.clone()).unwrap_or_default();
                agents.set(kind, ExternalCommand { program, args });
            }
        }
        Ok(agents)
    }

    /// MCP servers by name: the file's, then the flags' (`NAME=COMMAND`; a flag replaces a
    /// server of the same name).
    pub fn mcp(&self, flags: &[String]) -> Result<Vec<(String, McpEntry)>, SettingsError> {
        let flagged = flags
            .iter()
            .map(|f| match f.split_once('=') {
                Some((n, line)) => Ok((n.trim().to_owned(), McpEntry::Line(line.to_owned()))),
                None => Err(SettingsError::Mcp {
                    given: f.clone(),
                    problem: "expected NAME=COMMAND",
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut servers: Vec<(String, McpEntry)> = self
            .file
            .mcp
            .iter()
            .filter(|(name, _)| !flagged.iter().any(|(n, _)| n == *name))
            .map(|(name, entry)| (name.clone(), entry.clone()))
            .collect();
        servers.extend(flagged);
        Ok(servers)
    }
}

/// rein's data directory (`REIN_HOME`, else `~/.rein`), created when missing.
pub fn data_dir() -> Result<PathBuf, SettingsError> {
    let dir = match std::env::var_os(crate::env::HOME) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").ok_or(SettingsError::NoHome)?).join(".rein"),
    };
    std::fs::create_dir_all(&dir).map_err(|source| SettingsError::DataDir {
        path: dir.clone(),
        source,
    })?;
    Ok(dir)
}

/// The database: `flag` (`--db`), else `REIN_DATABASE_URL`, else `rein.db` in the data
/// directory.
pub fn database(flag: Option<&str>) -> Result<String, SettingsError> {
    match flag
        .map(str::to_owned)
        .or_else(|| env(crate::env::DATABASE_URL))
    {
        Some(t) => Ok(t),
        None => Ok(data_dir()?.join("rein.db").to_string_lossy().into_owned()),
    }
}

/// A secret as shown: its first three and last four characters at most.
pub fn mask(secret: &str) -> String {
    let n = secret.chars().count();
    if n <= 10 {
        return "****".into();
    }
    let head: String = secret.chars().take(3).collect();
    let tail: String = secret.chars().skip(n - 4).collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked() {
        assert_eq!(mask("sk-proj-abcdefghijklmnop"), "sk-…mnop");
        assert_eq!(mask("short"), "****");
    }

    #[test]
    fn the_file_is_strict_and_the_flags_replace_servers_by_name() {
        let file = Settings::parse(
            Path::new("config.toml"),
            r#"
default_model = "anthropic/claude-sonnet-4"
[providers.mylab]
base_url = "http://lab:9000/v1"
api_key = "lab-secret-key-123"
[mcp]
fs = "npx -y @modelcontextprotocol/server-filesystem ."
remote = "https://mcp.example/mcp"
[mcp.issues]
url = "http://127.0.0.1:3001/mcp?token=x"
headers = { Authorization = "Bearer secret-token-123" }
[agents.helper]
model = "openai/gpt-4o"
approval = "auto-run"
"#,
        )
        .unwrap();
        let c = Settings {
            path: None,
            loaded: true,
            file,
        };
        let line = |s: &str| McpEntry::Line(s.into());
        let servers = c.mcp(&["fs=node other.js".into()]).unwrap();
        assert!(matches!(
            c.mcp(&["fs".into()]),
            Err(SettingsError::Mcp { .. })
        ));
        let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["issues", "remote", "fs"]);
        assert_eq!(servers[1].1, line("https://mcp.example/mcp"));
        assert_eq!(servers[2].1, line("node other.js"));
        let issues = servers[0].1.server("issues").unwrap();
        match issues.transport {
            rein_tools::mcp::McpTransport::Http { url, headers } => {
                assert_eq!(url, "http://127.0.0.1:3001/mcp?token=x");
                assert_eq!(headers["Authorization"], "Bearer secret-token-123");
            }
            other => panic!("{other:?}"),
        }
        let shown = servers[0].1.shown();
        assert_eq!(shown["url"], "http://127.0.0.1:3001/mcp");
        assert!(!shown.to_string().contains("secret-token"), "{shown}");
        assert_eq!(
            c.registry().unwrap().provider("mylab").unwrap().base_url,
            "http://lab:9000/v1"
        );
        assert_eq!(
            c.file.agents["helper"].approval,
            Some(rein_core::intervention::ApprovalMode::AutoRun)
        );
        let bad = Settings::parse(Path::new("config.toml"), "defualt_model = \"x/y\"").unwrap_err();
        assert!(
            matches!(&bad, SettingsError::Invalid { problem, .. } if problem.contains("defualt_model")),
            "{bad}"
        );
        let bad = Settings::parse(
            Path::new("c.toml"),
            "[prices.\"a/b\"]\ninput = -1\noutput = 1",
        )
        .unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("configuration c.toml: prices.a/b:"),
            "{bad}"
        );
        // A media price is the catalog's: an operation's prices are token prices.
        let bad = Settings::parse(
            Path::new("c.toml"),
            "[prices.\"gemini/veo-3.1-generate-preview\"]\ninput = 0\noutput = 0\nper_second = 0.4",
        )
        .unwrap_err();
        assert!(
            bad.to_string().contains("unknown field `per_second`"),
            "{bad}"
        );
    }

    #[test]
    fn an_mcp_flag_names_what_is_wrong_with_it() {
        for (given, problem) in [
            ("fs", "expected NAME=COMMAND"),
            ("fs=", "the command is empty"),
            ("=node x.js", "the server name is empty"),
        ] {
            match mcp_server(given) {
                Err(SettingsError::Mcp { problem: p, .. }) => assert_eq!(p, problem, "{given}"),
                other => panic!("{given}: {other:?}"),
            }
        }
        assert!(mcp_server("web=https://mcp.example/mcp").is_ok());
    }
}
