//! Agent profiles: the settings an agent is stored with (model, system role, tools, approval
//! mode, limits and their policy), their validation, and how a profile plus a request's
//! overrides become an operation's spec (the one place that happens, for the CLI, the server
//! and task runs alike).

use rein_core::Usd;
use rein_core::intervention::{ApprovalMode, InterventionConfig};
use rein_core::spec::{
    AgentRef, MemoryScope, OperationSpec, Sandbox, SandboxMode, Surface, ToolDisclosure,
};
use rein_core::state::{Budget, BudgetPolicy, ModelRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How an agent works; every field optional (the host's defaults apply).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentProfile {
    /// `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(MODEL_PATTERN))]
    pub model: Option<String>,
    /// Instructions given to the model first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// Tools it may call (`identifier` or `identifier/api`); all when absent, none when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `manual` (default), `auto-run`, `allow-list` or `headless`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalMode>,
    /// Tools that run without asking (`identifier` or `identifier/api`), in `manual` and
    /// `allow-list` mode, once the security blacklist, the command guard and the tool's own
    /// `always` have decided; in `allow-list` mode every other tool asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tool_keys_schema")]
    pub allow: Option<Vec<String>>,
    /// Your rules per tool (`identifier` or `identifier/api`, the API's key first):
    /// `"always"` (ask every time, in every mode), `"never"` (never ask), or a list of rules
    /// `[{"match": {"command": "git push*"}, "policy": "required"}, {"policy": "never"}]`
    /// (the first whose every argument matcher matches decides; none: ask). They replace the
    /// tool's own policy, but never what the blacklist or the guard flags, nor a tool whose own
    /// policy is `always`. Kept as given and read by [`AgentProfile::tool_rules`] (a key that
    /// is not a tool, or a rule that cannot be used, such as a regex that does not compile,
    /// is refused there as [`ProfileError::ToolRule`]: what the API document cannot say of a
    /// map's keys or a regex is checked in one place, with one answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tool_rules_schema")]
    pub tool_rules: Option<BTreeMap<String, serde_json::Value>>,
    /// Step limit (then a final answer is forced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_steps: Option<u32>,
    /// Cost limit of the whole operation, in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub cost_limit: Option<f64>,
    /// Token limit of the whole operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
    /// Prices of models, by `provider/model`, in USD per million tokens (`input`, `output`,
    /// `cache_read`, `cache_write`), over the catalog's and the host's: a model the catalog
    /// does not price can then run under a cost limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "prices_schema")]
    pub prices: Option<BTreeMap<String, rein_core::usage::Prices>>,
    /// Cost limit of any one model call, in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub model_call_cost_limit: Option<f64>,
    /// Cost limit of any one tool call, in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub tool_call_cost_limit: Option<f64>,
    /// What crossing a limit does: `stop` (default: finish visibly), `interrupt` (pause,
    /// resumable) or `warn` (an event, and go on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_policy: Option<BudgetPolicy>,
    /// Seconds a requested approval stays valid; after that the operation ends (`timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub approval_timeout_secs: Option<u64>,
    /// When another operation of the conversation is running or parked: `enqueue` (default:
    /// start when it ends), `reject` (refused, naming it) or `interrupt` (end it at its next
    /// boundary, rejecting its parked calls, then start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_busy: Option<rein_core::spec::WhenBusy>,
    /// How tools are offered: `auto` (default: listed for activation when their schemas would
    /// cost more than 6,000 tokens), `all` or `progressive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_disclosure: Option<ToolDisclosure>,
    /// Skills admitted from the first call on, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "skills_schema")]
    pub skills: Option<Vec<String>>,
    /// What the shell's commands may touch: `read-only`, `workspace-write` or `off`. It can
    /// only narrow the host's sandbox (`rein --sandbox`, `rein serve --sandbox`), never widen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Where it runs: `local`/`server` (rein's own brain and tools), `device:NAME` or
    /// `external:claude-code|codex|jsonl` (an external agent CLI the host has enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<Surface>,
    /// Wall-clock seconds one run of an external agent may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub time_limit_secs: Option<u64>,
    /// Knowledge bases it searches (by name): `knowledge.search`, and their best chunks for
    /// the user's message in each call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge: Option<Vec<String>>,
    /// The most tokens of its knowledge bases' best chunks each model call carries (default
    /// 1,500); 0 puts none in, leaving the bases to the `knowledge.search` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 32_000))]
    pub knowledge_tokens: Option<u32>,
    /// The hosts `web.fetch` may reach (`docs.rs`, `*.example.com`: the domain and its
    /// subdomains); unset: any public host. While a list is set, the shell and the
    /// interpreters run without network, whatever the sandbox allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 100), inner(length(min = 1, max = 253)))]
    pub egress: Option<Vec<String>>,
    /// Which learnt memories it reads, and where what its conversations teach goes: `user`
    /// (default: the memories the user's agents share) or `agent` (its own, read by it alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryScope>,
    /// Offered through rein's doors for other agents and editors: a `run_NAME` tool of rein's
    /// MCP server (`/mcp`, `rein mcp`) and an A2A agent (`/a2a/NAME`), to its owner only. Off
    /// unless true; read from the stored agent (an operation's request may carry it, to no
    /// effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose: Option<bool>,
    /// A remote agent reached over A2A instead of rein's own brain: its card's address, the
    /// environment variable holding its token, whether it may be on a private address. Its
    /// card is read and checked when the agent is created or edited (`surface` becomes
    /// `a2a:NAME`); delegating to it sends it the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a: Option<crate::a2a::RemoteAgent>,
}

/// A tool key as [`check_tool_key`] accepts it: `identifier` or `identifier/api`.
pub const TOOL_KEY_PATTERN: &str = "^[A-Za-z0-9_.:-]{1,64}(/[A-Za-z0-9_.:-]{1,64})?$";

/// Refuse a tool key that cannot name a tool (`identifier` or `identifier/api`).
pub fn check_tool_key(key: &str) -> Result<(), ProfileError> {
    let part = |p: &str| {
        (1..=64).contains(&p.len())
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
    };
    let ok = match key.split_once('/') {
        Some((identifier, api)) => part(identifier) && part(api),
        None => part(key),
    };
    if ok {
        Ok(())
    } else {
        Err(ProfileError::ToolKey(key.chars().take(80).collect()))
    }
}

/// The most tool keys a list (`allow`) or a map (`tool_rules`) of a profile holds.
pub const MAX_TOOL_KEYS: usize = 256;

/// The schema of an optional list of tool keys.
pub fn tool_keys_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["array", "null"],
        "items": {"type": "string", "pattern": TOOL_KEY_PATTERN},
        "maxItems": MAX_TOOL_KEYS
    })
}

