//! A plan: the works a planner (or a person) proposes, and the checks that make it part of the
//! graph. A plan is refused whole, naming what is wrong, or taken whole as one revision.

use super::graph::{Goal, PlanRevision, Work, WorkStatus};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Longest work id.
pub const MAX_ID: usize = 64;
/// Longest instruction or criteria text.
pub const MAX_TEXT: usize = 8000;

/// One work as proposed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProposedWork {
    /// Short and unique in the goal: letters, digits, `-` and `_`.
    #[cfg_attr(feature = "schemars", schemars(pattern(r"^[A-Za-z0-9_-]{1,64}$")))]
    pub id: String,
    /// What to do, for an agent that knows nothing else of the goal.
    #[cfg_attr(
        feature = "schemars",
        schemars(length(min = 1, max = 8000), pattern(r"\S"))
    )]
    pub instruction: String,
    /// The agent that does it (omitted or null: the goal's agent).
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(pattern(r"^[A-Za-z0-9_-]{1,64}$")))]
    pub assignee: Option<String>,
    /// Ids of the works that must be done first.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(length(max = 200)))]
    pub depends_on: Vec<String>,
    /// What an independent reviewer checks to call it done.
    #[cfg_attr(
        feature = "schemars",
        schemars(length(min = 1, max = 8000), pattern(r"\S"))
    )]
    pub acceptance: String,
}

/// A proposed plan: what the planner model answers (strict schema) or a person writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProposedPlan {
    /// The works, in the order they are best read.
    pub works: Vec<ProposedWork>,
}

/// The JSON schema a planner's answer follows (strict: every field required, nothing else;
/// `assignee` null for the goal's agent): [`ProposedPlan`]'s.
pub fn schema() -> serde_json::Value {
    let text = serde_json::json!({"type": "string"});
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["works"],
        "properties": {
            "works": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "instruction", "assignee", "depends_on", "acceptance"],
                    "properties": {
                        "id": text,
                        "instruction": text,
                        "assignee": {"type": ["string", "null"]},
                        "depends_on": {"type": "array", "items": text},
                        "acceptance": text
                    }
                }
            }
        }
    })
}

/// Why a plan is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// It has no works (and no finished work is kept).
    #[error("the plan has no works")]
    Empty,
    /// More works than the goal allows.
    #[error("the plan has {count} works; this goal allows at most {max}")]
    TooMany {
        /// How many.
        count: usize,
        /// The goal's limit.
        max: u32,
    },
    /// An id that is empty, too long or has characters other than letters, digits, `-`, `_`.
    #[error("work id `{0}` is not a short name of letters, digits, `-` and `_`")]
    BadId(String),
    /// Two works with one id (or a new work with a kept work's id).
    #[error("work id `{0}` is used twice")]
    DuplicateId(String),
    /// An empty or overlong instruction or criteria.
    #[error("work `{work}`: its {field} is empty or longer than {MAX_TEXT} characters")]
    BadText {
        /// The work.
        work: String,
        /// `instruction` or `acceptance`.
        field: &'static str,
    },
    /// A dependency on no work of the plan.
    #[error("work `{work}` depends on `{on}`, which is not in the plan")]
    UnknownDependency {
        /// The work.
        work: String,
        /// The missing one.
        on: String,
    },
    /// Dependencies that go round.
    #[error("the works {0:?} depend on each other in a cycle")]
    Cycle(Vec<String>),
    /// An assignee that is not one of the owner's agents.
    #[error("work `{work}` is assigned to `{agent}`, which is not one of your agents")]
    UnknownAssignee {
        /// The work.
        work: String,
        /// The agent named.
        agent: String,
    },
}

fn good_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn good_text(t: &str) -> bool {
    !t.trim().is_empty() && t.chars().count() <= MAX_TEXT
}

