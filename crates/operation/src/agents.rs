//! The agents an operation may delegate to: its owner's stored agents (and, for the local CLI,
//! the configuration file's), looked up by name when a task names one and listed in the
//! delegation tool's manifest.

use crate::host::{StoredAgent, stored_agent, stored_from};
use crate::profile::AgentProfile;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::spec::AgentRef;
use rein_store::{Accounts, StoreError};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where a process finds agents by name, per owner.
pub trait AgentDirectory: Send + Sync {
    /// The agents of `owner` (`None`: the local user), by name.
    fn agents<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<StoredAgent>, StoreError>>;
    /// The agent `name` of `owner`.
    fn agent<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredAgent>, StoreError>>;
    /// Record that what applies to agent `name` of `owner` changed outside its settings (a
    /// grant made or revoked for it): a stored agent gets a new version; its new version, or
    /// `None` for an agent that is not stored (or not there).
    fn note_change<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>>;
}

/// Agents kept in the store, plus fixed ones (the CLI's configuration file) under the names
/// the store does not have.
pub struct StoredAgents {
    /// The accounts store.
    pub accounts: Arc<dyn Accounts>,
    /// The user whose agents an operation without an owner uses (the CLI's local user).
    pub local_user: Option<String>,
    /// Agents not in the store, by name.
    pub fixed: BTreeMap<String, AgentProfile>,
}

impl StoredAgents {
    fn fixed_agent(&self, name: &str) -> Option<StoredAgent> {
        self.fixed.get(name).map(|profile| StoredAgent {
            profile: profile.clone(),
            agent: AgentRef {
                name: name.to_owned(),
                version: None,
            },
        })
    }

    fn user<'a>(&'a self, owner: Option<&'a str>) -> Option<&'a str> {
        owner.or(self.local_user.as_deref())
    }
}

impl AgentDirectory for StoredAgents {
    fn agents<'a>(
        &'a self,
        owner: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<StoredAgent>, StoreError>> {
        async move {
            let mut out: BTreeMap<String, StoredAgent> = BTreeMap::new();
            if owner.is_none() {
                for name in self.fixed.keys() {
                    if let Some(a) = self.fixed_agent(name) {
                        out.insert(name.clone(), a);
                    }
                }
            }
            if let Some(user) = self.user(owner) {
                for record in self.accounts.list_agents(user).await? {
                    let a = stored_from(record)?;
                    out.insert(a.agent.name.clone(), a);
                }
            }
            Ok(out.into_values().collect())
        }
        .boxed()
    }

    fn agent<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredAgent>, StoreError>> {
        async move {
            if let Some(user) = self.user(owner)
                && let Some(a) = stored_agent(&*self.accounts, user, name).await?
            {
                return Ok(Some(a));
            }
            Ok(if owner.is_none() {
                self.fixed_agent(name)
            } else {
                None
            })
        }
        .boxed()
    }

    fn note_change<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        async move {
            let Some(user) = self.user(owner) else {
                return Ok(None);
            };
            let Some(record) = self.accounts.get_agent(user, name).await? else {
                return Ok(None);
            };
            // Written again as it is: the store counts the version up.
            Ok(Some(self.accounts.put_agent(&record).await?))
        }
        .boxed()
    }
}