/// The schema of optional tool rules: tool key → a policy or a list of rules.
pub fn tool_rules_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["object", "null"],
        "maxProperties": MAX_TOOL_KEYS,
        "propertyNames": {"pattern": TOOL_KEY_PATTERN},
        "additionalProperties": {
            "oneOf": [
                {"type": "string", "enum": ["never", "required", "always"]},
                {
                    "type": "array",
                    "maxItems": 64,
                    "items": {
                        "type": "object",
                        "required": ["policy"],
                        "properties": {
                            "match": {
                                "type": "object",
                                "description": "argument name → a wildcard (`git *`), or a matcher object",
                                "additionalProperties": {
                                    "oneOf": [
                                        {"type": "string"},
                                        {
                                            "type": "object",
                                            "required": ["type"],
                                            "properties": {
                                                "type": {"type": "string", "enum": [
                                                    "exact", "prefix", "wildcard", "regex",
                                                    "shell_regex", "semantic_shell"
                                                ]},
                                                "pattern": {"type": ["string", "null"]},
                                                "predicate": {"type": ["string", "null"]}
                                            }
                                        }
                                    ]
                                }
                            },
                            "policy": {"type": "string", "enum": ["never", "required", "always"]}
                        }
                    }
                }
            ]
        }
    })
}

