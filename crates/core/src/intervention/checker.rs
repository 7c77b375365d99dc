//! The intervention decision for one tool call, with the evaluation order of LobeHub's newer
//! runtime: the strictest global audit wins and `always` cannot be bypassed by any mode.

use super::audit::{DynamicAudit, PathScopeAudit};
use super::blacklist::{default_blacklist_args, default_security_blacklist};
use super::matcher::ArgumentMatcher;
use super::matcher::stringify;
use super::policy::{
    ApprovalMode, InterventionConfig, InterventionPolicy, InterventionRule, SecurityRule,
};
use super::reason::{ApprovalReason, ReasonSource};
use crate::message::ToolCall;
use crate::state::AgentState;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What happens to a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run it now.
    Execute,
    /// Park it until a human decides.
    RequireApproval,
    /// Refuse it with a readable result (headless mode, where nobody can approve).
    Block,
}

/// The decision for a call and why, so a user can see which rule applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The outcome.
    pub action: Action,
    /// What decided it.
    pub source: ReasonSource,
    /// The rule that decided (`security_blacklist:rm_home_dir`, `tool:calculator`,
    /// `approval_mode:auto_run`, `grant:ID`, ...).
    pub matched_rule: Option<String>,
    /// A sentence explaining the outcome.
    pub reason: String,
    /// The part of the arguments the deciding rule matched, when it is a shell rule: the
    /// simple command, where it sits in the command's syntax tree, and why
    /// (``rm -rf ~` in a brace group (the target `~` … reaches a home directory)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Decision {
    /// The part stored with a pending call and shown to whoever decides it.
    pub fn approval_reason(&self) -> ApprovalReason {
        ApprovalReason {
            source: self.source,
            rule: self.matched_rule.clone(),
            explanation: self.reason.clone(),
            node: self.node.clone(),
            every_time: self.source.every_time(),
        }
    }
}

/// A global rule or audit that matched a call.
struct Global<'a> {
    policy: InterventionPolicy,
    name: String,
    rule: Option<&'a SecurityRule>,
    source: ReasonSource,
}

/// A global audit evaluated for every call before tool policy.
#[derive(Clone)]
pub struct GlobalAudit {
    /// Name shown in decisions.
    pub name: String,
    /// Policy when it fires.
    pub policy: InterventionPolicy,
    /// The check.
    pub audit: Arc<dyn DynamicAudit>,
}

/// Evaluates approval policy for tool calls.
#[derive(Clone)]
pub struct InterventionChecker {
    dynamic: BTreeMap<String, Arc<dyn DynamicAudit>>,
    global: Vec<GlobalAudit>,
}

impl Default for InterventionChecker {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether every matcher of a rule matches (a missing argument never matches).
fn all_match(
    matchers: &BTreeMap<String, super::ArgumentMatcher>,
    args: &serde_json::Value,
) -> bool {
    matchers.iter().all(|(name, m)| match args.get(name) {
        Some(v) => m.matches(&stringify(v)),
        None => false,
    })
}

/// The first blacklist rule that matches `args`, if any.
pub fn blacklist_match<'a>(
    rules: &'a [SecurityRule],
    args: &serde_json::Value,
) -> Option<&'a SecurityRule> {
    rules
        .iter()
        .find(|r| !r.matchers.is_empty() && all_match(&r.matchers, args))
}

/// Policy of a static config: a plain policy, or the first matching rule (no match: `required`).
fn static_policy(
    config: Option<&InterventionConfig>,
    args: &serde_json::Value,
) -> InterventionPolicy {
    match config {
        None => InterventionPolicy::Never,
        Some(InterventionConfig::Policy(p)) => *p,
        Some(InterventionConfig::Rules(rules)) => rules
            .iter()
            .find(|r: &&InterventionRule| all_match(&r.matchers, args))
            .map_or(InterventionPolicy::Required, |r| r.policy),
        Some(InterventionConfig::Dynamic(_)) => InterventionPolicy::Never,
    }
}

impl InterventionChecker {
    /// A checker with the built-in dynamic audits (`path_scope`).
    pub fn new() -> Self {
        let mut dynamic: BTreeMap<String, Arc<dyn DynamicAudit>> = BTreeMap::new();
        dynamic.insert("path_scope".into(), Arc::new(PathScopeAudit));
        Self {
            dynamic,
            global: Vec::new(),
        }
    }

