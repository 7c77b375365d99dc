//! Grants on the driver's side: the grants that apply to an operation are loaded from the store
//! before each step its brain decides (a revoked one stops at the next call); approving a call
//! "always" records a grant and approves it, with every other pending call of the tree the
//! grant now covers; revoking one records a new version of the agent it was made for.

use super::open::Loaded;
use super::{Decision, Driver, RunEnd};
use crate::error::DriverError;
use crate::grants::{GrantError, root_of, subject, target};
use rein_core::engine::is_question;
use rein_core::intervention::GrantScope;
use rein_core::{AgentState, InterventionChecker, OperationId};
use rein_store::{GrantRecord, NewGrant};

impl Driver {
    /// The calls waiting for a person anywhere in `id`'s tree, each with why it asks.
    pub async fn pending(
        &self,
        id: OperationId,
    ) -> Result<Vec<rein_store::Intervention>, DriverError> {
        Ok(crate::tree::pending_approvals(&*self.store, id).await?)
    }

    /// Put the grants that apply to `run` now into `state` (replacing what it held).
    pub(super) async fn load_grants(
        &self,
        run: &Loaded,
        state: &mut AgentState,
    ) -> Result<(), DriverError> {
        let root = root_of(run.id, &run.spec);
        let subject = subject(&run.spec, &root, &run.topic_id);
        state.intervention.grants = self.store.grants_for(&subject).await?;
        Ok(())
    }

    /// Approve pending call `call` of `id`'s tree and grant its tool for `scope` (see
    /// [`Driver::grant_call`]); the other pending calls the grant covers are approved with it.
    /// Returns where the operation stopped and the grant.
    pub async fn approve_always(
        &self,
        id: OperationId,
        call: &str,
        scope: GrantScope,
        by: Option<&str>,
    ) -> Result<(RunEnd, GrantRecord), DriverError> {
        let (grant, covered) = self.grant_call(id, call, scope, by).await?;
        let mut end = self
            .decide(id, Some(&[call.to_owned()]), Decision::Approve, by)
            .await?;
        if !covered.is_empty() && matches!(end, RunEnd::WaitingForHuman { .. }) {
            let by = format!("grant {}", grant.id);
            end = self
                .decide(id, Some(&covered), Decision::Approve, Some(&by))
                .await?;
        }
        Ok((end, grant))
    }

    /// Grant the tool of pending call `call` of `id`'s tree for `scope`: from now on it runs
    /// unasked there (never what the blacklist, the guard or a global audit flags, which is
    /// refused here). The call itself is not decided; returns the grant and the other pending
    /// calls of the tree it now covers, as the checker decides them.
    pub async fn grant_call(
        &self,
        id: OperationId,
        call: &str,
        scope: GrantScope,
        by: Option<&str>,
    ) -> Result<(GrantRecord, Vec<String>), DriverError> {
        let pending = crate::tree::pending_approvals(&*self.store, id).await?;
        let Some(asked) = pending.iter().find(|i| &*i.call.id == call) else {
            return Err(GrantError::NotPending {
                operation: id,
                call: call.to_owned(),
            }
            .into());
        };
        if is_question(&asked.call) {
            return Err(GrantError::Question(call.to_owned()).into());
        }
        // Decided again on the operation as it is now, not on what was stored when it asked.
        let checker = InterventionChecker::new();
        let owner = self.load(asked.operation_id).await?;
        let decision = checker.explain(&asked.call, &owner.committed);
        if decision.source.every_time() {
            return Err(GrantError::EveryTime {
                call: call.to_owned(),
                rule: decision
                    .matched_rule
                    .unwrap_or_else(|| "a security rule".into()),
            }
            .into());
        }
        let grant = self
            .store
            .create_grant(&NewGrant {
                owner: owner.spec.owner.clone(),
                scope,
                target: target(scope, owner.id, &owner.spec, &owner.topic_id)?,
                tool: asked.call.key(),
                operation_id: Some(owner.id.to_string()),
                tool_call_id: Some(call.to_owned()),
                created_by: by.map(str::to_owned),
            })
            .await?;
        if scope == GrantScope::Agent {
            self.note_agent_change(&owner, &grant).await?;
        }
        let mut covered = Vec::new();
        for other in pending.iter().filter(|i| &*i.call.id != call) {
            if is_question(&other.call) {
                continue;
            }
            let run = self.load(other.operation_id).await?;
            let mut state = run.committed.clone();
            self.load_grants(&run, &mut state).await?;
            if checker.check(&other.call, &state) == rein_core::Action::Execute {
                covered.push(other.call.id.to_string());
            }
        }
        Ok((grant, covered))
    }

    /// Revoke `owner`'s grant `id`: it covers nothing from the next call on.
    pub async fn revoke_grant(
        &self,
        owner: Option<&str>,
        id: &str,
        by: Option<&str>,
    ) -> Result<GrantRecord, DriverError> {
        let was = self.store.grant(owner, id).await?;
        let grant = self.store.revoke_grant(owner, id, by).await?;
        if grant.scope == GrantScope::Agent
            && was.is_some_and(|g| g.revoked_at.is_none())
            && let Some(agents) = &self.agents
        {
            agents.note_change(owner, &grant.target).await?;
        }
        Ok(grant)
    }

    /// An agent-scope grant is a change of the agent: it gets a new version.
    async fn note_agent_change(
        &self,
        owner: &Loaded,
        grant: &GrantRecord,
    ) -> Result<(), DriverError> {
        if let Some(agents) = &self.agents {
            agents
                .note_change(owner.spec.owner.as_deref(), &grant.target)
                .await?;
        }
        Ok(())
    }
}
