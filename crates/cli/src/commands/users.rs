//! `rein user …`: who uses a server. Here, on the database's machine, the operator manages
//! every user; against a server (`--server`) only an admin may (`/v1/users`; a member is told
//! there is no such thing), except that anyone sets their own password. A disabled user's
//! tokens and browser sessions stop working at once; enabling them restores them. A password
//! is read from stdin, never from the command line.

use super::{Local, Remote, remote::segment};
use crate::named::named;
use anyhow::{anyhow, bail};
use rein_core::usage::Usd;
use rein_server::routes::users::{
    NewPassword, NewUser, SessionList, SessionsEnded, UserChange, UserList, UserOut,
};
use rein_store::{Accounts, Caps, SessionRecord, Sessions, StoreError, UserRole};
use reqwest::Method;

/// `rein user` subcommands.
#[derive(clap::Subcommand)]
pub enum UserCommand {
    /// Every user, by name.
    List,
    /// Create a user (a member unless --role admin); `rein token create --user NAME` gives
    /// them a token.
    Create {
        /// Their name (letters, digits, `-`, `_`).
        name: String,
        /// Their role.
        #[arg(long, value_parser = named::<UserRole>(), default_value = "member")]
        role: UserRole,
    },
    /// Show a user.
    Show {
        /// Their name.
        name: String,
    },
    /// Change a user's role.
    Role {
        /// Their name.
        name: String,
        /// The role.
        #[arg(value_parser = named::<UserRole>())]
        role: UserRole,
    },
    /// Disable a user: their tokens (device tokens too) stop working at once.
    Disable {
        /// Their name.
        name: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// Their name.
        name: String,
    },
    /// Set a user's password for signing in to the web UI: the new one on stdin's first line
    /// (changing your own on a server as a member: the current one on the second). Their
    /// browser sessions end.
    Password {
        /// Their name.
        name: String,
    },
    /// Set a user's caps over the server's defaults (`rein serve --daily-cost-cap` …): the
    /// flags given change, the others stay; `--clear` first returns every one to the default.
    Caps {
        /// Their name.
        name: String,
        /// What their operations may cost per UTC day, in USD.
        #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
        daily_cost: Option<Usd>,
        /// What their operations may cost per UTC month, in USD.
        #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
        monthly_cost: Option<Usd>,
        /// Tokens their operations may use per UTC day.
        #[arg(long, value_name = "TOKENS")]
        daily_tokens: Option<u64>,
        /// Tokens their operations may use per UTC month.
        #[arg(long, value_name = "TOKENS")]
        monthly_tokens: Option<u64>,
        /// Back to the server's defaults before the flags above apply.
        #[arg(long)]
        clear: bool,
    },
    /// A user's live browser sessions; `--end` ends them all at once.
    Sessions {
        /// Their name.
        name: String,
        /// End every one of them.
        #[arg(long)]
        end: bool,
    },
}

/// What `rein user` needs from where it runs.
pub trait UserAdmin {
    /// Every user.
    async fn users(&self) -> anyhow::Result<Vec<UserOut>>;

    /// Create a user with `role`.
    async fn create_user(&self, name: &str, role: UserRole) -> anyhow::Result<UserOut>;

    /// One user.
    async fn user(&self, name: &str) -> anyhow::Result<UserOut>;

    /// Change a user's role or whether they are disabled.
    async fn change_user(&self, name: &str, change: UserChange) -> anyhow::Result<UserOut>;

    /// Set a user's password.
    async fn set_password(&self, name: &str, new: &NewPassword) -> anyhow::Result<()>;

    /// A user's live browser sessions.
    async fn sessions(&self, name: &str) -> anyhow::Result<Vec<SessionRecord>>;

    /// End a user's browser sessions; how many ended.
    async fn end_sessions(&self, name: &str) -> anyhow::Result<u64>;
}

