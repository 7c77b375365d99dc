//! `rein token create|list|revoke`: a user's API and device tokens. Here, on the database's
//! machine, the operator makes them (the user is created when new); with `--server`, an admin
//! does (`/v1/users/{name}/tokens`; the user must exist), and anyone lists and revokes their
//! own without `--user` (`/v1/me/tokens`; a token cannot make tokens: that is done signed in
//! in the web app). A token is shown once; a revoked one stops at once.

use super::{Local, Remote, remote::segment};
use anyhow::bail;
use rein_server::routes::users::{NewToken, TokenList, TokenMade, TokenQuery};
use rein_store::{Accounts, ApiToken, TokenScope};
use reqwest::Method;

/// `rein token` subcommands.
#[derive(clap::Subcommand)]
pub enum TokenCommand {
    /// Create a token for a user (here: created if new); the token is printed once.
    Create {
        /// User name.
        #[arg(long)]
        user: String,
        /// What the token is for.
        #[arg(long)]
        label: Option<String>,
        /// A device token: it connects the device of this name (`rein connect`) and
        /// authenticates nothing else.
        #[arg(long, value_name = "NAME")]
        device: Option<String>,
        /// The token stops authenticating after this many days (never by default).
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..=3650))]
        expires_in: Option<u32>,
        /// What the token may do: `read` (only look), `run` (also change your things),
        /// `admin` (an admin's powers); repeat for several (all the user's role allows by
        /// default).
        #[arg(long = "scope", value_name = "SCOPE", value_parser = crate::named::named::<TokenScope>())]
        scopes: Vec<TokenScope>,
    },
    /// List a user's tokens (never the tokens themselves).
    List {
        /// User name (with `--server`, leave it out for your own).
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke one of a user's tokens.
    Revoke {
        /// User name (with `--server`, leave it out for your own).
        #[arg(long)]
        user: Option<String>,
        /// Token id (from `rein token list`).
        id: String,
    },
}

/// What `rein token` needs from where it runs.
pub trait TokenAdmin {
    /// A new token of `user` as `new` describes it.
    async fn create_token(&self, user: &str, new: &NewToken) -> anyhow::Result<TokenMade>;

    /// `user`'s tokens (the caller's when `None`), newest first.
    async fn tokens(&self, user: Option<&str>) -> anyhow::Result<Vec<ApiToken>>;

    /// Revoke `user`'s (the caller's when `None`) token `id`.
    async fn revoke_token(&self, user: Option<&str>, id: &str) -> anyhow::Result<()>;
}

/// `rein token …`.
pub async fn run(on: &impl TokenAdmin, command: TokenCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        TokenCommand::Create {
            user,
            label,
            device,
            expires_in,
            scopes,
        } => {
            if user.trim().is_empty() {
                bail!("--user is empty");
            }
            let now = chrono::Utc::now();
            let new = NewToken {
                label,
                device: device.clone(),
                expires_at: expires_in.map(|d| now + chrono::Duration::days(i64::from(d))),
                scopes: (!scopes.is_empty()).then_some(scopes),
            };
            new.checked(now)?;
            let made = on.create_token(&user, &new).await?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"token": made.token, "id": made.id, "user": made.user})
                );
            } else {
                println!("{}", made.token);
                match &device {
                    Some(d) => eprintln!(
                        "device token {} for device {d} of user {} (shown once; `REIN_TOKEN=… rein connect --server URL --name {d}`)",
                        made.id, made.user
                    ),
                    None => eprintln!(
                        "token {} for user {} (shown once; use it as `Authorization: Bearer …` or REIN_TOKEN)",
                        made.id, made.user
                    ),
                }
            }
        }
        TokenCommand::List { user } => {
            for t in on.tokens(user.as_deref()).await? {
                if json {
                    println!("{}", serde_json::to_string(&t)?);
                } else {
                    let state = match (t.revoked_at, t.last_used_at) {
                        (Some(r), _) => format!("revoked {}", r.format("%Y-%m-%d %H:%M")),
                        (None, Some(u)) => format!("last used {}", u.format("%Y-%m-%d %H:%M")),
                        (None, None) => "never used".into(),
                    };
                    let scopes = t.scopes.as_ref().map_or("all".into(), |s| {
                        s.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
                    });
                    let expires = t.expires_at.map_or(String::new(), |e| {
                        format!("  expires {}", e.format("%Y-%m-%d %H:%M"))
                    });
                    println!(
                        "{}  {}  created {}  scopes {scopes}{expires}  {}",
                        t.id,
                        t.label.as_deref().unwrap_or("-"),
                        t.created_at.format("%Y-%m-%d %H:%M"),
                        state
                    );
                }
            }
        }
        TokenCommand::Revoke { user, id } => {
            on.revoke_token(user.as_deref(), &id).await?;
            eprintln!("revoked {id}");
        }
    }
    Ok(crate::exit::DONE)
}

