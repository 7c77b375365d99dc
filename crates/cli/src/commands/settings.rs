//! `rein settings provider`: the model providers you bring to a server (your API key, your
//! base URL), which only your operations there use. A key is read from stdin, never from the
//! command line, and no command shows it again. `rein settings workdir`: the directory your
//! operations there work in, inside one the server allows. `rein settings mcp`: the MCP
//! servers your operations there are offered, on origins the server allows; their headers
//! (tokens) are read from stdin and never shown again. Here (no `--server`) the
//! environment, the configuration file and the current directory say these, so they refuse,
//! saying so. `rein settings rotate-key` moves the keys a database holds to a new secret key.

use super::{Local, Remote};
use anyhow::{Context as _, bail};
use rein_server::routes::own_mcp::{
    ApproveIn, DefineIn, DefinedOut, McpSettingsOut, OwnMcpOut, PinsOut,
};
use rein_server::routes::own_providers::{BringIn, OwnProviderOut};
use rein_server::routes::workdir::{WorkdirIn, WorkdirOut};
use rein_store::McpPin;
use reqwest::Method;
use std::path::PathBuf;

/// `rein settings` subcommands.
#[derive(clap::Subcommand)]
pub enum SettingsCommand {
    /// The model providers you bring to a server (`--server`): set, list, remove.
    Provider {
        #[command(subcommand)]
        command: ProviderCommand,
    },
    /// The MCP servers your operations on a server (`--server`) are offered: set, list,
    /// remove.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// The directory your operations on a server (`--server`) work in: shown, chosen (an
    /// absolute path on the server, inside one it allows), or forgotten with --clear.
    Workdir {
        /// The directory to choose.
        path: Option<String>,
        /// Forget your choice: the server's own directory serves again.
        #[arg(long, conflicts_with = "path")]
        clear: bool,
    },
    /// Reseal every API key users stored under a new secret key (on the database's host): the
    /// new key is written to FILE (which must not exist), then start every server and worker
    /// with `--secret-key-file FILE`.
    RotateKey {
        /// Where the new secret key goes (a new file, mode 0600).
        #[arg(long, value_name = "FILE")]
        new_key_file: PathBuf,
        /// The current secret key's file (without it: REIN_SECRET_KEY, the key itself, else
        /// secret.key in $REIN_HOME or ~/.rein).
        #[arg(long, value_name = "FILE", env = rein_operation::env::SECRET_KEY_FILE)]
        secret_key_file: Option<PathBuf>,
    },
}

/// `rein settings provider` subcommands.
#[derive(clap::Subcommand)]
pub enum ProviderCommand {
    /// Bring your API key (`--key-stdin`) or base URL for a provider; replaces what you had.
    Set {
        /// Provider id (`openai`, `anthropic`, or a name of your own with `--base-url`).
        provider: String,
        /// Read your API key from stdin's first line.
        #[arg(long)]
        key_stdin: bool,
        /// Your base URL for it (the server's key is never sent there).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// The providers you brought (never their keys).
    List,
    /// Forget your settings for a provider.
    Remove {
        /// Provider id.
        provider: String,
    },
}

/// `rein settings mcp` subcommands.
#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// Define an MCP server (Streamable HTTP, on an origin the server allows); the server
    /// checks that it answers and lists its tools. Replaces yours of that name.
    Set {
        /// Its name: its tools are offered as NAME__tool (lower-case letters, digits, `-`).
        name: String,
        /// Its endpoint (`https://mcp.example/mcp`).
        url: String,
        /// Read headers to send it from stdin, one `Name: value` per line (`Authorization:
        /// Bearer ...`); stored sealed, never shown again.
        #[arg(long)]
        headers_stdin: bool,
    },
    /// The MCP servers you defined (never their headers' values) and the origins allowed.
    List,
    /// Forget an MCP server you defined.
    Remove {
        /// Its name.
        name: String,
    },
    /// Its tools as pinned when first offered, and each change held (a tool whose description or
    /// parameters changed since is not offered) with its diff.
    Pins {
        /// Its name.
        name: String,
    },
    /// Approve the held change of one of its tools, the one you saw (`--hash`, from `pins`):
    /// offered with its new definition from now on.
    Approve {
        /// Its name.
        name: String,
        /// The tool's name on it.
        tool: String,
        /// The change's hash as `pins` showed it (the whole 64 hex digits).
        #[arg(long)]
        hash: String,
    },
}