/// The password lines of stdin: the new one, and the current one when a second line has it.
fn passwords_from_stdin() -> anyhow::Result<NewPassword> {
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut input)?;
    let mut lines = input.lines();
    let password = lines.next().unwrap_or_default().to_owned();
    if password.is_empty() {
        bail!("no password on stdin (its first line is the new password)");
    }
    rein_server::signin::check_new_password(&password)?;
    let current = lines.next().filter(|l| !l.is_empty()).map(str::to_owned);
    Ok(NewPassword { password, current })
}

fn line(u: &UserOut) -> String {
    let disabled = u
        .disabled_at
        .map(|t| format!("  disabled {}", t.format("%Y-%m-%d %H:%M")))
        .unwrap_or_default();
    let c = &u.caps;
    let caps = [
        c.daily_cost.map(|v| format!("{v}/day")),
        c.monthly_cost.map(|v| format!("{v}/month")),
        c.daily_tokens.map(|v| format!("{v} tokens/day")),
        c.monthly_tokens.map(|v| format!("{v} tokens/month")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();
    let caps = if caps.is_empty() {
        String::new()
    } else {
        format!("  caps {}", caps.join(", "))
    };
    format!(
        "{:<24} {:<7} since {}{disabled}{caps}",
        u.name,
        u.role,
        u.created_at.format("%Y-%m-%d")
    )
}

fn print(u: &UserOut, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(u)?);
    } else {
        println!("{}", line(u));
    }
    Ok(())
}

/// `rein user …`.
pub async fn run(on: &impl UserAdmin, command: UserCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        UserCommand::List => {
            for u in on.users().await? {
                print(&u, json)?;
            }
        }
        UserCommand::Create { name, role } => print(&on.create_user(&name, role).await?, json)?,
        UserCommand::Show { name } => print(&on.user(&name).await?, json)?,
        UserCommand::Role { name, role } => {
            let change = UserChange {
                role: Some(role),
                ..UserChange::default()
            };
            print(&on.change_user(&name, change).await?, json)?;
        }
        UserCommand::Disable { name } | UserCommand::Enable { name } => {
            let disabled = on.user(&name).await?.disabled_at.is_none();
            let change = UserChange {
                disabled: Some(disabled),
                ..UserChange::default()
            };
            print(&on.change_user(&name, change).await?, json)?;
        }
        UserCommand::Caps {
            name,
            daily_cost,
            monthly_cost,
            daily_tokens,
            monthly_tokens,
            clear,
        } => {
            let before = if clear {
                Caps::default()
            } else {
                on.user(&name).await?.caps
            };
            let caps = Caps {
                daily_cost,
                monthly_cost,
                daily_tokens,
                monthly_tokens,
            }
            .over(before);
            let change = UserChange {
                caps: Some(caps),
                ..UserChange::default()
            };
            print(&on.change_user(&name, change).await?, json)?;
        }
        UserCommand::Password { name } => {
            on.set_password(&name, &passwords_from_stdin()?).await?;
            eprintln!("password of {name} set; their browser sessions ended");
        }
        UserCommand::Sessions { name, end: true } => {
            let ended = on.end_sessions(&name).await?;
            eprintln!("{}", crate::output::count(ended, "session") + " ended");
        }
        UserCommand::Sessions { name, end: false } => {
            for s in on.sessions(&name).await? {
                if json {
                    println!("{}", serde_json::to_string(&s)?);
                } else {
                    let used = s.last_used_at.map_or("never used".into(), |t| {
                        format!("last used {}", t.format("%Y-%m-%d %H:%M"))
                    });
                    println!(
                        "{}  signed in {}  {used}  expires {}  {}",
                        s.id,
                        s.created_at.format("%Y-%m-%d %H:%M"),
                        s.expires_at.format("%Y-%m-%d %H:%M"),
                        s.client.as_deref().unwrap_or("-")
                    );
                }
            }
        }
    }
    Ok(crate::exit::DONE)
}

impl UserAdmin for Local {
    async fn users(&self) -> anyhow::Result<Vec<UserOut>> {
        let users = self.store().await?.list_users().await?;
        Ok(users.into_iter().map(UserOut::from).collect())
    }

