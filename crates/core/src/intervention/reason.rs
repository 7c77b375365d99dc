//! Why a call runs, asks or is refused: the part of the checker's decision that is stored with
//! a pending call and shown wherever a person decides it (the API's `pending[].reason`, the
//! `human_approve_required` event, the terminal prompt, `rein op show`, the web UI's card).

use serde::{Deserialize, Serialize};

/// What decided a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReasonSource {
    /// A text rule of the security blacklist (credentials, system files, ...).
    Blacklist,
    /// The shell guard: a rule over the command's syntax tree, or a command it cannot analyse.
    Guard,
    /// A global audit the host registered.
    Audit,
    /// The tool's own policy (its manifest, a dynamic audit of its arguments) or a person's
    /// rule for the tool (an agent's `tool_rules`).
    ToolPolicy,
    /// The approval mode (auto-run and headless run what no `always` rule covers; allow-list
    /// asks for what is not listed).
    Mode,
    /// The operation's allow-list names the tool.
    AllowList,
    /// The tool is not one the operation knows.
    UnknownTool,
    /// An active skill's `allowed-tools` names the tool.
    Skill,
    /// A person granted the tool (for the operation, the conversation or the agent).
    Grant,
}

impl ReasonSource {
    /// Whether a call decided by this source is asked every time: no grant, allow-list or
    /// skill covers what the security blacklist, the guard or a global audit flagged.
    pub fn every_time(self) -> bool {
        match self {
            Self::Blacklist | Self::Guard | Self::Audit => true,
            Self::ToolPolicy
            | Self::Mode
            | Self::AllowList
            | Self::UnknownTool
            | Self::Skill
            | Self::Grant => false,
        }
    }

    /// Its name as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blacklist => "blacklist",
            Self::Guard => "guard",
            Self::Audit => "audit",
            Self::ToolPolicy => "tool_policy",
            Self::Mode => "mode",
            Self::AllowList => "allow_list",
            Self::UnknownTool => "unknown_tool",
            Self::Skill => "skill",
            Self::Grant => "grant",
        }
    }
}

/// Why a call waits for a person, as the checker decided it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ApprovalReason {
    /// What decided.
    pub source: ReasonSource,
    /// The rule (`security_blacklist:rm_home_dir`, `tool:shell/run`, `approval_mode:allow_list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// A sentence a person reads.
    pub explanation: String,
    /// For a shell rule: the simple command it matched and where it sits in the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Asked every time: no grant covers it (see [`ReasonSource::every_time`]).
    #[serde(default)]
    pub every_time: bool,
}

impl ApprovalReason {
    /// One line: the explanation, and the rule when the explanation does not name it.
    pub fn line(&self) -> String {
        match &self.rule {
            Some(rule) if !self.explanation.contains(rule.as_str()) => {
                format!("{} [{rule}]", self.explanation)
            }
            _ => self.explanation.clone(),
        }
    }
}