/// The schema of optional prices: `provider/model` → USD per million tokens.
pub fn prices_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let price = serde_json::json!({"type": "number", "minimum": 0});
    // Absent or null: the input price.
    let cache_price = serde_json::json!({"type": ["number", "null"], "minimum": 0});
    schemars::json_schema!({
        "type": ["object", "null"],
        "maxProperties": 64,
        "propertyNames": {"pattern": MODEL_PATTERN},
        "additionalProperties": {
            "type": "object",
            "additionalProperties": false,
            "required": ["input", "output"],
            "properties": {
                "input": price,
                "output": price,
                "cache_read": cache_price,
                "cache_write": cache_price
            }
        }
    })
}

/// The schema of an optional list of skill names (each as [`rein_tools::skills::valid_name`]
/// accepts it).
pub fn skills_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "nullable": true,
        "items": {
            "type": "string",
            "pattern": rein_tools::skills::NAME_PATTERN,
            "minLength": 1,
            "maxLength": rein_tools::skills::NAME_MAX,
        }
    })
}

/// A model address as [`model_ref`] accepts it: `provider/model`, both parts non-empty.
pub const MODEL_PATTERN: &str = "^[^/]+/.+$";

/// An agent name as [`check_name`] accepts it.
pub const AGENT_NAME_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";

