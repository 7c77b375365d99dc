//! The configuration file (`$REIN_CONFIG`, else `~/.config/rein/config.toml`): providers,
//! the default model, MCP servers, agents and skill directories. The environment overrides it, flags override
//! both. A missing file is an empty configuration; a malformed one is an error naming the file
//! and the problem.

use anyhow::{Context, anyhow};
use rein_model::Registry;
use rein_model::registry::ProviderOverride;
use rein_operation::AgentProfile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What the file may hold.
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

/// One MCP server of the file.
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
    pub fn server(&self, name: &str) -> anyhow::Result<rein_tools::mcp::McpServerConfig> {
        match self {
            McpEntry::Line(line) => crate::host::mcp_config(&format!("{name}={line}")),
            McpEntry::Http { url, headers } => {
                let mut c = rein_tools::mcp::McpServerConfig::http(name, url);
                if let rein_tools::mcp::McpTransport::Http { headers: h, .. } = &mut c.transport {
                    h.clone_from(headers);
                }
                Ok(c)
            }
        }
    }

    /// How `rein config show` names it: a URL without its query (it may carry credentials),
    /// headers masked.
    fn shown(&self) -> serde_json::Value {
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

/// The configuration in effect.
pub struct Config {
    /// Where it was looked for.
    pub path: Option<PathBuf>,
    /// Whether that file exists.
    pub loaded: bool,
    /// Its contents.
    pub file: FileConfig,
}

/// Built-in default model.
pub const DEFAULT_MODEL: &str = "openai/gpt-4o-mini";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn path() -> Option<PathBuf> {
    if let Some(p) = env(rein_operation::env::CONFIG) {
        return Some(PathBuf::from(p));
    }
    let base = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("rein").join("config.toml"))
}

/// Read the configuration file.
pub fn load() -> anyhow::Result<Config> {
    let path = path();
    let Some(p) = path.as_ref().filter(|p| p.exists()) else {
        return Ok(Config {
            path,
            loaded: false,
            file: FileConfig::default(),
        });
    };
    let text = std::fs::read_to_string(p)
        .with_context(|| format!("cannot read the configuration {}", p.display()))?;
    let file: FileConfig = toml::from_str(&text)
        .map_err(|e| anyhow!("configuration {}: {}", p.display(), e.to_string().trim()))?;
    if let Some(m) = &file.default_model {
        Registry::split(m)
            .map_err(|e| anyhow!("configuration {}: default_model: {e}", p.display()))?;
    }
    for (model, prices) in &file.prices {
        Registry::split(model)
            .map_err(|e| anyhow!("configuration {}: prices.{model}: {e}", p.display()))?;
        if !prices.valid() {
            anyhow::bail!(
                "configuration {}: prices.{model}: prices are finite, non-negative USD per million tokens",
                p.display()
            );
        }
    }
    Ok(Config {
        path,
        loaded: true,
        file,
    })
}

impl Config {
    /// Provider resolution: presets, then this file, then the environment.
    pub fn registry(&self) -> anyhow::Result<Registry> {
        Ok(Registry::new(
            Registry::builtin_presets_json(),
            self.file.providers.clone(),
            Box::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        )?)
    }

    /// The model to use and where that choice came from.
    pub fn model(&self, flag: Option<&str>) -> (String, &'static str) {
        if let Some(m) = flag {
            return (m.to_owned(), "flag");
        }
        if let Some(m) = env(rein_operation::env::MODEL) {
            return (m, rein_operation::env::MODEL);
        }
        if let Some(m) = &self.file.default_model {
            return (m.clone(), "config file");
        }
        (DEFAULT_MODEL.to_owned(), "built-in default")
    }

