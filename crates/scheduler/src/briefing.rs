//! Briefs from task runs, and what resolving one does.
//!
//! When a run ends, [`brief_for_run`] decides whether it asks for attention: a failed run
//! always gives an urgent error brief (retry or acknowledge); a run with nothing to say (empty
//! or no words) gives none; a scheduled run that produced something gives a result brief
//! (feedback, acknowledge, and approve when the task waits for review); any other run with
//! output is judged by the system model when it read the run ([`crate::reading`]: no brief,
//! or one of the kind, priority and words it chose), else gives an informational result brief. Each brief's id is derived from its run, so the
//! dispatcher can write it before it records the run's end and a retry after a crash writes
//! nothing twice.
//!
//! Resolving ([`Resolve`]) checks the action is one the brief offers, records it once, and acts:
//! `retry` starts a run of the task, `approve` completes a task that waits for review,
//! `feedback` keeps the comment for the task's next run's prompt, `acknowledge` only records,
//! and any other action the brief offered (a question's options, an agent's own choices) is
//! passed to the task's next run as what the person chose.
//!
//! A run that parks on an approval raises an urgent decision brief at once (the owner's hook
//! is told): `approve_call` and `reject_call` decide the calls it waits on, and the run
//! continues; decided on the operation itself instead, the brief is closed (`decided`).

use crate::reading::Attention;
use crate::task::{ReviewState, Task, TaskError, TaskStatus};
use chrono::{DateTime, Utc};
use rein_store::{
    Artifact, Brief, BriefAction, BriefKind, BriefPriority, RunTrigger, TaskRun, TaskStore,
};

/// The standard actions.
pub mod action {
    /// Run the task again.
    pub const RETRY: &str = "retry";
    /// Accept the result (completes a task waiting for review).
    pub const APPROVE: &str = "approve";
    /// Tell the next run something.
    pub const FEEDBACK: &str = "feedback";
    /// Seen; nothing to do.
    pub const ACKNOWLEDGE: &str = "acknowledge";
    /// Approve the calls a parked run waits on.
    pub const APPROVE_CALL: &str = "approve_call";
    /// Reject them (the comment is the reason the model reads).
    pub const REJECT_CALL: &str = "reject_call";
    /// Recorded by rein when the calls were decided elsewhere.
    pub const DECIDED: &str = "decided";
}

fn offer(key: &str, label: &str) -> BriefAction {
    BriefAction {
        key: key.into(),
        label: label.into(),
    }
}

/// The id of the brief a run gives (one per run).
pub fn run_brief_id(operation_id: &str) -> String {
    format!("brief-{operation_id}")
}

/// Whether a run's output says nothing a person needs to read.
fn trivial(summary: Option<&str>) -> bool {
    summary.is_none_or(|s| !s.chars().any(char::is_alphanumeric))
}

/// The brief a run that ended gives (see the module). `judged` is the system model's
/// judgement when it read the run (`Some(None)`: nothing for a person); it decides only the
/// runs the rules leave open.
pub fn brief_for_run(
    task: &Task,
    run: &TaskRun,
    outcome: &str,
    success: bool,
    summary: Option<&str>,
    judged: Option<Option<&Attention>>,
    now: DateTime<Utc>,
) -> Option<Brief> {
    let (kind, priority, title, text, actions) = if !success {
        (
            BriefKind::Error,
            BriefPriority::Urgent,
            format!("{} failed ({outcome})", task.title),
            summary
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("The run ended with `{outcome}` and no answer.")),
            vec![
                offer(action::RETRY, "Run it again"),
                offer(action::ACKNOWLEDGE, "Acknowledge"),
            ],
        )
    } else if trivial(summary) {
        return None;
    } else if run.trigger != RunTrigger::Schedule
        && let Some(judged) = judged
    {
        let a = judged?;
        let mut actions = Vec::new();
        if task.review == ReviewState::Pending {
            actions.push(offer(action::APPROVE, "Approve the result"));
        }
        actions.push(offer(action::FEEDBACK, "Reply for the next run"));
        actions.push(offer(action::ACKNOWLEDGE, "Acknowledge"));
        (
            a.kind,
            a.priority,
            a.title.clone(),
            a.summary.clone(),
            actions,
        )
    } else {
        let mut actions = Vec::new();
        if task.review == ReviewState::Pending {
            actions.push(offer(action::APPROVE, "Approve the result"));
        }
        actions.push(offer(action::FEEDBACK, "Reply for the next run"));
        actions.push(offer(action::ACKNOWLEDGE, "Acknowledge"));
        let priority = if run.trigger == RunTrigger::Schedule {
            BriefPriority::Normal
        } else {
            BriefPriority::Info
        };
        (
            BriefKind::Result,
            priority,
            format!("{}: result", task.title),
            summary.unwrap_or_default().to_owned(),
            actions,
        )
    };
    Some(Brief {
        id: run_brief_id(&run.operation_id),
        owner: task.owner.clone(),
        task_id: Some(task.id.clone()),
        operation_id: Some(run.operation_id.clone()),
        agent: task.agent.clone(),
        kind,
        priority,
        title,
        summary: text,
        artifacts: vec![Artifact {
            kind: "operation".into(),
            reference: run.operation_id.clone(),
            title: Some(format!("the run ({outcome})")),
        }],
        actions,
        read_at: None,
        resolution: None,
        created_at: now,
    })
}

