//! Groups: a saved set of agents with a supervisor. A group run is one operation tree: the
//! supervisor's operation (brain [`rein_core::agent::GroupSupervisor`]) gives each turn to one
//! member as a sub-agent, within one budget. Here: the group's settings, their validation, and
//! the spec of a group run.

use crate::profile::{AgentProfile, ProfileError, check_name, model_ref};
use rein_core::spec::{GroupSpec, SpeakerPolicy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Turns per message when a group does not say.
pub const DEFAULT_MAX_ROUNDS: u32 = 6;

/// A group's settings, as stored and as the API and `rein group` take them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupProfile {
    /// Its agents, in speaking order: 2 to 8 distinct names of existing agents.
    #[schemars(schema_with = "members_schema")]
    pub members: Vec<String>,
    /// Who speaks next: `model` (the supervisor's model decides, and may end the
    /// conversation; the default), `round_robin`, or `mentioned_first`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<SpeakerPolicy>,
    /// Turns at most per message (1 to 50; 6 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub max_rounds: Option<u32>,
    /// The supervisor's model (`provider/model`), for the `model` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::profile::MODEL_PATTERN))]
    pub model: Option<String>,
    /// What the supervisor is told about the group's purpose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Cost limit of one group run (every turn included), in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_limit: Option<f64>,
    /// Token limit of one group run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
}

/// The schema of a group's members: 2 to 8 distinct agent names.
fn members_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "minItems": 2,
        "maxItems": 8,
        "uniqueItems": true,
        "items": {"type": "string", "pattern": crate::profile::AGENT_NAME_PATTERN}
    })
}

impl GroupProfile {
    /// Check every value but the members' existence (the caller knows where agents live).
    pub fn validate(&self) -> Result<(), ProfileError> {
        if !(2..=8).contains(&self.members.len()) {
            return Err(ProfileError::Limit {
                field: "members",
                requirement: "2 to 8 agents",
            });
        }
        for (i, m) in self.members.iter().enumerate() {
            check_name(m)?;
            if self.members[..i].contains(m) {
                return Err(ProfileError::Limit {
                    field: "members",
                    requirement: "distinct agents",
                });
            }
        }
        if self.max_rounds.is_some_and(|r| !(1..=50).contains(&r)) {
            return Err(ProfileError::Limit {
                field: "max_rounds",
                requirement: "1 to 50",
            });
        }
        if let Some(m) = &self.model {
            model_ref(m)?;
        }
        self.supervisor().budget()?;
        Ok(())
    }

    /// The supervisor's settings: its model, its instructions, the run's limits. It calls no
    /// tools itself and leaves the members their own scope and approval mode (a member's is
    /// never wider than the run's: a request's allow-list or approval mode narrows them all).
    pub fn supervisor(&self) -> AgentProfile {
        AgentProfile {
            model: self.model.clone(),
            system_role: Some(self.instructions.clone().unwrap_or_else(|| {
                "You run a conversation between several agents to answer the user's request.".into()
            })),
            approval: Some(rein_core::intervention::ApprovalMode::AutoRun),
            cost_limit: self.cost_limit,
            token_limit: self.token_limit,
            ..Default::default()
        }
    }

    /// The group as a spec records it.
    pub fn spec(&self, name: &str) -> GroupSpec {
        GroupSpec {
            name: name.to_owned(),
            members: self.members.clone(),
            policy: self.policy.unwrap_or_default(),
            max_rounds: self.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_rounds_and_models_are_checked() {
        let ok = GroupProfile {
            members: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert_eq!(ok.validate(), Ok(()));
        for (bad, field) in [
            (
                GroupProfile {
                    members: vec!["a".into()],
                    ..Default::default()
                },
                "members must be 2 to 8 agents",
            ),
            (
                GroupProfile {
                    members: vec!["a".into(), "a".into()],
                    ..Default::default()
                },
                "members must be distinct agents",
            ),
            (
                GroupProfile {
                    max_rounds: Some(0),
                    ..ok.clone()
                },
                "max_rounds must be 1 to 50",
            ),
            (
                GroupProfile {
                    model: Some("gpt".into()),
                    ..ok.clone()
                },
                "model `gpt`",
            ),
        ] {
            let e = bad.validate().map_err(|e| e.to_string());
            assert!(e.as_ref().is_err_and(|e| e.contains(field)), "{e:?}");
        }
        assert_eq!(ok.spec("g").max_rounds, DEFAULT_MAX_ROUNDS);
        assert_eq!(ok.spec("g").policy, SpeakerPolicy::Model);
    }
}
