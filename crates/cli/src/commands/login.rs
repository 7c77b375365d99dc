//! `rein login URL` and `rein logout`: named server profiles in `$REIN_HOME/servers.toml`
//! (mode 0600: it holds tokens), so `--server NAME` (or `REIN_SERVER=NAME`) reaches a server
//! with its token. `login` signs in the way OAuth's device grant does: it asks the server for
//! a login, prints where to approve it (`URL/#login=CODE` in the web UI, signed in there) and
//! waits for the token; `--token-stdin` takes a token instead. `logout` revokes the profile's
//! token on the server and forgets the profile.

use super::Remote;
use anyhow::{Context, anyhow, bail};
use rein_server::error::ApiErrorCode;
use rein_server::routes::logins::{ClaimLogin, LoginStarted, LoginToken, NewLogin};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `rein login` options.
#[derive(clap::Args)]
pub struct LoginArgs {
    /// The server (`http://` or `https://`).
    pub url: String,
    /// The profile's name, for `--server NAME` (default: the URL's host and port).
    #[arg(long)]
    pub name: Option<String>,
    /// Read an API token from stdin instead of approving this login in the web UI.
    #[arg(long)]
    pub token_stdin: bool,
}

/// `rein logout` options.
#[derive(clap::Args)]
pub struct LogoutArgs {
    /// The profile (default: the only one).
    pub name: Option<String>,
}

/// One server profile.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The server.
    pub url: String,
    /// Its API token.
    pub token: String,
    /// Whom the token signs in, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// `servers.toml`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profiles {
    /// By name.
    #[serde(default)]
    pub servers: BTreeMap<String, Profile>,
}

impl Profiles {
    fn path() -> anyhow::Result<PathBuf> {
        Ok(rein_operation::settings::data_dir()?.join("servers.toml"))
    }

    /// The profiles on this machine (none when the file is missing).
    pub fn load() -> anyhow::Result<Self> {
        let path = Self::path()?;
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).with_context(|| format!("{}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(anyhow!("{}: {e}", path.display())),
        }
    }

    /// Write them, readable by this user only (they hold tokens), replacing the file whole.
    fn save(&self) -> anyhow::Result<()> {
        let path = Self::path()?;
        let text = toml::to_string_pretty(self)?;
        let partial = path.with_extension("toml.partial");
        {
            use std::io::Write;
            let mut open = std::fs::OpenOptions::new();
            open.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
            let mut f = open
                .open(&partial)
                .with_context(|| format!("{}", partial.display()))?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&partial, &path).with_context(|| format!("{}", path.display()))?;
        Ok(())
    }

    /// Where `--server` points and the token to use: a URL (with `$REIN_TOKEN`, else the token
    /// of a profile for that URL), or a profile's name (`$REIN_TOKEN` still wins).
    pub fn resolve(server: &str) -> anyhow::Result<(String, Option<String>)> {
        let env_token = std::env::var(rein_operation::env::TOKEN)
            .ok()
            .filter(|t| !t.is_empty());
        let url = server.trim_end_matches('/');
        if url.starts_with("http://") || url.starts_with("https://") {
            let token = match env_token {
                Some(t) => Some(t),
                None => Self::load()?
                    .servers
                    .into_values()
                    .find(|p| p.url == url)
                    .map(|p| p.token),
            };
            return Ok((url.to_owned(), token));
        }
        let profiles = Self::load()?;
        let Some(p) = profiles.servers.get(server) else {
            let known: Vec<&str> = profiles.servers.keys().map(String::as_str).collect();
            bail!(
                "--server `{server}` is neither an http:// or https:// URL nor a profile ({}); \
                 `rein login URL --name {server}` makes one",
                if known.is_empty() {
                    "there are none".to_owned()
                } else {
                    format!("there are {}", known.join(", "))
                }
            );
        };
        Ok((p.url.clone(), env_token.or_else(|| Some(p.token.clone()))))
    }
}