/// Headers from stdin: one `Name: value` per line, blank lines skipped.
fn headers_from_stdin() -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut input)?;
    let mut headers = std::collections::BTreeMap::new();
    for (n, line) in input.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            bail!(
                "stdin line {}: a header is `Name: value` (no `:` on that line)",
                n + 1
            );
        };
        headers.insert(name.trim().to_owned(), value.trim().to_owned());
    }
    if headers.is_empty() {
        bail!("no headers on stdin (one `Name: value` per line)");
    }
    Ok(headers)
}

/// Run `rein settings mcp`.
async fn mcp(on: &impl super::Backend, command: McpCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        McpCommand::Set {
            name,
            url,
            headers_stdin,
        } => {
            let define = DefineIn {
                url,
                headers: if headers_stdin {
                    headers_from_stdin()?
                } else {
                    Default::default()
                },
            };
            let out = on.set_mcp(&name, &define).await?;
            if json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                eprintln!(
                    "stored MCP server {}; it offers {} tool{}: {}",
                    out.server.name,
                    out.tools.len(),
                    if out.tools.len() == 1 { "" } else { "s" },
                    out.tools.join(", ")
                );
            }
        }
        McpCommand::List => {
            let out = on.mcp_servers().await?;
            if json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                for s in &out.servers {
                    println!("{}", mcp_line(s));
                }
                if out.allowed_origins.is_empty() {
                    eprintln!("this server lets users define no MCP servers");
                } else {
                    eprintln!("allowed origins: {}", out.allowed_origins.join(", "));
                }
            }
        }
        McpCommand::Remove { name } => {
            on.remove_mcp(&name).await?;
            if json {
                println!("{}", serde_json::json!({"removed": name}));
            } else {
                eprintln!("forgot MCP server {name}");
            }
        }
        McpCommand::Pins { name } => {
            let out = on.mcp_pins(&name).await?;
            if json {
                println!("{}", serde_json::to_string(&out)?);
            } else if out.pins.is_empty() {
                eprintln!(
                    "no tool of {name} is pinned yet: a tool is pinned the first time an operation is offered it"
                );
            } else {
                for p in &out.pins {
                    let hash = p.pin.change.as_ref().map_or("", |c| c.hash.as_str());
                    let approve = format!(
                        "rein settings mcp approve {name} {} --hash {hash}",
                        p.pin.tool
                    );
                    println!("{}", super::pins::shown(&p.pin, &approve));
                }
            }
        }
        McpCommand::Approve { name, tool, hash } => {
            let pin = on
                .approve_mcp_pin(
                    &name,
                    &ApproveIn {
                        tool: tool.clone(),
                        hash,
                    },
                )
                .await?;
            if json {
                println!("{}", serde_json::to_string(&pin)?);
            } else {
                eprintln!(
                    "approved: your operations are offered {name}/{tool} with its new definition from now on"
                );
            }
        }
    }
    Ok(crate::exit::DONE)
}

fn mcp_line(s: &OwnMcpOut) -> String {
    let headers = if s.header_names.is_empty() {
        "no headers".to_owned()
    } else {
        format!("headers: {}", s.header_names.join(", "))
    };
    format!(
        "{:<16} {}  ({headers}; set {})",
        s.name,
        s.url,
        s.updated_at.format("%Y-%m-%d %H:%M")
    )
}

/// What `rein settings provider` needs from where it runs.
pub trait ServerSettings {
    /// Store what you bring for `provider`.
    async fn set_provider(&self, provider: &str, bring: &BringIn)
    -> anyhow::Result<OwnProviderOut>;
    /// The providers you brought.
    async fn providers(&self) -> anyhow::Result<Vec<OwnProviderOut>>;
    /// Forget `provider`.
    async fn remove_provider(&self, provider: &str) -> anyhow::Result<()>;
    /// Where your operations work.
    async fn workdir(&self) -> anyhow::Result<WorkdirOut>;
    /// Choose (or with `None` forget) where your operations work.
    async fn set_workdir(&self, path: Option<String>) -> anyhow::Result<WorkdirOut>;
    /// Define your MCP server `name`.
    async fn set_mcp(&self, name: &str, define: &DefineIn) -> anyhow::Result<DefinedOut>;
    /// Your MCP servers and where you may define them.
    async fn mcp_servers(&self) -> anyhow::Result<McpSettingsOut>;
    /// Forget your MCP server `name`.
    async fn remove_mcp(&self, name: &str) -> anyhow::Result<()>;
    /// The pins of your MCP server `name`.
    async fn mcp_pins(&self, name: &str) -> anyhow::Result<PinsOut>;
    /// Approve the held change `approve` names of your MCP server `name`.
    async fn approve_mcp_pin(&self, name: &str, approve: &ApproveIn) -> anyhow::Result<McpPin>;
}