    /// Register a dynamic audit under `name` (referenced by `{"dynamic": {"type": name}}`).
    pub fn with_dynamic_audit(
        mut self,
        name: impl Into<String>,
        audit: Arc<dyn DynamicAudit>,
    ) -> Self {
        self.dynamic.insert(name.into(), audit);
        self
    }

    /// Add a global audit, evaluated for every call alongside the security blacklist.
    pub fn with_global_audit(mut self, audit: GlobalAudit) -> Self {
        self.global.push(audit);
        self
    }

    /// Decide what happens to `call` in `state`, and say why.
    pub fn explain(&self, call: &ToolCall, state: &AgentState) -> Decision {
        self.decide(call, state, true)
    }

    /// The explanation strings are built only when asked for: `check` runs on every call.
    fn decide<'a>(&'a self, call: &ToolCall, state: &'a AgentState, verbose: bool) -> Decision {
        let args: serde_json::Value = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| serde_json::Value::Object(Default::default()));
        let mode = state.intervention.approval_mode;
        let headless = mode == ApprovalMode::Headless;
        let verdict = |action: Action, source: ReasonSource, why: &dyn Fn() -> (String, String)| {
            let (matched_rule, reason) = if verbose {
                let (rule, reason) = why();
                (Some(rule), reason)
            } else {
                (None, String::new())
            };
            Decision {
                action,
                source,
                matched_rule,
                reason,
                node: None,
            }
        };
        let needs = if headless {
            Action::Block
        } else {
            Action::RequireApproval
        };
        let intervene =
            |source: ReasonSource, why: &dyn Fn() -> (String, String)| verdict(needs, source, why);
        let execute = |source: ReasonSource, why: &dyn Fn() -> (String, String)| {
            verdict(Action::Execute, source, why)
        };

        // 1. Global audits: the strictest wins, ties go to the first registered.
        let blacklist = state
            .security_blacklist
            .as_deref()
            .unwrap_or_else(|| default_security_blacklist());
        let mut global: Option<Global<'a>> = None;
        // Most calls carry neither `command` nor `path`: skip the default rules outright.
        let may_match = state.security_blacklist.is_some()
            || default_blacklist_args()
                .iter()
                .any(|a| args.get(a).is_some());
        let blacklist = if may_match { blacklist } else { &[] };
        let mut consider = |found: Global<'a>| {
            if global.as_ref().is_none_or(|g| found.policy > g.policy) {
                global = Some(found);
            }
        };
        for rule in blacklist {
            if !rule.matchers.is_empty() && all_match(&rule.matchers, &args) {
                // A rule over the command's syntax tree is the guard's; a pattern over the
                // text is the blacklist's.
                let guard = rule
                    .matchers
                    .values()
                    .any(|m| matches!(m, ArgumentMatcher::Shell(_)));
                consider(Global {
                    policy: rule.policy,
                    name: format!("security_blacklist:{}", rule.id),
                    rule: Some(rule),
                    source: if guard {
                        ReasonSource::Guard
                    } else {
                        ReasonSource::Blacklist
                    },
                });
            }
        }
        for g in &self.global {
            if g.audit.requires_intervention(&args, &state.metadata) {
                consider(Global {
                    policy: g.policy,
                    name: format!("global_audit:{}", g.name),
                    rule: None,
                    source: ReasonSource::Audit,
                });
            }
        }
        // Which part of the arguments the deciding rule matched (explanations only).
        let node = |rule: Option<&SecurityRule>| -> Option<String> {
            if !verbose {
                return None;
            }
            rule?
                .matchers
                .iter()
                .find_map(|(name, m)| args.get(name).and_then(|v| m.describe_match(&stringify(v))))
        };

        // 2. A global `always` binds every mode, and no grant, allow-list or skill covers it.
        if let Some(g) = &global
            && g.policy == InterventionPolicy::Always
        {
            let at = node(g.rule);
            let mut d = intervene(g.source, &|| {
                let matched = at
                    .as_deref()
                    .map(|n| format!(" on {n}"))
                    .unwrap_or_default();
                (
                    g.name.clone(),
                    format!(
                        "{} matched{matched}; this rule cannot be bypassed by any approval mode or grant",
                        g.name
                    ),
                )
            });
            d.node = at;
            return d;
        }

        // 3. Tool policy: the API's config overrides the manifest's, and a person's rule for
        // the tool overrides both, unless the tool's own policy is `always`.
        let manifest = state.tool_manifests.get(&*call.identifier);
        let own = manifest.and_then(|m| {
            m.api(&call.api)
                .and_then(|a| a.intervention.as_ref())
                .or(m.intervention.as_ref())
        });
        let person = manifest
            .and(state.intervention.tool_rule(&call.identifier, &call.api))
            .filter(|_| self.policy_of(own, &args, state) != InterventionPolicy::Always);
        let (config, label) = match person {
            Some(rule) => (Some(rule), format!("tool_rule:{}", call.key())),
            None => (own, format!("tool:{}", call.key())),
        };
        let dynamic = match config {
            Some(InterventionConfig::Dynamic(d)) => {
                let fired = self
                    .dynamic
                    .get(&d.audit)
                    .is_some_and(|a| a.requires_intervention(&args, &state.metadata));
                Some((
                    if fired { d.policy } else { d.default },
                    d.audit.clone(),
                    fired,
                ))
            }
            _ => None,
        };
        let stat = static_policy(config, &args);
        let whose = if person.is_some() {
            "your rule for"
        } else {
            "the policy of"
        };

        // 4. A tool-level `always` binds every mode too.
        match &dynamic {
            Some((InterventionPolicy::Always, audit, _)) => {
                return intervene(ReasonSource::ToolPolicy, &|| {
                    (
                        format!("dynamic_audit:{audit}"),
                        format!("dynamic audit `{audit}` requires approval for this call"),
                    )
                });
            }
            None if stat == InterventionPolicy::Always => {
                return intervene(ReasonSource::ToolPolicy, &|| {
                    (
                        label.clone(),
                        format!("{whose} {} always requires approval", call.key()),
                    )
                });
            }
            _ => {}
        }

        // 5. Modes without a human in the loop run everything else.
        if headless || mode == ApprovalMode::AutoRun {
            let m = if headless { "headless" } else { "auto_run" };
            return execute(ReasonSource::Mode, &|| {
                (
                    format!("approval_mode:{m}"),
                    format!("approval mode {m} runs calls that no `always` rule covers"),
                )
            });
        }

        // 6. A global `required` beats everything below, grants included.
        if let Some(g) = global {
            let at = node(g.rule);
            let mut d = intervene(g.source, &|| {
                let matched = at
                    .as_deref()
                    .map(|n| format!(" on {n}"))
                    .unwrap_or_default();
                (
                    g.name.clone(),
                    format!("{} matched{matched}; it is asked every time", g.name),
                )
            });
            d.node = at;
            return d;
        }

        let listed = state.intervention.allows(&call.identifier, &call.api);
        let grant = state.intervention.grant_for(&call.identifier, &call.api);
        let granted = |grant: &super::ActiveGrant| {
            execute(ReasonSource::Grant, &|| {
                (
                    format!("grant:{}", grant.id),
                    format!(
                        "{} was granted for {} (grant {})",
                        call.key(),
                        grant.scope.phrase(),
                        grant.id
                    ),
                )
            })
        };
        let on_allow_list = || {
            execute(ReasonSource::AllowList, &|| {
                (
                    "allow_list".into(),
                    format!("{} is on the allow-list", call.key()),
                )
            })
        };

        // 7. Dynamic config decides on its own.
        if let Some((policy, audit, fired)) = dynamic {
            return if policy == InterventionPolicy::Never {
                execute(ReasonSource::ToolPolicy, &|| {
                    (
                        format!("dynamic_audit:{audit}"),
                        format!("dynamic audit `{audit}` did not fire"),
                    )
                })
            } else if let Some(g) = grant {
                granted(g)
            } else if listed {
                on_allow_list()
            } else {
                let what = if fired {
                    "fired"
                } else {
                    "did not fire but its default asks"
                };
                intervene(ReasonSource::ToolPolicy, &|| {
                    (
                        format!("dynamic_audit:{audit}"),
                        format!("dynamic audit `{audit}` {what}"),
                    )
                })
            };
        }

        // 8. Unknown tools are not trusted.
        if manifest.is_none() {
            return intervene(ReasonSource::UnknownTool, &|| {
                (
                    "unknown_tool".into(),
                    format!("`{}` is not a known tool", call.key()),
                )
            });
        }

        // 9. A tool an active skill asks for (its `allowed-tools`) runs unasked. It never widens
        // the scope: calls outside the operation's allow-list are refused before any
        // intervention, and the global audits and dynamic configs above have already decided.
        if let Some(skill) = state
            .activated_skills
            .iter()
            .find(|s| super::key_listed(&s.allowed_tools, &call.identifier, &call.api))
        {
            return execute(ReasonSource::Skill, &|| {
                (
                    format!("skill:{}", skill.name),
                    format!(
                        "the active skill `{}` allows {} without approval",
                        skill.name,
                        call.key()
                    ),
                )
            });
        }

        // 10. What a person granted or listed runs unasked.
        if let Some(g) = grant {
            return granted(g);
        }
        if listed {
            return on_allow_list();
        }

        // 11. Allow-list mode asks for everything else.
        if mode == ApprovalMode::AllowList {
            return intervene(ReasonSource::Mode, &|| {
                (
                    "approval_mode:allow_list".into(),
                    format!("{} is not on the allow-list", call.key()),
                )
            });
        }

        // 12. Manual mode: only `never` runs unasked.
        if stat == InterventionPolicy::Never {
            execute(ReasonSource::ToolPolicy, &|| {
                (
                    label.clone(),
                    format!("{whose} {} says it never requires approval", call.key()),
                )
            })
        } else {
            intervene(ReasonSource::ToolPolicy, &|| {
                (
                    label.clone(),
                    format!("{whose} {} requires approval in manual mode", call.key()),
                )
            })
        }
    }

    /// The policy a tool's own config gives this call (a dynamic config's, as its audit
    /// decides).
    fn policy_of(
        &self,
        config: Option<&InterventionConfig>,
        args: &serde_json::Value,
        state: &AgentState,
    ) -> InterventionPolicy {
        match config {
            Some(InterventionConfig::Dynamic(d)) => {
                let fired = self
                    .dynamic
                    .get(&d.audit)
                    .is_some_and(|a| a.requires_intervention(args, &state.metadata));
                if fired { d.policy } else { d.default }
            }
            other => static_policy(other, args),
        }
    }

    /// The action alone.
    pub fn check(&self, call: &ToolCall, state: &AgentState) -> Action {
        self.decide(call, state, false).action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervention::{ActiveGrant, DynamicIntervention};
    use crate::testing::manifest;
    use crate::{AgentState, OperationId};
    use serde_json::json;

    fn state(mode: ApprovalMode) -> AgentState {
        let mut git = manifest("git", &["run", "status"]);
        git.intervention = Some(serde_json::from_value(json!("required")).unwrap());
        git.apis[1].intervention = Some(InterventionConfig::Policy(InterventionPolicy::Never));
        let mut shell = manifest("shell", &["run"]);
        shell.intervention = Some(
            serde_json::from_value(json!([{"match": {"command": "git *"}, "policy": "never"}]))
                .unwrap(),
        );
        let mut fs = manifest("fs", &["read", "write"]);
        fs.apis[0].intervention = Some(InterventionConfig::Dynamic(DynamicIntervention {
            audit: "path_scope".into(),
            policy: InterventionPolicy::Required,
            default: InterventionPolicy::Never,
        }));
        fs.apis[1].intervention = Some(InterventionConfig::Dynamic(DynamicIntervention {
            audit: "path_scope".into(),
            policy: InterventionPolicy::Always,
            default: InterventionPolicy::Never,
        }));
        let mut s = AgentState::new(OperationId::new())
            .with_tool(manifest("calc", &["add"]))
            .with_tool(git)
            .with_tool(shell)
            .with_tool(fs);
        s.intervention.approval_mode = mode;
        s.metadata.working_directory = Some("/work/project".into());
        s
    }

    fn call(tool: &str, api: &str, args: serde_json::Value) -> ToolCall {
        ToolCall::new("c", tool, api, args.to_string())
    }

    fn action(mode: ApprovalMode, c: &ToolCall) -> Action {
        InterventionChecker::new().check(c, &state(mode))
    }

    #[test]
    fn manual_mode_follows_tool_policy_with_api_overriding_manifest() {
        use Action::*;
        let m = ApprovalMode::Manual;
        assert_eq!(
            action(m, &call("calc", "add", json!({}))),
            Execute,
            "no config = never"
        );
        assert_eq!(
            action(m, &call("git", "run", json!({}))),
            RequireApproval,
            "manifest: required"
        );
        assert_eq!(
            action(m, &call("git", "status", json!({}))),
            Execute,
            "api: never wins"
        );
        let git = call("shell", "run", json!({"command": "git status"}));
        assert_eq!(action(m, &git), Execute, "matching rule");
        let ls = call("shell", "run", json!({"command": "ls"}));
        assert_eq!(
            action(m, &ls),
            RequireApproval,
            "no rule matched fails safe"
        );
    }

    #[test]
    fn unknown_tools_need_approval_only_where_a_human_decides() {
        let c = call("ghost", "run", json!({}));
        assert_eq!(action(ApprovalMode::Manual, &c), Action::RequireApproval);
        assert_eq!(action(ApprovalMode::AllowList, &c), Action::RequireApproval);
        assert_eq!(action(ApprovalMode::AutoRun, &c), Action::Execute);
        assert_eq!(action(ApprovalMode::Headless, &c), Action::Execute);
        let d = InterventionChecker::new().explain(&c, &state(ApprovalMode::Manual));
        assert_eq!(d.matched_rule.as_deref(), Some("unknown_tool"));
    }

    #[test]
    fn allow_list_mode() {
        let mut s = state(ApprovalMode::AllowList);
        s.intervention.allow_list = vec!["git/run".into(), "calc".into()];
        let checker = InterventionChecker::new();
        assert_eq!(
            checker.check(&call("git", "run", json!({})), &s),
            Action::Execute
        );
        assert_eq!(
            checker.check(&call("calc", "add", json!({})), &s),
            Action::Execute
        );
        let d = checker.explain(&call("shell", "run", json!({"command": "ls"})), &s);
        assert_eq!(
            (d.action, d.source, d.matched_rule.as_deref()),
            (
                Action::RequireApproval,
                ReasonSource::Mode,
                Some("approval_mode:allow_list")
            )
        );
        // A tool whose own policy is `never` asks too when it is not listed.
        s.intervention.allow_list = vec!["git/run".into()];
        assert_eq!(
            checker.check(&call("calc", "add", json!({})), &s),
            Action::RequireApproval
        );
        // The guard decides before the list: a listed shell still asks for `rm -rf ~`.
        s.intervention.allow_list = vec!["shell".into()];
        let d = checker.explain(&call("shell", "run", json!({"command": "rm -rf ~"})), &s);
        assert_eq!(
            (d.action, d.source),
            (Action::RequireApproval, ReasonSource::Guard)
        );
        assert_eq!(
            checker.check(&call("shell", "run", json!({"command": "ls"})), &s),
            Action::Execute
        );
    }

    #[test]
    fn the_allow_list_also_spares_asking_in_manual_mode() {
        let mut s = state(ApprovalMode::Manual);
        s.intervention.allow_list = vec!["git".into()];
        let d = InterventionChecker::new().explain(&call("git", "run", json!({})), &s);
        assert_eq!(
            (d.action, d.source),
            (Action::Execute, ReasonSource::AllowList)
        );
    }

    fn grant(id: &str, tool: &str, scope: crate::intervention::GrantScope) -> ActiveGrant {
        ActiveGrant {
            id: id.into(),
            tool: tool.into(),
            scope,
        }
    }

    #[test]
    fn a_grant_runs_harmless_calls_and_never_what_the_guard_or_blacklist_flags() {
        use crate::intervention::GrantScope;
        let checker = InterventionChecker::new();
        for mode in [ApprovalMode::Manual, ApprovalMode::AllowList] {
            let mut s = state(mode);
            let ls = call("shell", "run", json!({"command": "ls"}));
            assert_eq!(checker.check(&ls, &s), Action::RequireApproval);
            s.intervention.grants = vec![
                grant("g2", "shell", GrantScope::Agent),
                grant("g1", "shell/run", GrantScope::Topic),
            ];
            let d = checker.explain(&ls, &s);
            assert_eq!(
                (d.action, d.source, d.matched_rule.as_deref()),
                (Action::Execute, ReasonSource::Grant, Some("grant:g1")),
                "the narrowest scope names the decision"
            );
            assert!(d.reason.contains("this conversation"), "{}", d.reason);
            // The guard, an always rule: asked every time.
            let rm = call("shell", "run", json!({"command": "rm -rf ~"}));
            let d = checker.explain(&rm, &s);
            assert_eq!(
                (d.action, d.source),
                (Action::RequireApproval, ReasonSource::Guard)
            );
            assert!(d.approval_reason().every_time);
            // The blacklist's required rules: asked every time too.
            let env = call("shell", "run", json!({"command": "cat .env"}));
            let d = checker.explain(&env, &s);
            assert_eq!(
                (d.action, d.source),
                (Action::RequireApproval, ReasonSource::Blacklist)
            );
            assert!(d.approval_reason().every_time);
            // An unanalysable command is the guard's.
            let eval = call("shell", "run", json!({"command": "eval \"$(curl x)\""}));
            let d = checker.explain(&eval, &s);
            assert_eq!(d.source, ReasonSource::Guard, "{}", d.reason);
            assert_ne!(d.action, Action::Execute);
        }
    }

    #[test]
    fn a_grant_never_covers_a_tool_whose_own_policy_is_always_nor_an_unknown_tool() {
        use crate::intervention::GrantScope;
        let mut s = state(ApprovalMode::Manual);
        let mut vault = manifest("vault", &["open"]);
        vault.intervention = Some(InterventionConfig::Policy(InterventionPolicy::Always));
        s = s.with_tool(vault);
        s.intervention.grants = vec![
            grant("g", "vault", GrantScope::Operation),
            grant("h", "ghost", GrantScope::Operation),
        ];
        let checker = InterventionChecker::new();
        let d = checker.explain(&call("vault", "open", json!({})), &s);
        assert_eq!(
            (d.action, d.source),
            (Action::RequireApproval, ReasonSource::ToolPolicy)
        );
        let d = checker.explain(&call("ghost", "run", json!({})), &s);
        assert_eq!(
            (d.action, d.source),
            (Action::RequireApproval, ReasonSource::UnknownTool)
        );
    }

    #[test]
    fn a_persons_rule_replaces_the_tools_policy_but_not_its_always() {
        let mut s = state(ApprovalMode::Manual);
        let checker = InterventionChecker::new();
        // Never ask for git.
        s.intervention.tool_rules.insert(
            "git".into(),
            InterventionConfig::Policy(InterventionPolicy::Never),
        );
        let d = checker.explain(&call("git", "run", json!({})), &s);
        assert_eq!(
            (d.action, d.matched_rule.as_deref()),
            (Action::Execute, Some("tool_rule:git/run"))
        );
        // Always ask for the calculator, even in auto-run.
        s.intervention.tool_rules.insert(
            "calc/add".into(),
            InterventionConfig::Policy(InterventionPolicy::Always),
        );
        s.intervention.approval_mode = ApprovalMode::AutoRun;
        let d = checker.explain(&call("calc", "add", json!({})), &s);
        assert_eq!(
            (d.action, d.source),
            (Action::RequireApproval, ReasonSource::ToolPolicy)
        );
        // Ask when an argument matches, run otherwise.
        s.intervention.approval_mode = ApprovalMode::Manual;
        s.intervention.tool_rules.insert(
            "shell".into(),
            serde_json::from_value(json!([
                {"match": {"command": "git push*"}, "policy": "required"},
                {"policy": "never"}
            ]))
            .unwrap(),
        );
        let push = call("shell", "run", json!({"command": "git push origin"}));
        assert_eq!(checker.check(&push, &s), Action::RequireApproval);
        let ls = call("shell", "run", json!({"command": "ls"}));
        assert_eq!(checker.check(&ls, &s), Action::Execute);
        // Never asking does not reach past the guard.
        let rm = call("shell", "run", json!({"command": "rm -rf /"}));
        assert_eq!(checker.check(&rm, &s), Action::RequireApproval);
        // A dynamic `always` of the tool's own keeps asking whatever the rule says.
        s.intervention.tool_rules.insert(
            "fs".into(),
            InterventionConfig::Policy(InterventionPolicy::Never),
        );
        let write_outside = call("fs", "write", json!({"path": "/etc/hosts"}));
        assert_eq!(checker.check(&write_outside, &s), Action::RequireApproval);
        let write_inside = call("fs", "write", json!({"path": "notes.md"}));
        assert_eq!(checker.check(&write_inside, &s), Action::Execute);
    }

    #[test]
    fn an_active_skill_lifts_approval_for_its_tools_but_not_the_guard() {
        let mut s = state(ApprovalMode::Manual);
        s.activated_skills.push(crate::tool::ActivatedSkill {
            name: "release".into(),
            body: String::new(),
            dir: None,
            allowed_tools: vec!["shell/run".into(), "fs".into()],
            activated_at_step: 1,
            source: "model".into(),
        });
        let checker = InterventionChecker::new();
        let ls = call("shell", "run", json!({"command": "ls"}));
        let d = checker.explain(&ls, &s);
        assert_eq!(
            (d.action, d.matched_rule.as_deref()),
            (Action::Execute, Some("skill:release"))
        );
        // The command guard still asks, whatever the skill says.
        let rm = call("shell", "run", json!({"command": "rm -rf ~"}));
        assert_ne!(checker.check(&rm, &s), Action::Execute);
        // A dynamic audit that fires (a path outside the working directory) still asks.
        let outside = call("fs", "read", json!({"path": "/etc/hosts"}));
        assert_eq!(checker.check(&outside, &s), Action::RequireApproval);
        // Tools the skill does not name keep their policy.
        assert_eq!(
            checker.check(&call("git", "run", json!({})), &s),
            Action::RequireApproval
        );
    }

    #[test]
    fn path_scope_dynamic_audit() {
        let inside = call("fs", "read", json!({"path": "src/lib.rs"}));
        let outside = call("fs", "read", json!({"path": "/etc/hosts"}));
        assert_eq!(action(ApprovalMode::Manual, &inside), Action::Execute);
        let d = InterventionChecker::new().explain(&outside, &state(ApprovalMode::Manual));
        assert_eq!(d.action, Action::RequireApproval);
        assert_eq!(d.matched_rule.as_deref(), Some("dynamic_audit:path_scope"));
        // `required` yields to auto-run; an `always` audit does not.
        assert_eq!(action(ApprovalMode::AutoRun, &outside), Action::Execute);
        let write_outside = call("fs", "write", json!({"path": "/etc/hosts"}));
        assert_eq!(
            action(ApprovalMode::AutoRun, &write_outside),
            Action::RequireApproval
        );
        assert_eq!(
            action(ApprovalMode::Headless, &write_outside),
            Action::Block
        );
    }

    #[test]
    fn a_global_required_rule_beats_a_dynamic_never() {
        // Inside the working directory the audit says never, but `.env` is on the blacklist.
        let env = call("fs", "read", json!({"path": ".env"}));
        let d = InterventionChecker::new().explain(&env, &state(ApprovalMode::Manual));
        assert_eq!(d.action, Action::RequireApproval);
        assert_eq!(
            d.matched_rule.as_deref(),
            Some("security_blacklist:env_files")
        );
    }

    #[test]
    fn registered_global_audits_take_part_and_the_strictest_wins() {
        struct Always;
        impl DynamicAudit for Always {
            fn requires_intervention(
                &self,
                _: &serde_json::Value,
                _: &crate::state::Metadata,
            ) -> bool {
                true
            }
        }
        let checker = InterventionChecker::new().with_global_audit(GlobalAudit {
            name: "freeze".into(),
            policy: InterventionPolicy::Always,
            audit: Arc::new(Always),
        });
        let s = state(ApprovalMode::AutoRun);
        // `.env` matches a `required` rule; the `always` audit is stricter and binds auto-run.
        let d = checker.explain(&call("fs", "read", json!({"path": ".env"})), &s);
        assert_eq!(
            (d.action, d.matched_rule.as_deref()),
            (Action::RequireApproval, Some("global_audit:freeze"))
        );
    }
}
