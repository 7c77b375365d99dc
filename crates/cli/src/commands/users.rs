//! `rein user …`: who uses a server. Here, on the database's machine, the operator manages
//! every user; against a server (`--server`) only an admin may (`/v1/users`; a member is told
//! there is no such thing). A disabled user's tokens stop working at once; enabling them
//! restores them.

use super::{Local, Remote, remote::segment};
use crate::named::named;
use anyhow::{anyhow, bail};
use rein_server::routes::users::{NewUser, UserChange, UserList, UserOut};
use rein_store::{Accounts, StoreError, UserRole};
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
}

fn line(u: &UserOut) -> String {
    let disabled = u
        .disabled_at
        .map(|t| format!("  disabled {}", t.format("%Y-%m-%d %H:%M")))
        .unwrap_or_default();
    format!(
        "{:<24} {:<7} since {}{disabled}",
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
                disabled: None,
            };
            print(&on.change_user(&name, change).await?, json)?;
        }
        UserCommand::Disable { name } | UserCommand::Enable { name } => {
            let disabled = on.user(&name).await?.disabled_at.is_none();
            let change = UserChange {
                role: None,
                disabled: Some(disabled),
            };
            print(&on.change_user(&name, change).await?, json)?;
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
        self.user(name).await
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
}
