//! Human intervention: approval policies, argument matchers, the default security blacklist
//! (with shell-aware `rm` detection), dynamic audits, the checker that explains decisions
//! (and the reason stored with a pending call), and the grants a person makes.

mod audit;
mod blacklist;
mod checker;
mod grant;
mod matcher;
mod policy;
mod reason;
/// The shell guard ([`rein_shell_guard`]): the blacklist's shell rules ask it what a command
/// line would do. A dependency, not a port: no surface can run the checker without it.
pub use rein_shell_guard as shell;

pub use audit::{DynamicAudit, PathScopeAudit, lexical_join};
pub use blacklist::default_security_blacklist;
pub use checker::{Action, Decision, GlobalAudit, InterventionChecker, blacklist_match};
pub use grant::{ActiveGrant, GrantScope, UnknownGrantScope};
pub use matcher::{ArgumentMatcher, RegexPattern, stringify, wildcard_match};
pub use policy::{
    ApprovalMode, DynamicIntervention, InterventionConfig, InterventionPolicy, InterventionRule,
    SecurityRule, UserInterventionConfig, key_listed,
};
pub use reason::{ApprovalReason, ReasonSource};