impl Local {
    /// The user `name`, created when missing and `create` says so.
    async fn token_user(&self, name: &str, create: bool) -> anyhow::Result<rein_store::User> {
        let store = self.store().await?;
        if let Some(u) = store.user_by_name(name).await? {
            return Ok(u);
        }
        if !create {
            bail!("no user `{name}`");
        }
        Ok(store.create_user(name).await?)
    }
}

impl TokenAdmin for Local {
    async fn create_token(&self, user: &str, new: &NewToken) -> anyhow::Result<TokenMade> {
        let spec = new.checked(chrono::Utc::now())?;
        let u = self.token_user(user, true).await?;
        let store = self.store().await?;
        let what = match &new.device {
            Some(d) => rein_server::TokenFor::Device(d),
            None => rein_server::TokenFor::Api(&spec),
        };
        let (token, record) = rein_server::issue_token(store, &u.id, what).await?;
        Ok(TokenMade {
            token,
            id: record.id,
            user: u.name,
        })
    }

    async fn tokens(&self, user: Option<&str>) -> anyhow::Result<Vec<ApiToken>> {
        let u = self.token_user(whose(user)?, false).await?;
        Ok(self.store().await?.list_tokens(&u.id).await?)
    }

    async fn revoke_token(&self, user: Option<&str>, id: &str) -> anyhow::Result<()> {
        let user = whose(user)?;
        let u = self.token_user(user, false).await?;
        if !self.store().await?.revoke_token(&u.id, id).await? {
            bail!("user {user} has no active token {id}");
        }
        Ok(())
    }
}

/// Where a server keeps `user`'s tokens, or the caller's.
fn tokens_path(user: Option<&str>) -> String {
    match user {
        Some(u) => format!("/v1/users/{}/tokens", segment(u)),
        None => "/v1/me/tokens".to_owned(),
    }
}

/// On the database's machine there is no "you": the user is named.
fn whose(user: Option<&str>) -> anyhow::Result<&str> {
    user.ok_or_else(|| {
        anyhow::anyhow!(
            "--user NAME: whose tokens (only with --server does leaving it out mean yours)"
        )
    })
}

impl TokenAdmin for Remote {
    async fn create_token(&self, user: &str, new: &NewToken) -> anyhow::Result<TokenMade> {
        let path = format!("/v1/users/{}/tokens", segment(user));
        self.call(Method::POST, &path, Some(new)).await
    }

    async fn tokens(&self, user: Option<&str>) -> anyhow::Result<Vec<ApiToken>> {
        let list: TokenList = self
            .call(Method::GET, &tokens_path(user), None::<&()>)
            .await?;
        Ok(list.tokens)
    }

    async fn revoke_token(&self, user: Option<&str>, id: &str) -> anyhow::Result<()> {
        let path = tokens_path(user);
        let query = TokenQuery { id: id.to_owned() };
        self.send_with_query(Method::DELETE, &path, &query).await
    }
}