/// The id of the brief that asks for the calls `pending` of run `operation_id`: one per
/// parking (a run parked again on other calls asks again), the same on every tick.
pub fn approval_brief_id(operation_id: &str, pending: &[crate::dispatcher::PendingCall]) -> String {
    let base = operation_id
        .parse::<uuid::Uuid>()
        .map_or(0, |u| u.as_u128());
    let mut h: u128 = 0x6c62_272e_07bb_0142_6c62_272e_07bb_0142;
    for b in pending.iter().flat_map(|p| p.id.bytes().chain([0])) {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    let mut bytes = (base ^ h).to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    format!("brief-{}", uuid::Uuid::from_bytes(bytes))
}

/// The urgent decision brief for run `run` of `task`, parked on `pending`.
pub fn approval_brief(
    task: &Task,
    run: &TaskRun,
    pending: &[crate::dispatcher::PendingCall],
    now: DateTime<Utc>,
) -> Brief {
    let calls: Vec<String> = pending.iter().map(|p| format!("- {}", p.what)).collect();
    Brief {
        id: approval_brief_id(&run.operation_id, pending),
        owner: task.owner.clone(),
        task_id: Some(task.id.clone()),
        operation_id: Some(run.operation_id.clone()),
        agent: task.agent.clone(),
        kind: BriefKind::Decision,
        priority: BriefPriority::Urgent,
        title: format!("{}: a run waits for your approval", task.title),
        summary: format!(
            "The run asks to make {} call{} that need{} a person's approval; the task's next runs wait until it is decided.\n{}",
            pending.len(),
            if pending.len() == 1 { "" } else { "s" },
            if pending.len() == 1 { "s" } else { "" },
            calls.join("\n")
        ),
        artifacts: vec![Artifact {
            kind: "operation".into(),
            reference: run.operation_id.clone(),
            title: Some("the parked run".into()),
        }],
        actions: vec![
            offer(action::APPROVE_CALL, "Approve"),
            offer(action::REJECT_CALL, "Reject (the comment is the reason)"),
        ],
        read_at: None,
        resolution: None,
        created_at: now,
    }
}

/// Raise the approval brief of a run parked on `pending`, once (queued for the owner's hook);
/// whether it was new.
pub async fn ask_for_approval(
    store: &dyn TaskStore,
    task: &Task,
    run: &TaskRun,
    pending: &[crate::dispatcher::PendingCall],
    now: DateTime<Utc>,
) -> Result<bool, TaskError> {
    if pending.is_empty() {
        return Ok(false);
    }
    let brief = approval_brief(task, run, pending, now);
    if store.get_brief(&brief.id).await?.is_some() {
        return Ok(false);
    }
    let notify = store.brief_hook(&brief.owner).await?.map(|_| now);
    match store.add_brief(&brief, notify).await {
        Ok(()) => Ok(true),
        Err(rein_store::StoreError::Conflict(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Close the approval briefs of `run` still open: its calls were decided (on the operation
/// itself, or the run ended), so they no longer hold the task.
pub async fn close_approval_briefs(
    store: &dyn TaskStore,
    run: &TaskRun,
    now: DateTime<Utc>,
) -> Result<(), TaskError> {
    let open = store
        .list_briefs(&rein_store::BriefFilter {
            task_id: Some(run.task_id.clone()),
            unresolved: true,
            limit: 50,
            ..Default::default()
        })
        .await?;
    for b in open.iter().filter(|b| {
        b.operation_id.as_deref() == Some(run.operation_id.as_str())
            && b.actions.iter().any(|a| a.key == action::APPROVE_CALL)
    }) {
        let r = rein_store::Resolution {
            action: action::DECIDED.into(),
            comment: Some("the run's calls were decided on the run itself".into()),
            by: Some("rein".into()),
            at: now,
        };
        store.resolve_brief(&b.id, &r).await?;
    }
    Ok(())
}

/// How a run ended, as its end is recorded.
#[derive(Clone, Copy, Debug)]
pub struct Ended<'a> {
    /// `completed`, `error`, `cancelled`, …
    pub outcome: &'a str,
    /// Whether that counts as a success.
    pub success: bool,
    /// A short account of its answer.
    pub summary: Option<&'a str>,
    /// What it cost.
    pub cost: rein_core::Usd,
    /// Its whole answer (its handoff is taken from it).
    pub answer: Option<&'a str>,
    /// What the system model read from it (its handoff, whether it needs a person).
    pub reading: Option<&'a crate::reading::RunReading>,
}

/// Record that `run` (of `task`, when it still exists) ended: its brief first, when the rules
/// give one (queued for the owner's hook when urgent), its handoff, then the end. The brief's id is the
/// run's, so after a crash between the two the next attempt writes it again harmlessly and a
/// recorded end always has its brief.
pub async fn record_run_end(
    store: &dyn TaskStore,
    task: Option<&Task>,
    run: &TaskRun,
    end: &Ended<'_>,
    now: DateTime<Utc>,
) -> Result<(), TaskError> {
    let judged = end.reading.map(|r| r.attention.as_ref());
    if let Some(b) =
        task.and_then(|t| brief_for_run(t, run, end.outcome, end.success, end.summary, judged, now))
    {
        let notify = if b.priority == BriefPriority::Urgent {
            store.brief_hook(&b.owner).await?.map(|_| now)
        } else {
            None
        };
        match store.add_brief(&b, notify).await {
            Ok(()) | Err(rein_store::StoreError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // The handoff, on the run and on the task, before the end: a crash in between hands it
    // over again (once per run).
    if let (Some(task), Some(answer)) = (task, end.answer.filter(|a| !a.trim().is_empty())) {
        let h = match end.reading {
            Some(r) => r.handoff.clone(),
            None => crate::handoff::extract(task, &run.operation_id, answer),
        };
        store.set_run_handoff(&run.operation_id, &h).await?;
        crate::task::update_task(store, &task.id, now, |t| crate::handoff::keep(t, &h)).await?;
    }
    store
        .finish_run(&run.operation_id, now, end.outcome, end.summary, end.cost)
        .await?;
    Ok(())
}

/// What resolving a brief asks of its task, once the resolution is recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolve {
    /// Nothing beyond the record.
    Recorded,
    /// Start a run of the task now.
    Retry,
    /// The task's result is approved: it completes if it waited for review.
    Approve,
    /// Keep the comment for the next run.
    Feedback(String),
    /// Decide the goal the brief is about (its `goal` artifact), as the action says.
    Goal {
        /// The goal's id.
        goal: String,
    },
    /// Decide the calls the brief's parked run waits on.
    Decide {
        /// Approve (else reject).
        approve: bool,
        /// The reason a rejection gives the model.
        reason: Option<String>,
    },
}

/// Check `action` (and its comment) against what `brief` offers, and say what it asks.
pub fn resolution_of(
    brief: &Brief,
    action: &str,
    comment: Option<&str>,
) -> Result<Resolve, TaskError> {
    if !brief.actions.iter().any(|a| a.key == action) {
        let offered: Vec<&str> = brief.actions.iter().map(|a| a.key.as_str()).collect();
        return Err(TaskError::BadResolution(format!(
            "brief {} offers {}; not `{action}`",
            brief.id,
            offered.join(", ")
        )));
    }
    // A brief about a goal: its actions are decisions on the goal.
    if brief.task_id.is_none()
        && action != action::ACKNOWLEDGE
        && let Some(goal) = brief.artifacts.iter().find(|a| a.kind == "goal")
    {
        return Ok(Resolve::Goal {
            goal: goal.reference.clone(),
        });
    }
    Ok(match action {
        action::APPROVE_CALL | action::REJECT_CALL if brief.operation_id.is_some() => {
            Resolve::Decide {
                approve: action == action::APPROVE_CALL,
                reason: comment
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            }
        }
        action::RETRY if brief.task_id.is_some() => Resolve::Retry,
        action::APPROVE if brief.task_id.is_some() => Resolve::Approve,
        action::FEEDBACK => match comment.map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) if brief.task_id.is_some() => Resolve::Feedback(c.to_owned()),
            Some(_) => Resolve::Recorded,
            None => {
                return Err(TaskError::BadResolution(
                    "feedback needs a comment (what the next run should know)".into(),
                ));
            }
        },
        action::ACKNOWLEDGE => Resolve::Recorded,
        // A choice the brief offered (an agent's question, a decision it raised): the next
        // run of the task reads what was chosen, with the comment.
        key if brief.task_id.is_some() => {
            let label = brief
                .actions
                .iter()
                .find(|a| a.key == key)
                .map_or(key, |a| a.label.as_str());
            let mut said = format!("On \"{}\" the person chose `{key}` ({label}).", brief.title);
            if let Some(c) = comment.map(str::trim).filter(|c| !c.is_empty()) {
                said.push_str(&format!(" They said: {c}"));
            }
            Resolve::Feedback(said)
        }
        _ => Resolve::Recorded,
    })
}

/// Apply an approval to a task: a task waiting for review is approved and completes.
pub fn approve(task: &mut Task) -> bool {
    if task.review != ReviewState::Pending {
        return false;
    }
    task.review = ReviewState::Approved;
    if matches!(task.status, TaskStatus::Active | TaskStatus::Paused) {
        task.status = TaskStatus::Completed;
        task.status_reason = Some("its result was approved".into());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        let mut t: Task = serde_json::from_value(
            serde_json::json!({"title": "Nightly report", "instruction": "Report."}),
        )
        .unwrap();
        t.id = "t1".into();
        t.owner = "u".into();
        t
    }

    fn run(trigger: RunTrigger) -> TaskRun {
        TaskRun {
            operation_id: "op1".into(),
            task_id: "t1".into(),
            trigger,
            due_at: None,
            started_at: Utc::now(),
            finished_at: None,
            outcome: None,
            brief: None,
            cost: rein_core::Usd::ZERO,
            handoff: None,
        }
    }

    #[test]
    fn the_rules_give_one_brief_per_run_by_what_it_produced() {
        let now = Utc::now();
        let t = task();
        let failed = brief_for_run(
            &t,
            &run(RunTrigger::Heartbeat),
            "error",
            false,
            None,
            None,
            now,
        )
        .unwrap();
        assert_eq!(
            (failed.kind, failed.priority),
            (BriefKind::Error, BriefPriority::Urgent)
        );
        assert_eq!(failed.id, "brief-op1");
        assert!(failed.summary.contains("`error`"));
        assert!(!failed.holds_task(), "an error does not hold the schedule");
        let keys = |b: &Brief| b.actions.iter().map(|a| a.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&failed), ["retry", "acknowledge"]);

        let result = brief_for_run(
            &t,
            &run(RunTrigger::Schedule),
            "completed",
            true,
            Some("3 new items."),
            None,
            now,
        )
        .unwrap();
        assert_eq!(
            (result.kind, result.priority),
            (BriefKind::Result, BriefPriority::Normal)
        );
        assert_eq!(keys(&result), ["feedback", "acknowledge"]);
        let waiting = Task {
            review: ReviewState::Pending,
            ..task()
        };
        let result = brief_for_run(
            &waiting,
            &run(RunTrigger::Schedule),
            "completed",
            true,
            Some("Done."),
            None,
            now,
        )
        .unwrap();
        assert_eq!(keys(&result)[0], "approve");

        for nothing in [None, Some(""), Some(" … ")] {
            assert!(
                brief_for_run(
                    &t,
                    &run(RunTrigger::Schedule),
                    "completed",
                    true,
                    nothing,
                    None,
                    now
                )
                .is_none()
            );
        }
        let manual = brief_for_run(
            &t,
            &run(RunTrigger::Manual),
            "completed",
            true,
            Some("Fine."),
            None,
            now,
        )
        .unwrap();
        assert_eq!(manual.priority, BriefPriority::Info);

        // The system model's judgement decides what the rules leave open, and only that.
        let decide = Attention {
            kind: BriefKind::Decision,
            priority: BriefPriority::Urgent,
            title: "Restart job 7?".into(),
            summary: "Stuck for an hour.".into(),
        };
        let judged = |trigger: RunTrigger, success: bool, said: Option<&Attention>| {
            brief_for_run(
                &t,
                &run(trigger),
                "completed",
                success,
                Some("Job 7 stuck."),
                Some(said),
                now,
            )
        };
        let b = judged(RunTrigger::Heartbeat, true, Some(&decide)).unwrap();
        assert_eq!(
            (b.kind, b.priority, b.title.as_str()),
            (BriefKind::Decision, BriefPriority::Urgent, "Restart job 7?")
        );
        assert!(b.holds_task(), "an urgent decision holds the schedule");
        assert!(
            judged(RunTrigger::Manual, true, None).is_none(),
            "nothing for a person"
        );
        assert_eq!(
            judged(RunTrigger::Schedule, true, None).unwrap().kind,
            BriefKind::Result,
            "the schedule rule"
        );
        assert_eq!(
            judged(RunTrigger::Heartbeat, false, None).unwrap().kind,
            BriefKind::Error,
            "the error rule"
        );
    }

    #[test]
    fn resolving_takes_only_offered_actions_and_feedback_needs_words() {
        let b = brief_for_run(
            &task(),
            &run(RunTrigger::Schedule),
            "completed",
            true,
            Some("x"),
            None,
            Utc::now(),
        )
        .unwrap();
        assert!(resolution_of(&b, "retry", None).is_err(), "not offered");
        assert!(resolution_of(&b, "feedback", Some("  ")).is_err());
        assert_eq!(
            resolution_of(&b, "feedback", Some(" shorter please ")).unwrap(),
            Resolve::Feedback("shorter please".into())
        );
        assert_eq!(
            resolution_of(&b, "acknowledge", None).unwrap(),
            Resolve::Recorded
        );
        let mut waiting = Task {
            review: ReviewState::Pending,
            ..task()
        };
        assert!(approve(&mut waiting));
        assert_eq!(waiting.status, TaskStatus::Completed);
        assert!(!approve(&mut waiting), "approved once");

        // A choice the brief offered (a question's option) reaches the next run as feedback;
        // on a brief of no task it is only recorded.
        let mut asked = b.clone();
        asked.title = "Deploy to production now?".into();
        asked.actions = vec![
            offer("yes", "Deploy"),
            offer(action::ACKNOWLEDGE, "Acknowledge"),
        ];
        assert_eq!(
            resolution_of(&asked, "yes", Some(" after 6 pm ")).unwrap(),
            Resolve::Feedback(
                "On \"Deploy to production now?\" the person chose `yes` (Deploy). They said: after 6 pm".into()
            )
        );
        asked.task_id = None;
        assert_eq!(
            resolution_of(&asked, "yes", None).unwrap(),
            Resolve::Recorded
        );
    }

    #[test]
    fn a_parked_run_gets_one_urgent_decision_brief_per_parking_that_decides_its_calls() {
        use crate::dispatcher::PendingCall;
        let now = Utc::now();
        let op = uuid::Uuid::now_v7().to_string();
        let mut r = run(RunTrigger::Heartbeat);
        r.operation_id = op.clone();
        let pending = vec![PendingCall {
            id: "call_1".into(),
            what: "shell/run({\"command\":\"deploy\"})".into(),
        }];
        let b = approval_brief(&task(), &r, &pending, now);
        assert!(rein_store::valid_brief_id(&b.id), "{}", b.id);
        assert_eq!(
            b.id,
            approval_brief_id(&op, &pending),
            "the same on every tick"
        );
        let other = vec![PendingCall {
            id: "call_2".into(),
            what: "x".into(),
        }];
        assert_ne!(
            b.id,
            approval_brief_id(&op, &other),
            "parked again: asked again"
        );
        assert_ne!(b.id, run_brief_id(&op));
        assert!(b.holds_task());
        assert!(b.summary.contains("shell/run({\"command\":\"deploy\"})"));
        assert_eq!(
            resolution_of(&b, action::APPROVE_CALL, None).unwrap(),
            Resolve::Decide {
                approve: true,
                reason: None
            }
        );
        assert_eq!(
            resolution_of(&b, action::REJECT_CALL, Some(" not today ")).unwrap(),
            Resolve::Decide {
                approve: false,
                reason: Some("not today".into())
            }
        );
        assert!(
            resolution_of(&b, action::RETRY, None).is_err(),
            "not offered"
        );
    }
}
