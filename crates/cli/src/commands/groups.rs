//! `rein group`: groups of the local user's agents with a supervisor (`rein run --group`,
//! `rein chat --group`); the settings and their validation are `rein_operation::group`'s.

use anyhow::{anyhow, bail};
use chrono::Utc;
use rein_core::spec::SpeakerPolicy;
use rein_operation::GroupProfile;
use rein_operation::profile::check_name;
use rein_store::{Accounts, GroupRecord, SqlStore};

/// A group's settings on the command line (given ones win when editing).
#[derive(clap::Args, Default)]
pub struct GroupFlags {
    /// Its agents, in speaking order (2 to 8): `--members ann,bob,cy`.
    #[arg(long, value_delimiter = ',')]
    pub members: Option<Vec<String>>,
    /// Who speaks next: the supervisor's model decides (default), in turn, or a mentioned
    /// member first.
    #[arg(long, value_parser = ["model", "round-robin", "mentioned-first"])]
    pub policy: Option<String>,
    /// Turns at most per message (default 6).
    #[arg(long)]
    pub max_rounds: Option<u32>,
    /// The supervisor's model (`provider/model`).
    #[arg(long)]
    pub model: Option<String>,
    /// What the supervisor is told about the group's purpose.
    #[arg(long)]
    pub instructions: Option<String>,
    /// Cost limit of one group run, in USD.
    #[arg(long, value_name = "USD")]
    pub cost_limit: Option<f64>,
    /// Token limit of one group run.
    #[arg(long)]
    pub token_limit: Option<u64>,
}

impl GroupFlags {
    /// `base` with the given flags over it.
    fn over(self, base: GroupProfile) -> GroupProfile {
        GroupProfile {
            members: self.members.unwrap_or(base.members),
            policy: self
                .policy
                .as_deref()
                .map(|p| match p {
                    "round-robin" => SpeakerPolicy::RoundRobin,
                    "mentioned-first" => SpeakerPolicy::MentionedFirst,
                    _ => SpeakerPolicy::Model,
                })
                .or(base.policy),
            max_rounds: self.max_rounds.or(base.max_rounds),
            model: self.model.or(base.model),
            instructions: self.instructions.or(base.instructions),
            cost_limit: self.cost_limit.or(base.cost_limit),
            token_limit: self.token_limit.or(base.token_limit),
        }
    }
}

/// `rein group` subcommands.
#[derive(clap::Subcommand)]
pub enum GroupCommand {
    /// Create a group of existing agents.
    Create {
        /// Name (letters, digits, `-`, `_`).
        name: String,
        #[command(flatten)]
        flags: GroupFlags,
    },
    /// List groups.
    List,
    /// Show a group.
    Show {
        /// Name.
        name: String,
    },
    /// Change the given settings of a group.
    Edit {
        /// Name.
        name: String,
        #[command(flatten)]
        flags: GroupFlags,
    },
    /// Delete a group (its past runs stay).
    Delete {
        /// Name.
        name: String,
    },
}

/// Refuses a group naming an agent the local user does not have.
async fn check_members(store: &SqlStore, user: &str, g: &GroupProfile) -> anyhow::Result<()> {
    g.validate()?;
    for m in &g.members {
        if store.get_agent(user, m).await?.is_none() {
            bail!("no agent `{m}` (create it with `rein agent create {m}`)");
        }
    }
    Ok(())
}

/// `rein group …` against the local database.
pub async fn command(store: &SqlStore, command: GroupCommand, json: bool) -> anyhow::Result<()> {
    let user = crate::agent_profile::local_user(store).await?;
    let owner = user.id.as_str();
    let load = |name: String| async move {
        let r = store
            .get_group(owner, &name)
            .await?
            .ok_or_else(|| anyhow!("no group `{name}`"))?;
        let g: GroupProfile = serde_json::from_value(r.config.clone())?;
        anyhow::Ok((r, g))
    };
    match command {
        GroupCommand::Create { name, flags } => {
            check_name(&name)?;
            if store.get_group(&user.id, &name).await?.is_some() {
                bail!("group `{name}` already exists (change it with `rein group edit`)");
            }
            let g = flags.over(GroupProfile::default());
            check_members(store, &user.id, &g).await?;
            let now = Utc::now();
            store
                .put_group(&GroupRecord {
                    owner: user.id.clone(),
                    name: name.clone(),
                    config: serde_json::to_value(&g)?,
                    version: 0,
                    created_at: now,
                    updated_at: now,
                })
                .await?;
            eprintln!("created group {name}");
        }
        GroupCommand::List => {
            for r in store.list_groups(&user.id).await? {
                let g: GroupProfile = serde_json::from_value(r.config)?;
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"name": r.name, "config": g, "version": r.version})
                    );
                } else {
                    println!("{:<20} {}", r.name, g.members.join(", "));
                }
            }
        }
        GroupCommand::Show { name } => {
            let (r, g) = load(name.clone()).await?;
            crate::agent_profile::print(&name, &g, r.version, json)?;
        }
        GroupCommand::Edit { name, flags } => {
            let (mut r, current) = load(name.clone()).await?;
            let g = flags.over(current);
            check_members(store, &user.id, &g).await?;
            r.config = serde_json::to_value(&g)?;
            r.updated_at = Utc::now();
            let version = store.put_group(&r).await?;
            crate::agent_profile::print(&name, &g, version, json)?;
        }
        GroupCommand::Delete { name } => {
            if !store.delete_group(&user.id, &name).await? {
                bail!("no group `{name}`");
            }
            eprintln!("deleted group {name}");
        }
    }
    Ok(())
}