/// A profile name from a URL: its host and port.
fn default_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// `rein login URL`.
pub async fn login(args: LoginArgs, json: bool) -> anyhow::Result<u8> {
    let url = args.url.trim_end_matches('/').to_owned();
    if !url.starts_with("http://") && !url.starts_with("https://") {
        bail!("`{url}` is not an http:// or https:// URL");
    }
    let name = args.name.unwrap_or_else(|| default_name(&url));
    if name.is_empty() || name.contains("://") {
        bail!("--name `{name}`: give a short name for the profile");
    }
    let (token, user) = if args.token_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        let token = line.trim().to_owned();
        if token.is_empty() {
            bail!("no token on stdin");
        }
        // A token the server does not take is refused now, not at the first command.
        let remote = Remote::with_token(&url, Some(token.clone()), json)?;
        let _: Vec<rein_server::routes::agents::Agent> =
            remote.call(Method::GET, "/v1/agents", None::<&()>).await?;
        (token, None)
    } else {
        let remote = Remote::with_token(&url, None, json)?;
        let client = format!(
            "rein CLI on {}",
            std::env::var("HOSTNAME")
                .ok()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "another machine".to_owned())
        );
        let started: LoginStarted = remote
            .call(Method::POST, "/v1/logins", Some(&NewLogin { client }))
            .await?;
        eprintln!(
            "To sign in, open {url}/#login={code} (signed in there) and approve code {code}; \
             it expires in {} minutes.",
            started.expires_in / 60,
            code = started.user_code
        );
        let claim = ClaimLogin {
            login: started.login.clone(),
        };
        let got = loop {
            tokio::time::sleep(std::time::Duration::from_secs(started.interval.max(1))).await;
            match remote
                .call::<LoginToken>(Method::POST, "/v1/login-tokens", Some(&claim))
                .await
            {
                Ok(t) => break t,
                Err(e) => match e.downcast_ref::<super::remote::Refused>() {
                    Some(r) if r.code == Some(ApiErrorCode::AuthorizationPending) => continue,
                    _ => return Err(e),
                },
            }
        };
        (got.token, Some(got.user))
    };
    let mut profiles = Profiles::load()?;
    profiles.servers.insert(
        name.clone(),
        Profile {
            url: url.clone(),
            token,
            user: user.clone(),
        },
    );
    profiles.save()?;
    if json {
        println!(
            "{}",
            serde_json::json!({"profile": name, "url": url, "user": user})
        );
    } else {
        eprintln!(
            "signed in to {url}{} · `rein --server {name} …` (or REIN_SERVER={name})",
            user.map(|u| format!(" as {u}")).unwrap_or_default()
        );
    }
    Ok(crate::exit::DONE)
}

/// `rein logout [NAME]`.
pub async fn logout(args: LogoutArgs, json: bool) -> anyhow::Result<u8> {
    let mut profiles = Profiles::load()?;
    let name = match args.name {
        Some(n) => n,
        None if profiles.servers.len() == 1 => {
            profiles.servers.keys().next().cloned().unwrap_or_default()
        }
        None if profiles.servers.is_empty() => bail!("no server profiles: nothing to sign out of"),
        None => bail!(
            "name the profile to sign out of: {}",
            profiles
                .servers
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let Some(p) = profiles.servers.remove(&name) else {
        bail!("no server profile `{name}`");
    };
    // The token stops working on the server; a server that cannot be reached (or that took
    // it back already) leaves only the profile to forget, and says so.
    let remote = Remote::with_token(&p.url, Some(p.token.clone()), json)?;
    let revoked = remote
        .call_empty(Method::DELETE, "/v1/tokens/current")
        .await;
    profiles.save()?;
    match revoked {
        Ok(()) => eprintln!("signed out of {} (its token is revoked)", p.url),
        Err(e) => eprintln!(
            "forgot profile {name}; the server did not revoke its token ({e:#}): \
             `rein token list` on the server shows it"
        ),
    }
    Ok(crate::exit::DONE)
}
