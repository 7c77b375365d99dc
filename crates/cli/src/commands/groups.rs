//! `rein group`: groups of your agents with a supervisor (`rein run --group`, `rein chat
//! --group`), on this machine or a server; the settings and their validation are
//! `rein_operation::group`'s.

use super::{Local, Remote, remote::segment};
use anyhow::{anyhow, bail};
use chrono::Utc;
use rein_core::spec::SpeakerPolicy;
use rein_operation::GroupProfile;
use rein_operation::profile::check_name;
use rein_server::routes::groups::{Group, NewGroup};
use rein_store::{Accounts, GroupRecord};
use reqwest::Method;

/// A group's settings on the command line (given ones win when editing).
#[derive(clap::Args, Default)]
pub struct GroupFlags {
    /// Its agents, in speaking order (2 to 8): `--members ann,bob,cy`.
    #[arg(long, value_delimiter = ',')]
    pub members: Option<Vec<String>>,
    /// Who speaks next: the supervisor's model decides (default), in turn, or a mentioned
    /// member first.
    #[arg(long, value_parser = policy())]
    pub policy: Option<SpeakerPolicy>,
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
            policy: self.policy.or(base.policy),
            max_rounds: self.max_rounds.or(base.max_rounds),
            model: self.model.or(base.model),
            instructions: self.instructions.or(base.instructions),
            cost_limit: self.cost_limit.or(base.cost_limit),
            token_limit: self.token_limit.or(base.token_limit),
        }
    }
}

/// `--policy`: the words the command line takes (kebab-case; the API and stored settings write
/// `SpeakerPolicy` in snake_case), parsed into the policy as the flag is read.
fn policy() -> impl clap::builder::TypedValueParser<Value = SpeakerPolicy> {
    use clap::builder::TypedValueParser;
    const WORDS: [(&str, SpeakerPolicy); 3] = [
        ("model", SpeakerPolicy::Model),
        ("round-robin", SpeakerPolicy::RoundRobin),
        ("mentioned-first", SpeakerPolicy::MentionedFirst),
    ];
    clap::builder::PossibleValuesParser::new(WORDS.map(|(w, _)| w)).try_map(|word| {
        WORDS
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, p)| *p)
            .ok_or_else(|| format!("`{word}` is not a speaker policy"))
    })
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

/// What `rein group` needs from where it runs.
pub trait Groups {
    /// Your groups.
    async fn groups(&self) -> anyhow::Result<Vec<Group>>;

    /// One group (an error naming it when there is none).
    async fn group(&self, name: &str) -> anyhow::Result<Group>;

    /// Create a group of your agents (refused when the name is taken or a member is not an
    /// agent of yours).
    async fn create_group(&self, name: &str, config: GroupProfile) -> anyhow::Result<Group>;

    /// Replace a group's settings (its version counts up).
    async fn update_group(&self, name: &str, config: GroupProfile) -> anyhow::Result<Group>;

    /// Delete a group (its past runs stay).
    async fn delete_group(&self, name: &str) -> anyhow::Result<()>;
}

/// `rein group …`.
pub async fn run(on: &impl Groups, command: GroupCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        GroupCommand::Create { name, flags } => {
            check_name(&name)?;
            let g = flags.over(GroupProfile::default());
            g.validate()?;
            on.create_group(&name, g).await?;
            eprintln!("created group {name}");
        }
        GroupCommand::List => {
            for g in on.groups().await? {
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"name": g.name, "config": g.config, "version": g.version})
                    );
                } else {
                    println!("{:<20} {}", g.name, g.config.members.join(", "));
                }
            }
        }
        GroupCommand::Show { name } => {
            let g = on.group(&name).await?;
            crate::agent_profile::print(&name, &g.config, g.version, json)?;
        }
        GroupCommand::Edit { name, flags } => {
            let current = on.group(&name).await?;
            let config = flags.over(current.config);
            config.validate()?;
            let g = on.update_group(&name, config).await?;
            crate::agent_profile::print(&name, &g.config, g.version, json)?;
        }
        GroupCommand::Delete { name } => {
            on.delete_group(&name).await?;
            eprintln!("deleted group {name}");
        }
    }
    Ok(crate::exit::DONE)
}