/// What is wrong with a profile or a name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// An agent name that is not 1-64 letters, digits, `-` or `_`.
    #[error("agent name `{0}`: use 1-64 letters, digits, `-` or `_`")]
    Name(String),
    /// A skill name that cannot be one.
    #[error("skill `{0}`: use 1-64 lowercase letters, digits and single hyphens")]
    Skill(String),
    /// A model that is not `provider/model`.
    #[error("model `{model}`: {reason}")]
    Model {
        /// As given.
        model: String,
        /// Why it is refused.
        reason: String,
    },
    /// A surface this host cannot run the operation on.
    #[error(transparent)]
    Route(#[from] crate::surface::SurfaceError),
    /// A tool key that is not `identifier` or `identifier/api`.
    #[error(
        "tool `{0}`: use `identifier` or `identifier/api` (letters, digits, `_`, `.`, `:`, `-`)"
    )]
    ToolKey(String),
    /// A tool rule that cannot be used as given.
    #[error("tool rule for `{tool}`: {reason}")]
    ToolRule {
        /// The tool key.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A key of `prices` that is not `provider/model`.
    #[error("prices for `{model}`: {reason}")]
    PriceKey {
        /// The key as given.
        model: String,
        /// Why it is refused.
        reason: String,
    },
    /// A remote agent's settings that do not go together.
    #[error("{0}")]
    Remote(&'static str),
    /// An egress allow-list entry that is not a host.
    #[error("egress entry `{entry}`: {why}")]
    Egress {
        /// As given.
        entry: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// A limit out of range.
    #[error("{field} must be {requirement}")]
    Limit {
        /// The field.
        field: &'static str,
        /// What it must be.
        requirement: &'static str,
    },
}

/// Parse `provider/model`.
pub fn model_ref(model: &str) -> Result<ModelRef, ProfileError> {
    let (provider, id) = rein_model::Registry::split(model).map_err(|e| ProfileError::Model {
        model: model.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(ModelRef {
        provider: provider.into(),
        model: id.into(),
    })
}

/// Agent names: 1-64 letters, digits, `-` or `_`.
pub fn check_name(name: &str) -> Result<(), ProfileError> {
    if rein_core::spec::valid_agent_name(name) {
        Ok(())
    } else {
        Err(ProfileError::Name(name.to_owned()))
    }
}

fn usd(field: &'static str, v: Option<f64>) -> Result<Option<Usd>, ProfileError> {
    match v {
        Some(v) if !v.is_finite() || v < 0.0 => Err(ProfileError::Limit {
            field,
            requirement: "a non-negative number",
        }),
        v => Ok(v.map(Usd::from_dollars)),
    }
}

/// Who and where an operation starts for: what a spec takes besides the profile.
#[derive(Clone, Debug, Default)]
pub struct SpecOrigin {
    /// The user it belongs to (`None`: the local CLI).
    pub owner: Option<String>,
    /// The stored agent it runs as, with its version.
    pub agent: Option<AgentRef>,
    /// Directory the file and shell tools are confined to.
    pub working_directory: Option<String>,
}

impl AgentProfile {
    /// What the agent is for, as another agent delegating to it is told: the first line of its
    /// system role, shortened.
    pub fn description(&self) -> String {
        // A remote agent is described by its card, unless its owner wrote a role for it.
        let remote = self.a2a.as_ref().map(|r| {
            if r.card.description.trim().is_empty() {
                format!("The remote agent {}.", r.card.name)
            } else {
                format!("Remote agent: {}", r.card.description)
            }
        });
        let first = self
            .system_role
            .as_deref()
            .or(remote.as_deref())
            .and_then(|r| r.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("A general assistant.")
            .trim();
        let mut out: String = first.chars().take(200).collect();
        if first.chars().count() > 200 {
            out.push('…');
        }
        out
    }

    /// These settings with `over`'s given ones taking precedence (a request's or the command
    /// line's over the agent's).
    pub fn merged(&self, over: &AgentProfile) -> AgentProfile {
        AgentProfile {
            model: over.model.clone().or_else(|| self.model.clone()),
            system_role: over
                .system_role
                .clone()
                .or_else(|| self.system_role.clone()),
            tools: over.tools.clone().or_else(|| self.tools.clone()),
            approval: over.approval.or(self.approval),
            allow: over.allow.clone().or_else(|| self.allow.clone()),
            tool_rules: over.tool_rules.clone().or_else(|| self.tool_rules.clone()),
            max_steps: over.max_steps.or(self.max_steps),
            cost_limit: over.cost_limit.or(self.cost_limit),
            token_limit: over.token_limit.or(self.token_limit),
            // Per model: the request's price over the agent's.
            prices: match (&self.prices, &over.prices) {
                (None, None) => None,
                (a, b) => Some(
                    a.iter()
                        .chain(b)
                        .flatten()
                        .map(|(k, v)| (k.clone(), *v))
                        .collect(),
                ),
            },
            model_call_cost_limit: over.model_call_cost_limit.or(self.model_call_cost_limit),
            tool_call_cost_limit: over.tool_call_cost_limit.or(self.tool_call_cost_limit),
            budget_policy: over.budget_policy.or(self.budget_policy),
            approval_timeout_secs: over.approval_timeout_secs.or(self.approval_timeout_secs),
            when_busy: over.when_busy.or(self.when_busy),
            tools_disclosure: over.tools_disclosure.or(self.tools_disclosure),
            skills: over.skills.clone().or_else(|| self.skills.clone()),
            sandbox: over.sandbox.or(self.sandbox),
            surface: over.surface.clone().or_else(|| self.surface.clone()),
            time_limit_secs: over.time_limit_secs.or(self.time_limit_secs),
            knowledge: over.knowledge.clone().or_else(|| self.knowledge.clone()),
            knowledge_tokens: over.knowledge_tokens.or(self.knowledge_tokens),
            egress: over.egress.clone().or_else(|| self.egress.clone()),
            memory: over.memory.or(self.memory),
            expose: over.expose.or(self.expose),
            a2a: over.a2a.clone().or_else(|| self.a2a.clone()),
        }
    }

    /// The tool rules read as rules (`None` when not given): every key a tool key, every
    /// value a policy or a list of rules whose matchers compile; a dynamic audit is a tool's
    /// own policy, not a person's to choose.
    pub fn tool_rules(&self) -> Result<Option<BTreeMap<String, InterventionConfig>>, ProfileError> {
        let Some(raw) = &self.tool_rules else {
            return Ok(None);
        };
        let refused = |tool: &str, reason: String| ProfileError::ToolRule {
            tool: tool.to_owned(),
            reason,
        };
        let mut rules = BTreeMap::new();
        for (key, value) in raw {
            check_tool_key(key).map_err(|e| refused(key, e.to_string()))?;
            let rule: InterventionConfig = serde_json::from_value(value.clone()).map_err(|e| {
                refused(
                    key,
                    format!("use \"always\", \"never\", \"required\" or a list of rules ({e})"),
                )
            })?;
            if let InterventionConfig::Dynamic(d) = &rule {
                return Err(refused(
                    key,
                    format!(
                        "a dynamic audit (`{}`) is a tool's own policy; use a policy or rules",
                        d.audit
                    ),
                ));
            }
            rules.insert(key.clone(), rule);
        }
        Ok(Some(rules))
    }

    /// These settings checked ([`AgentProfile::validate`]) and ready to keep: tool rules as
    /// they read back (a `null` the request gave for an absent field dropped), so what is
    /// shown later is what applies.
    pub fn checked(mut self) -> Result<Self, ProfileError> {
        self.validate()?;
        if let Some(rules) = self.tool_rules()? {
            let mut kept = BTreeMap::new();
            for (tool, rule) in rules {
                let value = serde_json::to_value(&rule).map_err(|e| ProfileError::ToolRule {
                    tool: tool.clone(),
                    reason: e.to_string(),
                })?;
                kept.insert(tool, value);
            }
            self.tool_rules = Some(kept);
        }
        Ok(self)
    }

    /// Check every value (the shape is checked by deserialization).
    pub fn validate(&self) -> Result<(), ProfileError> {
        match (&self.a2a, &self.surface) {
            (Some(_), None | Some(Surface::A2a(_))) | (None, None) => {}
            (Some(_), Some(_)) => {
                return Err(ProfileError::Remote(
                    "a remote agent (a2a) runs on its own server: its surface is a2a:NAME",
                ));
            }
            (None, Some(Surface::A2a(_))) => {
                return Err(ProfileError::Remote(
                    "surface a2a:NAME is a remote agent's: register one with `rein agent create NAME --a2a-url URL`",
                ));
            }
            (
                None,
                Some(
                    Surface::Local
                    | Surface::Server
                    | Surface::Device(_)
                    | Surface::External(_)
                    | Surface::ExternalOnDevice { .. },
                ),
            ) => {}
        }
        // Bounds the API document states (serde does not enforce them).
        if self.allow.as_ref().is_some_and(|a| a.len() > MAX_TOOL_KEYS) {
            return Err(ProfileError::Limit {
                field: "allow",
                requirement: "at most 256 tools",
            });
        }
        if self
            .tool_rules
            .as_ref()
            .is_some_and(|r| r.len() > MAX_TOOL_KEYS)
        {
            return Err(ProfileError::Limit {
                field: "tool_rules",
                requirement: "at most 256 tools",
            });
        }
        for key in self.allow.iter().flatten() {
            check_tool_key(key)?;
        }
        for (model, prices) in self.prices.iter().flatten() {
            rein_model::Registry::split(model).map_err(|e| ProfileError::PriceKey {
                model: model.clone(),
                reason: e.to_string(),
            })?;
            if !prices.valid() {
                return Err(ProfileError::Limit {
                    field: "prices",
                    requirement: "finite, non-negative USD per million tokens",
                });
            }
        }
        self.tool_rules()?;
        if let Some(m) = &self.model {
            model_ref(m)?;
        }
        if let Some(bad) = self
            .skills
            .iter()
            .flatten()
            .find(|s| !rein_tools::skills::valid_name(s))
        {
            return Err(ProfileError::Skill(bad.clone()));
        }
        if self.egress.as_ref().is_some_and(|l| l.len() > 100) {
            return Err(ProfileError::Limit {
                field: "egress",
                requirement: "at most 100 hosts",
            });
        }
        for entry in self.egress.iter().flatten() {
            if let Some(why) = rein_tools::web::egress_entry_problem(entry) {
                return Err(ProfileError::Egress {
                    entry: entry.clone(),
                    why,
                });
            }
        }
        if self.max_steps == Some(0) {
            return Err(ProfileError::Limit {
                field: "max_steps",
                requirement: "at least 1",
            });
        }
        if self.time_limit_secs == Some(0) {
            return Err(ProfileError::Limit {
                field: "time_limit_secs",
                requirement: "at least 1",
            });
        }
        if self.approval_timeout_secs == Some(0) {
            return Err(ProfileError::Limit {
                field: "approval_timeout_secs",
                requirement: "at least 1",
            });
        }
        if self
            .knowledge_tokens
            .is_some_and(|t| t > rein_core::spec::MAX_KNOWLEDGE_TOKENS)
        {
            return Err(ProfileError::Limit {
                field: "knowledge_tokens",
                requirement: "at most 32000",
            });
        }
        self.budget()?;
        Ok(())
    }

    /// The budget these settings give (limits and the policy for crossing them).
    pub fn budget(&self) -> Result<Budget, ProfileError> {
        Ok(Budget {
            max_cost: usd("cost_limit", self.cost_limit)?,
            max_tokens: self.token_limit,
            max_model_call_cost: usd("model_call_cost_limit", self.model_call_cost_limit)?,
            max_tool_call_cost: usd("tool_call_cost_limit", self.tool_call_cost_limit)?,
            on_exceeded: self.budget_policy.unwrap_or(BudgetPolicy::Stop),
        })
    }

    /// The spec of an operation run with these settings, on top of `base` (the host's
    /// defaults: its model, context settings, tools), for `origin`.
    pub fn spec(
        &self,
        base: &OperationSpec,
        origin: SpecOrigin,
    ) -> Result<OperationSpec, ProfileError> {
        self.validate()?;
        Ok(OperationSpec {
            model: match &self.model {
                Some(m) => Some(model_ref(m)?),
                None => base.model.clone(),
            },
            system_role: self
                .system_role
                .clone()
                .or_else(|| base.system_role.clone()),
            allowed_tools: self.tools.clone().or_else(|| base.allowed_tools.clone()),
            approval: self.approval.unwrap_or(base.approval),
            allow: self.allow.clone().unwrap_or_else(|| base.allow.clone()),
            tool_rules: self
                .tool_rules()?
                .unwrap_or_else(|| base.tool_rules.clone()),
            max_steps: self.max_steps.or(base.max_steps),
            budget: self.budget()?,
            prices: base
                .prices
                .iter()
                .chain(self.prices.iter().flatten())
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            approval_timeout_secs: self.approval_timeout_secs.or(base.approval_timeout_secs),
            when_busy: self.when_busy.unwrap_or(base.when_busy),
            tools_disclosure: self.tools_disclosure.unwrap_or(base.tools_disclosure),
            skills: self.skills.clone().unwrap_or_else(|| base.skills.clone()),
            sandbox: {
                let mut sandbox = match self.sandbox {
                    Some(mode) => Sandbox {
                        mode: base.sandbox.mode.stricter(mode),
                        ..base.sandbox
                    },
                    None => base.sandbox,
                };
                // A host list cannot be held against a program's own sockets: under one, the
                // shell and the interpreters get none.
                if self.egress.is_some() || base.egress.is_some() {
                    sandbox.network = false;
                }
                sandbox
            },
            egress: self.egress.clone().or_else(|| base.egress.clone()),
            time_limit_secs: self.time_limit_secs.or(base.time_limit_secs),
            knowledge: self
                .knowledge
                .clone()
                .unwrap_or_else(|| base.knowledge.clone()),
            knowledge_tokens: self.knowledge_tokens.or(base.knowledge_tokens),
            memory_scope: self.memory.unwrap_or(base.memory_scope),
            surface: self.surface.clone().unwrap_or_else(|| base.surface.clone()),
            owner: origin.owner,
            agent: origin.agent,
            working_directory: origin
                .working_directory
                .or_else(|| base.working_directory.clone()),
            ..base.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_documented_patterns_say_what_the_checks_accept() {
        let model = regex::Regex::new(super::MODEL_PATTERN).unwrap();
        let name = regex::Regex::new(super::AGENT_NAME_PATTERN).unwrap();
        for m in ["openai/gpt-4o", "a/b/c", "/x", "x/", "", "plain"] {
            assert_eq!(model.is_match(m), super::model_ref(m).is_ok(), "{m:?}");
        }
        let long = "a".repeat(65);
        for n in ["ok", "a-b_C9", "", "bad name", "é", long.as_str()] {
            assert_eq!(name.is_match(n), super::check_name(n).is_ok(), "{n:?}");
        }
        let topic = regex::Regex::new(crate::TOPIC_ID_PATTERN).unwrap();
        let long = "t".repeat(129);
        for t in ["topic_1-2.3:4", "", "a b", "a\0b", "ü", long.as_str()] {
            assert_eq!(topic.is_match(t), crate::check_topic_id(t).is_ok(), "{t:?}");
        }
    }

    use super::*;

    #[test]
    fn an_egress_list_is_checked_and_takes_the_network_from_commands() {
        let with = |hosts: Vec<String>| AgentProfile {
            egress: Some(hosts),
            ..Default::default()
        };
        let base = OperationSpec {
            sandbox: Sandbox {
                network: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let origin = || SpecOrigin::default();
        let spec = with(vec!["docs.rs".into(), "*.example.com".into()])
            .spec(&base, origin())
            .unwrap();
        assert_eq!(spec.egress.as_deref().map(<[String]>::len), Some(2));
        assert!(
            !spec.sandbox.network,
            "no network for commands under a list"
        );
        assert!(
            AgentProfile::default()
                .spec(&base, origin())
                .unwrap()
                .sandbox
                .network
        );
        assert!(matches!(
            with(vec!["https://docs.rs/x".into()]).spec(&base, origin()),
            Err(ProfileError::Egress { entry, .. }) if entry == "https://docs.rs/x"
        ));
        assert!(matches!(
            with(vec!["h.example".into(); 101]).spec(&base, origin()),
            Err(ProfileError::Limit {
                field: "egress",
                ..
            })
        ));
    }

    #[test]
    fn the_knowledge_budget_is_the_requests_else_the_agents_and_is_bounded() {
        let agent = AgentProfile {
            knowledge: Some(vec!["manuals".into()]),
            knowledge_tokens: Some(800),
            ..Default::default()
        };
        let base = OperationSpec::default();
        let spec = |p: &AgentProfile| p.spec(&base, SpecOrigin::default());
        assert_eq!(spec(&agent).unwrap().knowledge_tokens, Some(800));
        let request = AgentProfile {
            knowledge_tokens: Some(0),
            ..Default::default()
        };
        assert_eq!(
            spec(&agent.merged(&request)).unwrap().knowledge_tokens,
            Some(0)
        );
        assert_eq!(
            spec(&AgentProfile::default()).unwrap().knowledge_tokens,
            None
        );
        let too_much = AgentProfile {
            knowledge_tokens: Some(rein_core::spec::MAX_KNOWLEDGE_TOKENS + 1),
            ..Default::default()
        };
        let refused = spec(&too_much).unwrap_err().to_string();
        assert_eq!(refused, "knowledge_tokens must be at most 32000");
    }

    #[test]
    fn a_spec_carries_every_setting_and_the_request_wins() {
        let agent = AgentProfile {
            model: Some("anthropic/claude-sonnet-4".into()),
            system_role: Some("You are terse.".into()),
            tools: Some(vec!["calculator".into(), "shell".into()]),
            approval: Some(ApprovalMode::AutoRun),
            cost_limit: Some(0.5),
            budget_policy: Some(BudgetPolicy::Interrupt),
            tool_call_cost_limit: Some(0.01),
            ..Default::default()
        };
        let request = AgentProfile {
            max_steps: Some(3),
            approval: Some(ApprovalMode::Manual),
            ..Default::default()
        };
        let base = OperationSpec {
            model: Some(model_ref("openai/gpt-4o-mini").unwrap()),
            mcp_servers: vec!["fs".into()],
            ..Default::default()
        };
        let origin = SpecOrigin {
            owner: Some("u1".into()),
            agent: Some(AgentRef {
                name: "terse".into(),
                version: Some(4),
            }),
            working_directory: Some("/w".into()),
        };
        let spec = agent.merged(&request).spec(&base, origin).unwrap();
        assert_eq!(&*spec.model.as_ref().unwrap().provider, "anthropic");
        assert_eq!(spec.system_role.as_deref(), Some("You are terse."));
        assert_eq!(
            spec.allowed_tools,
            Some(vec!["calculator".into(), "shell".into()])
        );
        assert_eq!(spec.approval, ApprovalMode::Manual);
        assert_eq!(spec.max_steps, Some(3));
        assert_eq!(spec.budget.on_exceeded, BudgetPolicy::Interrupt);
        assert_eq!(
            spec.budget.max_tool_call_cost,
            Some(Usd::from_dollars(0.01))
        );
        assert_eq!(spec.mcp_servers, ["fs"]);
        assert_eq!(spec.agent.unwrap().version, Some(4));
        assert_eq!(spec.owner.as_deref(), Some("u1"));
        // An empty allow-list is kept as "no tools", not dropped.
        let none = AgentProfile {
            tools: Some(Vec::new()),
            ..Default::default()
        };
        assert_eq!(
            none.spec(&base, SpecOrigin::default())
                .unwrap()
                .allowed_tools,
            Some(Vec::new())
        );
    }

    #[test]
    fn bad_values_are_named() {
        let bad = |p: AgentProfile| p.validate().unwrap_err().to_string();
        let yolo = serde_json::from_str::<AgentProfile>(r#"{"approval": "yolo"}"#).unwrap_err();
        assert!(
            yolo.to_string()
                .starts_with("approval `yolo`: use auto-run, allow-list, manual or headless"),
            "{yolo}"
        );
        assert!(
            bad(AgentProfile {
                model: Some("nomodel".into()),
                ..Default::default()
            })
            .contains("model `nomodel`")
        );
        assert!(
            bad(AgentProfile {
                cost_limit: Some(-1.0),
                ..Default::default()
            })
            .contains("cost_limit")
        );
        assert!(
            bad(AgentProfile {
                tool_call_cost_limit: Some(f64::NAN),
                ..Default::default()
            })
            .contains("tool_call_cost_limit")
        );
        assert!(
            bad(AgentProfile {
                max_steps: Some(0),
                ..Default::default()
            })
            .contains("max_steps")
        );
        assert!(
            bad(AgentProfile {
                allow: Some(vec!["calculator".into(); MAX_TOOL_KEYS + 1]),
                ..Default::default()
            })
            .contains("allow must be at most 256 tools")
        );
        assert!(check_name("ok-name_1").is_ok());
        assert!(check_name("no spaces").is_err());
        let unknown = serde_json::from_str::<AgentProfile>(r#"{"modle": "x/y"}"#).unwrap_err();
        assert!(unknown.to_string().contains("modle"));
    }
}
