//! `rein settings provider`: the model providers you bring to a server (your API key, your
//! base URL), which only your operations there use. A key is read from stdin, never from the
//! command line, and no command shows it again. `rein settings workdir`: the directory your
//! operations there work in, inside one the server allows. Here (no `--server`) the
//! environment, the configuration file and the current directory say these, so they refuse,
//! saying so. `rein settings rotate-key` moves the keys a database holds to a new secret key.

use super::{Local, Remote};
use anyhow::{Context as _, bail};
use rein_server::routes::own_providers::{BringIn, OwnProviderOut};
use rein_server::routes::workdir::{WorkdirIn, WorkdirOut};
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
}

fn here() -> &'static str {
    "these settings are a server's (give --server); here, a provider's key goes in the \
     environment (OPENAI_API_KEY, ...) or [providers.ID] in the configuration file, and \
     operations work in the current directory"
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
}
