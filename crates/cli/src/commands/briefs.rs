//! `rein brief …`: the local user's briefs (what task runs and agents report for attention):
//! list them (unresolved by default), show one (which marks it read), resolve one with an
//! action it offers (`retry` runs its task here), and set where urgent ones are posted (the
//! hook `rein serve` and `rein worker` deliver to).

use crate::agent_profile;
use crate::invocation::Invocation;
use anyhow::anyhow;
use rein_scheduler::{SystemClock, TaskService};
use rein_store::{Brief, BriefHook, Briefs, SqlStore};
use std::sync::Arc;

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

/// Run a `rein brief` command.
pub async fn command(
    store: Arc<SqlStore>,
    command: BriefCommand,
    given: &Invocation,
) -> anyhow::Result<u8> {
    let tasks = TaskService::new(store.clone(), Arc::new(SystemClock));
    let user = agent_profile::local_user(&store).await?;
    let json = given.json;
    match command {
        BriefCommand::List { all, task } => {
            for b in tasks.briefs(&user.id, task.as_deref(), !all, 500).await? {
                if json {
                    println!("{}", serde_json::to_string(&b)?);
                } else {
                    println!("{}", line(&b));
                }
            }
        }
        BriefCommand::Show { id } => {
            let b = tasks.open_brief(&user.id, &id).await?;
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
            let launcher = crate::tasks::launcher(&store, given, &user.id);
            let (b, started) = tasks
                .resolve_brief(&user.id, &id, &action, comment.as_deref(), &launcher)
                .await?;
            println!("{}", line(&b));
            if let Some(op) = started {
                // A retry runs the task here, as `rein task run` does.
                let task = b.task_id.as_deref().unwrap_or_default();
                return crate::tasks::finish_local_run(&store, &tasks, &launcher, task, &op).await;
            }
        }
        BriefCommand::Hook { command } => match command {
            HookCommand::Set { url, secret } => {
                // The local user is the operator: a hook on this machine's network is fine.
                rein_server::brief_hooks::check_hook(&url, &secret, true).await?;
                store
                    .set_brief_hook(&BriefHook {
                        owner: user.id.clone(),
                        url: url.clone(),
                        secret,
                        created_at: chrono::Utc::now(),
                    })
                    .await?;
                println!("urgent briefs go to {url}");
            }
            HookCommand::Show => match store.brief_hook(&user.id).await? {
                Some(h) => println!("{} (since {})", h.url, h.created_at.to_rfc3339()),
                None => return Err(anyhow!("no brief hook is set")),
            },
            HookCommand::Remove => {
                if !store.delete_brief_hook(&user.id).await? {
                    return Err(anyhow!("no brief hook is set"));
                }
            }
        },
    }
    Ok(crate::exit::DONE)
}
