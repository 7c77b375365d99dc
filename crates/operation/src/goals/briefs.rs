//! What a goal tells its owner's inbox: a brief when it comes to rest where a person must look
//! (an urgent decision when it waits for them; a result when it is achieved; an error when it
//! failed), pointing at the goal and saying what can be done from the command line. A decision
//! brief offers the decisions themselves as its actions ([`actions`]); resolving it with one
//! decides the goal ([`decision_of`]) before the brief is marked resolved.

use rein_core::brief::{Artifact, Brief, BriefAction, BriefKind, BriefPriority};
use rein_core::goal::{Goal, GoalDecision, GoalStatus, WorkStatus};

/// Longest action key a brief can carry.
const MAX_KEY: usize = 64;

/// What a person can decide, from the inbox, about `goal` as it waits for them: retry or skip
/// each blocked work (up to four), resume when nothing is blocked and no gap was found, plan
/// again, accept, reject, cancel, or only acknowledge.
fn actions(goal: &Goal) -> Vec<BriefAction> {
    let offer = |key: String, label: String| BriefAction { key, label };
    let blocked: Vec<&str> = goal
        .works
        .iter()
        .filter(|w| w.status == WorkStatus::Blocked)
        .map(|w| w.id.as_str())
        .collect();
    let mut out = Vec::new();
    for w in blocked.iter().take(4) {
        for (verb, label) in [("retry", "Retry"), ("skip", "Skip")] {
            let key = format!("{verb}:{w}");
            if key.len() <= MAX_KEY {
                out.push(offer(key, format!("{label} {w}")));
            }
        }
    }
    if blocked.is_empty() && goal.verdict.as_ref().is_none_or(|v| v.passed) {
        out.push(offer("resume".into(), "Resume".into()));
    }
    for (key, label) in [
        ("replan", "Plan again"),
        ("accept", "Accept as it is"),
        ("reject", "Reject"),
        ("cancel", "Cancel the goal"),
        ("acknowledge", "Acknowledge"),
    ] {
        out.push(offer(key.into(), label.into()));
    }
    out
}

/// Why a brief's action decides nothing about its goal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoDecision {
    /// `retry:` or `skip:` with no work after it.
    #[error("`{0}` names no work")]
    NoWork(String),
    /// An action that is none of a goal's decisions.
    #[error("`{0}` is no decision on a goal")]
    Unknown(String),
    /// A brief whose goal is not a goal id.
    #[error("`{0}` is not a goal id")]
    NotAGoal(String),
}

/// The decision a goal brief's action `action` asks, with the person's `comment` (the reason
/// a replan or a rejection gives, the note an acceptance keeps); why not, for an action that
/// is no decision.
pub fn decision_of(action: &str, comment: Option<&str>) -> Result<GoalDecision, NoDecision> {
    let said = comment.map(str::trim).filter(|c| !c.is_empty());
    let work = |w: &str| {
        if w.is_empty() {
            Err(NoDecision::NoWork(action.to_owned()))
        } else {
            Ok(w.to_owned())
        }
    };
    Ok(match action.split_once(':') {
        Some(("retry", w)) => GoalDecision::Retry { work: work(w)? },
        Some(("skip", w)) => GoalDecision::Skip { work: work(w)? },
        Some(_) => return Err(NoDecision::Unknown(action.to_owned())),
        None => match action {
            "resume" => GoalDecision::Resume,
            "cancel" => GoalDecision::Cancel,
            "replan" => GoalDecision::Replan {
                why: said.unwrap_or("asked from the inbox").to_owned(),
            },
            "accept" => GoalDecision::Accept {
                note: said.unwrap_or_default().to_owned(),
            },
            "reject" => GoalDecision::Reject {
                why: said.unwrap_or("rejected from the inbox").to_owned(),
            },
            _ => return Err(NoDecision::Unknown(action.to_owned())),
        },
    })
}

/// The brief for `goal` of `owner` now that it has come to `goal.status` from `before`, if
/// that calls for one.
pub(super) fn on_change(owner: &str, before: GoalStatus, goal: &Goal) -> Option<Brief> {
    if before == goal.status {
        return None;
    }
    let why = goal.reason.clone().unwrap_or_default();
    let (kind, priority, title, summary) = match goal.status {
        GoalStatus::NeedsAttention => (
            BriefKind::Decision,
            BriefPriority::Urgent,
            format!("Goal needs you: {}", one_line(&goal.objective)),
            format!(
                "{why}. Decide here, or with `rein goal retry|skip|replan|accept|reject|cancel {}`.",
                goal.id
            ),
        ),
        GoalStatus::Achieved => (
            BriefKind::Result,
            BriefPriority::Normal,
            format!("Goal achieved: {}", one_line(&goal.objective)),
            goal.decided_by
                .clone()
                .unwrap_or_else(|| "Every work passed and the final acceptance passed.".into()),
        ),
        GoalStatus::Failed => (
            BriefKind::Error,
            BriefPriority::Normal,
            format!("Goal failed: {}", one_line(&goal.objective)),
            why,
        ),
        GoalStatus::Planning | GoalStatus::Running | GoalStatus::Paused | GoalStatus::Cancelled => {
            return None;
        }
    };
    Some(Brief {
        id: rein_core::brief::new_brief_id(),
        owner: owner.to_owned(),
        task_id: None,
        operation_id: None,
        agent: None,
        kind,
        priority,
        title,
        summary,
        artifacts: vec![Artifact {
            kind: "goal".into(),
            reference: goal.id.to_string(),
            title: Some(one_line(&goal.objective)),
        }],
        actions: if goal.status == GoalStatus::NeedsAttention {
            actions(goal)
        } else {
            vec![BriefAction {
                key: "acknowledge".into(),
                label: "Acknowledge".into(),
            }]
        },
        read_at: None,
        resolution: None,
        created_at: chrono::Utc::now(),
    })
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(79).collect::<String>())
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::decision_of;
    use rein_core::goal::GoalDecision;

    #[test]
    fn a_goal_briefs_actions_read_as_decisions() {
        assert_eq!(
            decision_of("retry:b", None),
            Ok(GoalDecision::Retry { work: "b".into() })
        );
        assert_eq!(
            decision_of("reject", Some("  too costly ")),
            Ok(GoalDecision::Reject {
                why: "too costly".into()
            })
        );
        assert_eq!(
            decision_of("accept", None),
            Ok(GoalDecision::Accept {
                note: String::new()
            })
        );
        for bad in ["retry:", "approve_call", "pause:x", "feedback"] {
            assert!(decision_of(bad, None).is_err(), "{bad}");
        }
    }
}
