//! What a goal tells its owner's inbox: a brief when it comes to rest where a person must look
//! (an urgent decision when it waits for them; a result when it is achieved; an error when it
//! failed), pointing at the goal and saying what can be done from the command line.

use rein_core::brief::{Artifact, Brief, BriefAction, BriefKind, BriefPriority};
use rein_core::goal::{Goal, GoalStatus};

/// The brief for `goal` of `owner` now that it has come to `goal.status` from `before` (its
/// commit number `seq` makes the brief's id), if that calls for one.
pub(super) fn on_change(owner: &str, before: GoalStatus, goal: &Goal, seq: u64) -> Option<Brief> {
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
                "{why}. Decide with `rein goal retry|skip|replan|accept|reject|cancel {}`.",
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
        id: format!("goal-{}-{seq}", goal.id),
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
        actions: vec![BriefAction {
            key: "acknowledge".into(),
            label: "Acknowledge".into(),
        }],
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