fn key_from_stdin() -> anyhow::Result<String> {
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut input)?;
    let key = input.lines().next().unwrap_or_default().trim().to_owned();
    if key.is_empty() {
        bail!("no API key on stdin (its first line is the key)");
    }
    Ok(key)
}

/// Run `rein settings provider`.
pub async fn run(
    on: &impl super::Backend,
    command: SettingsCommand,
    json: bool,
) -> anyhow::Result<u8> {
    let command = match command {
        SettingsCommand::Provider { command } => command,
        SettingsCommand::Mcp { command } => return mcp(on, command, json).await,
        SettingsCommand::Workdir { path, clear } => {
            let out = match (path, clear) {
                (Some(p), _) => on.set_workdir(Some(p)).await?,
                (None, true) => on.set_workdir(None).await?,
                (None, false) => on.workdir().await?,
            };
            if json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                println!(
                    "{}",
                    out.effective
                        .as_deref()
                        .unwrap_or("(none: operations have no file or shell access)")
                );
                if out.chosen.is_none() && out.choosable {
                    eprintln!("the server's own; choose yours with `rein settings workdir PATH`");
                }
            }
            return Ok(crate::exit::DONE);
        }
        SettingsCommand::RotateKey {
            new_key_file,
            secret_key_file,
        } => return rotate(on.local()?, new_key_file, secret_key_file, json).await,
    };
    match command {
        ProviderCommand::Set {
            provider,
            key_stdin,
            base_url,
        } => {
            if !key_stdin && base_url.is_none() {
                bail!("give --key-stdin (and the key on stdin), --base-url URL, or both");
            }
            let bring = BringIn {
                api_key: key_stdin.then(key_from_stdin).transpose()?,
                base_url,
            };
            let out = on.set_provider(&provider, &bring).await?;
            if json {
                println!("{}", serde_json::to_string(&out)?);
            } else {
                eprintln!("stored your settings for {}", line(&out));
            }
        }
        ProviderCommand::List => {
            let list = on.providers().await?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                for p in &list {
                    println!("{}", line(p));
                }
                if list.is_empty() {
                    eprintln!("you brought no providers: the server's serve your operations");
                }
            }
        }
        ProviderCommand::Remove { provider } => {
            on.remove_provider(&provider).await?;
            if json {
                println!("{}", serde_json::json!({"removed": provider}));
            } else {
                eprintln!("forgot your settings for {provider}");
            }
        }
    }
    Ok(crate::exit::DONE)
}

fn line(p: &OwnProviderOut) -> String {
    format!(
        "{:<16} key: {:<7} base URL: {}  (set {})",
        p.provider,
        if p.has_key { "yours" } else { "server" },
        p.base_url.as_deref().unwrap_or("server's"),
        p.updated_at.format("%Y-%m-%d %H:%M")
    )
}

