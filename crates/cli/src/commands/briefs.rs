//! `rein brief …`: your briefs (what task runs and agents report for attention), on this
//! machine (the local user's) or on a server (`--server`, yours): list them (unresolved by
//! default), show one (which marks it read), resolve one with an action it offers (`retry` runs
//! its task where the brief is, followed to where it stops), and set where urgent ones are
//! posted (the hook `rein serve` and `rein worker` deliver to).

use super::{Local, Remote, remote::segment};
use crate::agent_profile;
use anyhow::{anyhow, bail};
use rein_server::routes::briefs::{BriefList, BriefQuery, HookIn, HookOut, ResolveIn, Resolved};
use rein_store::{Brief, BriefHook, Briefs};
use reqwest::Method;

/// `rein brief` subcommands.
#[derive(clap::Subcommand)]
pub enum BriefCommand {
    /// List briefs, newest first (unresolved ones unless --all).
    List {
        /// Resolved ones too.
        #[arg(long)]
        all: bool,
        /// Only this task's.
        #[arg(long)]
        task: Option<String>,
    },
    /// Show a brief (marks it read).
    Show {
        /// Brief id.
        id: String,
    },
    /// Resolve a brief with one of its actions (retry, approve, feedback, acknowledge, …).
    Resolve {
        /// Brief id.
        id: String,
        /// The action.
        action: String,
        /// What you say (required for feedback: the task's next run reads it).
        #[arg(long)]
        comment: Option<String>,
    },
    /// Where urgent briefs are posted (a signed JSON POST, delivered by rein serve or worker).
    Hook {
        #[command(subcommand)]
        command: HookCommand,
    },
}

/// `rein brief hook` subcommands.
#[derive(clap::Subcommand)]
pub enum HookCommand {
    /// Post urgent briefs to URL, signed with SECRET (HMAC-SHA256 in X-Rein-Signature).
    Set {
        /// http:// or https:// URL.
        url: String,
        /// 16 to 256 characters.
        #[arg(long)]
        secret: String,
    },
    /// Show the hook.
    Show,
    /// Stop posting.
    Remove,
}

fn line(b: &Brief) -> String {
    let state = match (&b.resolution, b.read_at) {
        (Some(r), _) => format!("resolved: {}", r.action),
        (None, Some(_)) => "read".to_owned(),
        (None, None) => "unread".to_owned(),
    };
    format!(
        "{}  {:<6} {:<8} {:<18} {}",
        b.id,
        b.priority.as_str(),
        b.kind.as_str(),
        state,
        b.title
    )
}

/// What `rein brief` needs from where it runs.
pub trait Inbox {
    /// Your briefs, newest first: unresolved ones unless `all`, only `task`'s when given.
    async fn briefs(&self, all: bool, task: Option<String>) -> anyhow::Result<Vec<Brief>>;

    /// One brief, marked read.
    async fn open_brief(&self, id: &str) -> anyhow::Result<Brief>;

    /// Resolve a brief with `action`; `resolved` sees it as resolved. When the action starts
    /// a run (`retry`), the run is then followed to where it stops: its exit code.
    async fn resolve_brief(
        &self,
        id: &str,
        action: &str,
        comment: Option<&str>,
        resolved: &mut (dyn FnMut(&Brief) + Send),
    ) -> anyhow::Result<Option<u8>>;

    /// Where urgent briefs are posted, and since when.
    async fn brief_hook(&self) -> anyhow::Result<HookOut>;

    /// Post urgent briefs to `url`, signed with `secret`.
    async fn set_brief_hook(&self, url: &str, secret: &str) -> anyhow::Result<()>;

    /// Stop posting them.
    async fn remove_brief_hook(&self) -> anyhow::Result<()>;
}

/// Run a `rein brief` command.
pub async fn run(on: &impl Inbox, command: BriefCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        BriefCommand::List { all, task } => {
            for b in on.briefs(all, task).await? {
                if json {
                    println!("{}", serde_json::to_string(&b)?);
                } else {
                    println!("{}", line(&b));
                }
            }
        }
        BriefCommand::Show { id } => {
            let b = on.open_brief(&id).await?;
            if json {
                println!("{}", serde_json::to_string(&b)?);
            } else {
                println!("{}\n\n{}", line(&b), b.summary);
                for a in &b.artifacts {
                    println!("  {}: {}", a.kind, a.reference);
                }
                if b.resolution.is_none() {
                    let keys: Vec<&str> = b.actions.iter().map(|a| a.key.as_str()).collect();
                    println!(
                        "resolve with: rein brief resolve {id} {{{}}}",
                        keys.join("|")
                    );
                }
            }
        }
        BriefCommand::Resolve {
            id,
            action,
            comment,
        } => {
            let ran = on
                .resolve_brief(&id, &action, comment.as_deref(), &mut |b| {
                    println!("{}", line(b));
                })
                .await?;
            if let Some(code) = ran {
                return Ok(code);
            }
        }
        BriefCommand::Hook { command } => match command {
            HookCommand::Set { url, secret } => {
                on.set_brief_hook(&url, &secret).await?;
                println!("urgent briefs go to {url}");
            }
            HookCommand::Show => {
                let h = on.brief_hook().await?;
                println!("{} (since {})", h.url, h.created_at.to_rfc3339());
            }
            HookCommand::Remove => on.remove_brief_hook().await?,
        },
    }
    Ok(crate::exit::DONE)
}