    /// The external agents this process may start: the file's entries, each program replaced by
    /// `REIN_EXTERNAL_<KIND>` when set; with `defaults`, Claude Code and Codex from `PATH` where
    /// neither names them (the CLI's own runs; a server starts only what is configured).
    pub fn external_agents(
        &self,
        defaults: bool,
    ) -> anyhow::Result<rein_operation::external::ExternalAgents> {
        use rein_core::spec::ExternalKind;
        use rein_operation::external::{ExternalAgents, ExternalCommand, env_var};
        let mut agents = if defaults {
            ExternalAgents::defaults()
        } else {
            ExternalAgents::none()
        };
        for (name, entry) in &self.file.external {
            let kind: ExternalKind = name
                .parse()
                .map_err(|e| anyhow!("configuration: [external.{name}]: {e}"))?;
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
    pub fn mcp(&self, flags: &[String]) -> anyhow::Result<Vec<(String, McpEntry)>> {
        let flagged = flags
            .iter()
            .map(|f| match f.split_once('=') {
                Some((n, line)) => Ok((n.trim().to_owned(), McpEntry::Line(line.to_owned()))),
                None => Err(anyhow!("--mcp `{f}`: expected NAME=COMMAND")),
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
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

/// `rein config show`: the effective configuration, secrets masked.
pub fn show(
    config: &Config,
    db: &str,
    model_flag: Option<&str>,
    mcp_flags: &[String],
    json: bool,
) -> anyhow::Result<()> {
    let registry = config.registry()?;
    let (model, model_from) = config.model(model_flag);
    let mut providers = serde_json::Map::new();
    let presets: serde_json::Value = serde_json::from_str(Registry::builtin_presets_json())?;
    let key_envs: BTreeMap<String, Option<String>> = presets["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p["id"].as_str()?.to_owned(),
                p["api_key_env"].as_str().map(str::to_owned),
            ))
        })
        .collect();
    let model_provider = Registry::split(&model).map(|(p, _)| p.to_owned()).ok();
    let ids: std::collections::BTreeSet<String> = registry
        .ids()
        .map(str::to_owned)
        .chain(config.file.providers.keys().cloned())
        .collect();
    for id in ids {
        let configured = config.file.providers.contains_key(&id);
        let Ok(p) = registry.provider(&id) else {
            continue;
        };
        let keyed = p.api_key.is_some();
        if !(configured || keyed || model_provider.as_deref() == Some(id.as_str())) {
            continue;
        }
        let key_source = match (&p.api_key, key_envs.get(&id).cloned().flatten()) {
            (None, _) => "none".to_owned(),
            (Some(_), Some(var)) if env(&var).is_some() => format!("env {var}"),
            (Some(_), _)
                if env(&format!(
                    "{}_API_KEY",
                    id.to_ascii_uppercase().replace('-', "_")
                ))
                .is_some() =>
            {
                format!("env {}_API_KEY", id.to_ascii_uppercase().replace('-', "_"))
            }
            (Some(_), _) => "config file".to_owned(),
        };
        providers.insert(
            id,
            serde_json::json!({
                "protocol": p.protocol,
                "base_url": p.base_url,
                "api_key": p.api_key.as_deref().map(mask),
                "api_key_from": key_source,
                "headers": p.headers.iter().map(|(k, v)| (k.clone(), mask(v))).collect::<BTreeMap<_, _>>(),
            }),
        );
    }
    let mcp: BTreeMap<String, serde_json::Value> = config
        .mcp(mcp_flags)?
        .into_iter()
        .map(|(name, entry)| (name, entry.shown()))
        .collect();
    let effective = serde_json::json!({
        "config_file": config.path.as_ref().map(|p| p.display().to_string()),
        "config_file_found": config.loaded,
        "database": rein_store::redact(db),
        "default_model": model,
        "default_model_from": model_from,
        "providers": providers,
        "mcp": mcp,
        "agents": config.file.agents.keys().collect::<Vec<_>>(),
    });
    if json {
        println!("{effective}");
    } else {
        println!(
            "{}",
            toml::to_string_pretty(&effective).unwrap_or_else(|_| effective.to_string())
        );
    }
    Ok(())
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
        let file: FileConfig = toml::from_str(
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
        let c = Config {
            path: None,
            loaded: true,
            file,
        };
        let line = |s: &str| McpEntry::Line(s.into());
        let servers = c.mcp(&["fs=node other.js".into()]).unwrap();
        assert!(c.mcp(&["fs".into()]).is_err());
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
        let bad = toml::from_str::<FileConfig>("defualt_model = \"x/y\"").unwrap_err();
        assert!(bad.to_string().contains("defualt_model"), "{bad}");
    }
}