/// `rein settings rotate-key`: the new key written first, then every stored key resealed in
/// one transaction (a crash in between leaves the keys under the old secret key, which still
/// opens them).
async fn rotate(
    l: &Local,
    new_key_file: PathBuf,
    current_file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<u8> {
    let env = |k: &str| std::env::var(k).ok();
    let place = rein_operation::secrets::KeyPlace::find(
        &env,
        current_file,
        &rein_operation::settings::data_dir()?,
    );
    let Some(old) = place.load(&env)? else {
        bail!("no current secret key at {place:?}: give --secret-key-file");
    };
    let new = rein_operation::secrets::SecretKey::generate()?;
    new.write_new(&new_key_file)?;
    let store = l.store().await?;
    let n = rein_operation::own_models::rotate(&**store, &old, &new)
        .await
        .with_context(|| {
            format!(
                "the keys stay sealed with {}; {} holds an unused key",
                old.id(),
                new_key_file.display()
            )
        })?;
    if json {
        println!(
            "{}",
            serde_json::json!({"resealed": n, "key_id": new.id(), "file": new_key_file.display().to_string()})
        );
    } else {
        eprintln!(
            "resealed {n} stored keys under secret key {}: start every server and worker with --secret-key-file {}",
            new.id(),
            new_key_file.display()
        );
    }
    Ok(crate::exit::DONE)
}

impl ServerSettings for Local {
    async fn set_provider(&self, _: &str, _: &BringIn) -> anyhow::Result<OwnProviderOut> {
        bail!(here())
    }
    async fn providers(&self) -> anyhow::Result<Vec<OwnProviderOut>> {
        bail!(here())
    }
    async fn remove_provider(&self, _: &str) -> anyhow::Result<()> {
        bail!(here())
    }
    async fn workdir(&self) -> anyhow::Result<WorkdirOut> {
        bail!(here())
    }
    async fn set_workdir(&self, _: Option<String>) -> anyhow::Result<WorkdirOut> {
        bail!(here())
    }
    async fn set_mcp(&self, _: &str, _: &DefineIn) -> anyhow::Result<DefinedOut> {
        bail!(here())
    }
    async fn mcp_servers(&self) -> anyhow::Result<McpSettingsOut> {
        bail!(here())
    }
    async fn remove_mcp(&self, _: &str) -> anyhow::Result<()> {
        bail!(here())
    }
    async fn mcp_pins(&self, _: &str) -> anyhow::Result<PinsOut> {
        bail!("here, the configured MCP servers' pins are `rein pin list`")
    }
    async fn approve_mcp_pin(&self, _: &str, _: &ApproveIn) -> anyhow::Result<McpPin> {
        bail!(
            "here, a configured MCP server's change is approved with `rein pin approve SERVER TOOL`"
        )
    }
}

fn here() -> &'static str {
    "these settings are a server's (give --server); here, a provider's key goes in the \
     environment (OPENAI_API_KEY, ...) or [providers.ID] in the configuration file, MCP \
     servers in --mcp NAME=COMMAND or [mcp] in it, and operations work in the current \
     directory"
}

impl ServerSettings for Remote {
    async fn set_provider(
        &self,
        provider: &str,
        bring: &BringIn,
    ) -> anyhow::Result<OwnProviderOut> {
        let path = format!(
            "/v1/settings/providers/{}",
            super::remote::segment(provider)
        );
        self.call(Method::PUT, &path, Some(bring)).await
    }
    async fn providers(&self) -> anyhow::Result<Vec<OwnProviderOut>> {
        self.call(Method::GET, "/v1/settings/providers", None::<&()>)
            .await
    }
    async fn remove_provider(&self, provider: &str) -> anyhow::Result<()> {
        let path = format!(
            "/v1/settings/providers/{}",
            super::remote::segment(provider)
        );
        self.call_empty(Method::DELETE, &path).await
    }
    async fn workdir(&self) -> anyhow::Result<WorkdirOut> {
        self.call(Method::GET, "/v1/settings/workdir", None::<&()>)
            .await
    }
    async fn set_workdir(&self, path: Option<String>) -> anyhow::Result<WorkdirOut> {
        self.call(
            Method::PUT,
            "/v1/settings/workdir",
            Some(&WorkdirIn { path }),
        )
        .await
    }
    async fn set_mcp(&self, name: &str, define: &DefineIn) -> anyhow::Result<DefinedOut> {
        let path = format!("/v1/settings/mcp/{}", super::remote::segment(name));
        self.call(Method::PUT, &path, Some(define)).await
    }
    async fn mcp_servers(&self) -> anyhow::Result<McpSettingsOut> {
        self.call(Method::GET, "/v1/settings/mcp", None::<&()>)
            .await
    }
    async fn remove_mcp(&self, name: &str) -> anyhow::Result<()> {
        let path = format!("/v1/settings/mcp/{}", super::remote::segment(name));
        self.call_empty(Method::DELETE, &path).await
    }
    async fn mcp_pins(&self, name: &str) -> anyhow::Result<PinsOut> {
        let path = format!("/v1/settings/mcp/{}/pins", super::remote::segment(name));
        self.call(Method::GET, &path, None::<&()>).await
    }
    async fn approve_mcp_pin(&self, name: &str, approve: &ApproveIn) -> anyhow::Result<McpPin> {
        let path = format!(
            "/v1/settings/mcp/{}/pins/approve",
            super::remote::segment(name)
        );
        self.call(Method::POST, &path, Some(approve)).await
    }
}