impl Inbox for Local {
    async fn briefs(&self, all: bool, task: Option<String>) -> anyhow::Result<Vec<Brief>> {
        let (tasks, user) = self.task_service().await?;
        Ok(tasks.briefs(&user, task.as_deref(), !all, 500).await?)
    }

    async fn open_brief(&self, id: &str) -> anyhow::Result<Brief> {
        let (tasks, user) = self.task_service().await?;
        Ok(tasks.open_brief(&user, id).await?)
    }

    async fn resolve_brief(
        &self,
        id: &str,
        action: &str,
        comment: Option<&str>,
        resolved: &mut (dyn FnMut(&Brief) + Send),
    ) -> anyhow::Result<Option<u8>> {
        let (tasks, user) = self.task_service().await?;
        let store = self.store().await?;
        let launcher = super::tasks::launcher(store, &self.given, &user);
        let (b, started) = tasks
            .resolve_brief(&user, id, action, comment, &launcher)
            .await?;
        resolved(&b);
        let Some(op) = started else {
            return Ok(None);
        };
        // A retry runs the task here, as `rein task run` does.
        let task = b.task_id.as_deref().unwrap_or_default();
        let code = super::tasks::finish_local_run(store, &tasks, &launcher, task, &op).await?;
        Ok(Some(code))
    }

    async fn brief_hook(&self) -> anyhow::Result<HookOut> {
        let user = agent_profile::local_user(self.store().await?).await?;
        let h = self
            .store()
            .await?
            .brief_hook(&user.id)
            .await?
            .ok_or_else(|| anyhow!("no brief hook is set"))?;
        Ok(HookOut {
            url: h.url,
            created_at: h.created_at,
        })
    }

    async fn set_brief_hook(&self, url: &str, secret: &str) -> anyhow::Result<()> {
        // The local user is the operator: a hook on this machine's network is fine.
        rein_server::brief_hooks::check_hook(url, secret, true).await?;
        let store = self.store().await?;
        let user = agent_profile::local_user(store).await?;
        store
            .set_brief_hook(&BriefHook {
                owner: user.id,
                url: url.to_owned(),
                secret: secret.to_owned(),
                created_at: chrono::Utc::now(),
            })
            .await?;
        Ok(())
    }

    async fn remove_brief_hook(&self) -> anyhow::Result<()> {
        let store = self.store().await?;
        let user = agent_profile::local_user(store).await?;
        if !store.delete_brief_hook(&user.id).await? {
            bail!("no brief hook is set");
        }
        Ok(())
    }
}

impl Inbox for Remote {
    async fn briefs(&self, all: bool, task: Option<String>) -> anyhow::Result<Vec<Brief>> {
        let list: BriefList = self
            .get(
                "/v1/briefs",
                &BriefQuery {
                    unresolved: !all,
                    task,
                    limit: Some(500),
                },
            )
            .await?;
        Ok(list.briefs)
    }

    async fn open_brief(&self, id: &str) -> anyhow::Result<Brief> {
        let path = format!("/v1/briefs/{}", segment(id));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn resolve_brief(
        &self,
        id: &str,
        action: &str,
        comment: Option<&str>,
        resolved: &mut (dyn FnMut(&Brief) + Send),
    ) -> anyhow::Result<Option<u8>> {
        let path = format!("/v1/briefs/{}/resolve", segment(id));
        let body = ResolveIn {
            action: action.to_owned(),
            comment: comment.map(str::to_owned),
        };
        let r: Resolved = self.call(Method::POST, &path, Some(&body)).await?;
        resolved(&r.brief);
        let Some(op) = r.operation_id else {
            return Ok(None);
        };
        // A retry runs on the server: followed as `rein --server run` follows a run.
        let id = super::operation_id(&op)?;
        let end = self.follow_new(id).await?;
        Ok(Some(super::decide::finish(self, id, &end).await?))
    }

    async fn brief_hook(&self) -> anyhow::Result<HookOut> {
        self.call(Method::GET, "/v1/brief-hook", None::<&()>).await
    }

    async fn set_brief_hook(&self, url: &str, secret: &str) -> anyhow::Result<()> {
        let body = HookIn {
            url: url.to_owned(),
            secret: secret.to_owned(),
        };
        let _: HookOut = self
            .call(Method::PUT, "/v1/brief-hook", Some(&body))
            .await?;
        Ok(())
    }

    async fn remove_brief_hook(&self) -> anyhow::Result<()> {
        self.call_empty(Method::DELETE, "/v1/brief-hook").await
    }
}