/// Check `plan` as the next revision of `goal` (made by `by`, because `why`), keeping the works
/// that passed and retiring the ones it leaves out; `agent_exists` says whether an assignee is one of the owner's agents. Returns
/// the new works list and the revision, or why the plan is refused (the goal is untouched).
pub fn check(
    goal: &Goal,
    plan: &ProposedPlan,
    by: &str,
    why: &str,
    agent_exists: impl Fn(&str) -> bool,
) -> Result<(Vec<Work>, PlanRevision), PlanError> {
    let n = u32::try_from(goal.revisions.len())
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    // A revision keeps what passed. A work of the plan named again is replaced by its new
    // definition (fresh attempts, operations of this revision); one left out is retired, kept
    // with its attempts for the record.
    let named: BTreeSet<&str> = plan.works.iter().map(|p| p.id.as_str()).collect();
    let mut works: Vec<Work> = goal
        .works
        .iter()
        .filter_map(|w| match w.status {
            WorkStatus::Passed => Some(w.clone()),
            _ if named.contains(w.id.as_str()) => None,
            WorkStatus::Retired => Some(w.clone()),
            WorkStatus::Pending
            | WorkStatus::Ready
            | WorkStatus::Running
            | WorkStatus::Verifying
            | WorkStatus::Failed
            | WorkStatus::Blocked => Some(Work {
                status: WorkStatus::Retired,
                ..w.clone()
            }),
        })
        .collect();
    if plan.works.is_empty() && !works.iter().any(|w| w.status == WorkStatus::Passed) {
        return Err(PlanError::Empty);
    }
    let live = works
        .iter()
        .filter(|w| w.status == WorkStatus::Passed)
        .count()
        + plan.works.len();
    if live > goal.limits.max_works as usize {
        return Err(PlanError::TooMany {
            count: live,
            max: goal.limits.max_works,
        });
    }
    let mut ids: BTreeSet<&str> = works.iter().map(|w| w.id.as_str()).collect();
    for p in &plan.works {
        if !good_id(&p.id) {
            return Err(PlanError::BadId(p.id.clone()));
        }
        if !ids.insert(&p.id) {
            return Err(PlanError::DuplicateId(p.id.clone()));
        }
        for (field, text) in [
            ("instruction", &p.instruction),
            ("acceptance", &p.acceptance),
        ] {
            if !good_text(text) {
                return Err(PlanError::BadText {
                    work: p.id.clone(),
                    field,
                });
            }
        }
        if let Some(agent) = &p.assignee
            && !agent_exists(agent)
        {
            return Err(PlanError::UnknownAssignee {
                work: p.id.clone(),
                agent: agent.clone(),
            });
        }
    }
    for p in &plan.works {
        if let Some(on) = p.depends_on.iter().find(|d| !ids.contains(d.as_str())) {
            return Err(PlanError::UnknownDependency {
                work: p.id.clone(),
                on: on.clone(),
            });
        }
    }
    if let Some(cycle) = cycle(&plan.works) {
        return Err(PlanError::Cycle(cycle));
    }
    let kept: Vec<String> = works.iter().map(|w| w.id.clone()).collect();
    for p in &plan.works {
        let mut depends_on = p.depends_on.clone();
        depends_on.sort();
        depends_on.dedup();
        works.push(Work {
            id: p.id.clone(),
            instruction: p.instruction.trim().to_owned(),
            assignee: p.assignee.clone().filter(|a| !a.trim().is_empty()),
            depends_on,
            acceptance: p.acceptance.trim().to_owned(),
            status: WorkStatus::Pending,
            attempts: Vec::new(),
            extra_attempts: 0,
            revision: n,
        });
    }
    let revision = PlanRevision {
        n,
        by: by.to_owned(),
        why: why.to_owned(),
        works: kept
            .into_iter()
            .chain(plan.works.iter().map(|p| p.id.clone()))
            .collect(),
    };
    Ok((works, revision))
}

/// A cycle among `works`' dependencies, if there is one (kept works cannot be in one: they
/// depend on nothing new).
fn cycle(works: &[ProposedWork]) -> Option<Vec<String>> {
    let deps: BTreeMap<&str, Vec<&str>> = works
        .iter()
        .map(|w| {
            (
                w.id.as_str(),
                w.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // 0: unseen, 1: on the path, 2: done.
    let mut mark: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        n: &'a str,
        deps: &BTreeMap<&'a str, Vec<&'a str>>,
        mark: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match mark.get(n) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| *p == n).unwrap_or(0);
                return Some(path[from..].iter().map(|s| (*s).to_owned()).collect());
            }
            _ => {}
        }
        mark.insert(n, 1);
        path.push(n);
        for d in deps.get(n).into_iter().flatten() {
            if deps.contains_key(d)
                && let Some(c) = visit(d, deps, mark, path)
            {
                return Some(c);
            }
        }
        path.pop();
        mark.insert(n, 2);
        None
    }
    for w in works {
        let mut path = Vec::new();
        if let Some(c) = visit(&w.id, &deps, &mut mark, &mut path) {
            return Some(c);
        }
    }
    None
}
