//! Human intervention: approval policies, argument matchers, the default security blacklist
//! (with shell-aware `rm` detection), dynamic audits and the checker that explains decisions.

mod audit;
mod blacklist;
mod checker;
mod matcher;
mod policy;
pub mod shell;

pub use audit::{DynamicAudit, PathScopeAudit, lexical_join};
pub use blacklist::default_security_blacklist;
pub use checker::{Action, Decision, GlobalAudit, InterventionChecker, blacklist_match};
pub use matcher::{ArgumentMatcher, RegexPattern, stringify, wildcard_match};
pub use policy::{
    ApprovalMode, DynamicIntervention, InterventionConfig, InterventionPolicy, InterventionRule,
    SecurityRule, UserInterventionConfig, key_listed,
};
