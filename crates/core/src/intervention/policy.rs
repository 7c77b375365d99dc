//! Approval policy types: how a tool, an API, a user and the security blacklist say whether a
//! call may run without a human.

use super::matcher::ArgumentMatcher;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// Whether a call needs a human. Ordered by strictness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterventionPolicy {
    /// Runs without asking.
    Never,
    /// Asks, unless the user chose auto-run (or headless).
    Required,
    /// Always asks; no mode bypasses it (headless turns it into a refusal).
    Always,
}

/// A conditional policy: applies when every matcher matches its argument.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterventionRule {
    /// Argument name → matcher; empty means "always applies".
    #[serde(rename = "match", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub matchers: BTreeMap<String, ArgumentMatcher>,
    /// Policy when it applies.
    pub policy: InterventionPolicy,
}

/// A policy decided at call time by a named dynamic audit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicIntervention {
    /// Audit name (`path_scope`).
    #[serde(rename = "type")]
    pub audit: String,
    /// Policy when the audit fires.
    #[serde(default = "always")]
    pub policy: InterventionPolicy,
    /// Policy when it does not.
    #[serde(default = "never")]
    pub default: InterventionPolicy,
}

fn always() -> InterventionPolicy {
    InterventionPolicy::Always
}
fn never() -> InterventionPolicy {
    InterventionPolicy::Never
}

/// Approval configuration of a tool or API.
///
/// JSON: a policy string (`"required"`), a list of rules, or `{"dynamic": {"type": ...}}`.
#[derive(Clone, Debug, PartialEq)]
pub enum InterventionConfig {
    /// One policy for every call.
    Policy(InterventionPolicy),
    /// First matching rule wins; no match means `required` (fail safe).
    Rules(Vec<InterventionRule>),
    /// Decided by a dynamic audit.
    Dynamic(DynamicIntervention),
}

#[derive(Serialize, Deserialize)]
struct DynamicWrapper {
    dynamic: DynamicIntervention,
}

impl Serialize for InterventionConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Policy(p) => p.serialize(s),
            Self::Rules(r) => r.serialize(s),
            Self::Dynamic(d) => DynamicWrapper { dynamic: d.clone() }.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InterventionConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        let shape = match &v {
            serde_json::Value::String(_) => "policy",
            serde_json::Value::Array(_) => "rules",
            serde_json::Value::Object(o) if o.contains_key("dynamic") => "dynamic",
            _ => {
                return Err(D::Error::custom(format!(
                    "intervention config must be a policy (\"never\", \"required\", \"always\"), \
                     a list of rules, or {{\"dynamic\": {{\"type\": ...}}}}; got {v}"
                )));
            }
        };
        let res = match shape {
            "policy" => serde_json::from_value(v).map(Self::Policy),
            "rules" => serde_json::from_value(v).map(Self::Rules),
            _ => serde_json::from_value::<DynamicWrapper>(v).map(|w| Self::Dynamic(w.dynamic)),
        };
        res.map_err(|e| D::Error::custom(format!("invalid intervention {shape}: {e}")))
    }
}

crate::named_enum! {
    /// How a user wants calls approved (written `auto-run`; stored specs from before also
    /// read as `auto_run`).
    #[derive(Default)]
    pub enum ApprovalMode as "approval" {
        /// Run what policy allows; ask for the rest.
        AutoRun = "auto-run" | "auto_run",
        /// Run what is on the allow-list; ask for the rest.
        AllowList = "allow-list" | "allow_list",
        /// Ask unless the tool's own policy is `never`.
        #[default]
        Manual = "manual",
        /// No human present: run what is allowed, refuse (with a readable result) what is not.
        Headless = "headless",
    }
}

/// The user's approval settings for an operation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserInterventionConfig {
    /// Mode.
    pub approval_mode: ApprovalMode,
    /// `identifier/api` keys (or bare identifiers) that run without asking in manual and
    /// allow-list mode (after the blacklist, the guard and the tool's `always` have decided);
    /// in allow-list mode everything else asks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_list: Vec<String>,
    /// A person's rules for tools, by `identifier/api` or `identifier` (the API's key wins):
    /// they replace the tool's own policy, except that a tool whose own policy is `always`
    /// keeps asking.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_rules: BTreeMap<String, InterventionConfig>,
    /// Grants in effect, loaded by the host before each step. Never stored with the state: a
    /// revoked grant stops at the next call, and a path that loads none asks.
    #[serde(skip)]
    pub grants: Vec<super::ActiveGrant>,
    /// Nobody watches the run (a task's): questions are answered "nobody is available"
    /// instead of parking, whatever the approval mode.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unattended: bool,
    /// With `unattended`: the question tool raises each question as an urgent decision brief
    /// for the person instead of only declining it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub question_briefs: bool,
}

impl UserInterventionConfig {
    /// Whether `identifier/api` is on the allow-list.
    pub fn allows(&self, identifier: &str, api: &str) -> bool {
        key_listed(&self.allow_list, identifier, api)
    }

    /// The grant covering `identifier/api`, if any (the narrowest scope first).
    pub fn grant_for(&self, identifier: &str, api: &str) -> Option<&super::ActiveGrant> {
        self.grants
            .iter()
            .filter(|g| key_listed(std::slice::from_ref(&g.tool), identifier, api))
            .min_by_key(|g| g.scope)
    }

    /// The person's rule for `identifier/api`: the API's key first, then the identifier's.
    pub fn tool_rule(&self, identifier: &str, api: &str) -> Option<&InterventionConfig> {
        self.tool_rules
            .get(&format!("{identifier}/{api}"))
            .or_else(|| self.tool_rules.get(identifier))
    }
}

/// Whether a list of `identifier/api` keys or bare identifiers names this call.
pub fn key_listed(list: &[String], identifier: &str, api: &str) -> bool {
    list.iter().any(|entry| match entry.split_once('/') {
        Some((i, a)) => i == identifier && a == api,
        None => entry == identifier,
    })
}

/// A security blacklist rule: when every matcher matches, the call needs approval with `policy`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecurityRule {
    /// Stable id (`rm_recursive_home`, `ssh_private_keys`), shown in `explain`.
    pub id: String,
    /// Argument name → matcher (all must match; a rule without matchers never matches).
    #[serde(rename = "match")]
    pub matchers: BTreeMap<String, ArgumentMatcher>,
    /// Policy when it matches.
    #[serde(default = "always")]
    pub policy: InterventionPolicy,
}