/// A stored group as the API shows it.
fn shown(r: GroupRecord) -> anyhow::Result<Group> {
    Ok(Group {
        config: serde_json::from_value(r.config)
            .map_err(|e| anyhow!("stored group `{}` cannot be read: {e}", r.name))?,
        version: r.version,
        name: r.name,
        updated_at: r.updated_at.to_rfc3339(),
    })
}

impl Local {
    /// Refuses a group naming an agent the local user does not have.
    async fn check_members(&self, user: &str, g: &GroupProfile) -> anyhow::Result<()> {
        let store = self.store().await?;
        for m in &g.members {
            if store.get_agent(user, m).await?.is_none() {
                bail!("no agent `{m}` (create it with `rein agent create {m}`)");
            }
        }
        Ok(())
    }

    async fn group_record(&self, name: &str) -> anyhow::Result<GroupRecord> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        store
            .get_group(&user.id, name)
            .await?
            .ok_or_else(|| anyhow!("no group `{name}`"))
    }
}

impl Groups for Local {
    async fn groups(&self) -> anyhow::Result<Vec<Group>> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        store
            .list_groups(&user.id)
            .await?
            .into_iter()
            .map(shown)
            .collect()
    }

    async fn group(&self, name: &str) -> anyhow::Result<Group> {
        shown(self.group_record(name).await?)
    }

    async fn create_group(&self, name: &str, config: GroupProfile) -> anyhow::Result<Group> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        if store.get_group(&user.id, name).await?.is_some() {
            bail!("group `{name}` already exists (change it with `rein group edit`)");
        }
        self.check_members(&user.id, &config).await?;
        let now = Utc::now();
        let mut record = GroupRecord {
            owner: user.id,
            name: name.to_owned(),
            config: serde_json::to_value(&config)?,
            version: 0,
            created_at: now,
            updated_at: now,
        };
        record.version = store.put_group(&record).await?;
        shown(record)
    }

    async fn update_group(&self, name: &str, config: GroupProfile) -> anyhow::Result<Group> {
        let mut r = self.group_record(name).await?;
        self.check_members(&r.owner, &config).await?;
        r.config = serde_json::to_value(&config)?;
        r.updated_at = Utc::now();
        r.version = self.store().await?.put_group(&r).await?;
        shown(r)
    }

    async fn delete_group(&self, name: &str) -> anyhow::Result<()> {
        let store = self.store().await?;
        let user = crate::agent_profile::local_user(store).await?;
        if !store.delete_group(&user.id, name).await? {
            bail!("no group `{name}`");
        }
        Ok(())
    }
}

impl Groups for Remote {
    async fn groups(&self) -> anyhow::Result<Vec<Group>> {
        self.call(Method::GET, "/v1/groups", None::<&()>).await
    }

    async fn group(&self, name: &str) -> anyhow::Result<Group> {
        let path = format!("/v1/groups/{}", segment(name));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn create_group(&self, name: &str, config: GroupProfile) -> anyhow::Result<Group> {
        let body = NewGroup {
            name: name.to_owned(),
            config,
        };
        self.call(Method::POST, "/v1/groups", Some(&body)).await
    }

    async fn update_group(&self, name: &str, config: GroupProfile) -> anyhow::Result<Group> {
        let path = format!("/v1/groups/{}", segment(name));
        self.call(Method::PUT, &path, Some(&config)).await
    }

    async fn delete_group(&self, name: &str) -> anyhow::Result<()> {
        let path = format!("/v1/groups/{}", segment(name));
        self.call_empty(Method::DELETE, &path).await
    }
}