    async fn create_user(&self, name: &str, role: UserRole) -> anyhow::Result<UserOut> {
        rein_operation::profile::check_name(name).map_err(|e| anyhow!("user name: {e}"))?;
        let store = self.store().await?;
        let user = match store.create_user(name).await {
            Ok(u) => u,
            Err(StoreError::Conflict(_)) => bail!("user `{name}` already exists"),
            Err(e) => return Err(e.into()),
        };
        store.set_role(&user.id, role).await?;
        self.user(name).await
    }

    async fn user(&self, name: &str) -> anyhow::Result<UserOut> {
        self.store()
            .await?
            .user_by_name(name)
            .await?
            .map(UserOut::from)
            .ok_or_else(|| anyhow!("no user `{name}`"))
    }

    async fn change_user(&self, name: &str, change: UserChange) -> anyhow::Result<UserOut> {
        let store = self.store().await?;
        let user = store
            .user_by_name(name)
            .await?
            .ok_or_else(|| anyhow!("no user `{name}`"))?;
        if let Some(role) = change.role {
            store.set_role(&user.id, role).await?;
        }
        if let Some(disabled) = change.disabled {
            store.set_disabled(&user.id, disabled).await?;
        }
        if let Some(caps) = &change.caps {
            store.set_caps(&user.id, caps).await?;
        }
        self.user(name).await
    }

    async fn set_password(&self, name: &str, new: &NewPassword) -> anyhow::Result<()> {
        let user = self.named_user(name).await?;
        let password = new.password.clone();
        let phc =
            tokio::task::spawn_blocking(move || rein_server::signin::hash_password(&password))
                .await??;
        let store = self.store().await?;
        store.set_password(&user.id, Some(&phc)).await?;
        store.end_sessions(&user.id, chrono::Utc::now()).await?;
        Ok(())
    }

    async fn sessions(&self, name: &str) -> anyhow::Result<Vec<SessionRecord>> {
        let user = self.named_user(name).await?;
        let store = self.store().await?;
        Ok(store.list_sessions(&user.id, chrono::Utc::now()).await?)
    }

    async fn end_sessions(&self, name: &str) -> anyhow::Result<u64> {
        let user = self.named_user(name).await?;
        let store = self.store().await?;
        Ok(store.end_sessions(&user.id, chrono::Utc::now()).await?)
    }
}

impl Local {
    /// The user of this name, or an error naming it.
    async fn named_user(&self, name: &str) -> anyhow::Result<rein_store::User> {
        self.store()
            .await?
            .user_by_name(name)
            .await?
            .ok_or_else(|| anyhow!("no user `{name}`"))
    }
}

impl UserAdmin for Remote {
    async fn users(&self) -> anyhow::Result<Vec<UserOut>> {
        let list: UserList = self.call(Method::GET, "/v1/users", None::<&()>).await?;
        Ok(list.users)
    }

    async fn create_user(&self, name: &str, role: UserRole) -> anyhow::Result<UserOut> {
        let body = NewUser {
            name: name.to_owned(),
            role: Some(role),
        };
        self.call(Method::POST, "/v1/users", Some(&body)).await
    }

    async fn user(&self, name: &str) -> anyhow::Result<UserOut> {
        let path = format!("/v1/users/{}", segment(name));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn change_user(&self, name: &str, change: UserChange) -> anyhow::Result<UserOut> {
        let path = format!("/v1/users/{}", segment(name));
        self.call(Method::PATCH, &path, Some(&change)).await
    }

    async fn set_password(&self, name: &str, new: &NewPassword) -> anyhow::Result<()> {
        let path = format!("/v1/users/{}/password", segment(name));
        self.send_body(Method::PUT, &path, new).await
    }

    async fn sessions(&self, name: &str) -> anyhow::Result<Vec<SessionRecord>> {
        let path = format!("/v1/users/{}/sessions", segment(name));
        let list: SessionList = self.call(Method::GET, &path, None::<&()>).await?;
        Ok(list.sessions)
    }

    async fn end_sessions(&self, name: &str) -> anyhow::Result<u64> {
        let path = format!("/v1/users/{}/sessions", segment(name));
        let ended: SessionsEnded = self.call(Method::DELETE, &path, None::<&()>).await?;
        Ok(ended.ended)
    }
}
