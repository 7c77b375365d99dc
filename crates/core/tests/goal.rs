//! Goals' pure half: plans checked whole, the coordinator's decisions and what each event
//! changes, walked through by hand and driven at random by a simulated runner.

use proptest::prelude::*;
use rein_core::goal::plan::{self, PlanError, ProposedPlan, ProposedWork};
use rein_core::goal::{
    AttemptEnd, Goal, GoalDecision, GoalError, GoalEvent, GoalInstruction, GoalStatus, Verdict,
    WorkStatus, decide, prompts, work_operation_id,
};
use std::collections::BTreeSet;

fn work(id: &str, deps: &[&str]) -> ProposedWork {
    ProposedWork {
        id: id.into(),
        instruction: format!("do {id}"),
        assignee: None,
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
        acceptance: format!("{id} is done"),
    }
}

fn planned(goal: &mut Goal, works: Vec<ProposedWork>) {
    let (works, revision) = plan::check(
        goal,
        &ProposedPlan { works },
        "planner:test",
        "the objective",
        |_| true,
    )
    .unwrap();
    goal.apply(&GoalEvent::Planned { works, revision }).unwrap();
}

fn pass() -> Verdict {
    Verdict {
        passed: true,
        gaps: Vec::new(),
        evidence: vec!["seen".into()],
    }
}

fn fail(gaps: &[&str]) -> Verdict {
    Verdict {
        passed: false,
        gaps: gaps.iter().map(|g| (*g).to_owned()).collect(),
        evidence: Vec::new(),
    }
}

fn start(goal: &mut Goal, id: &str) -> u32 {
    let w = goal.work(id).unwrap();
    let n = w.attempts.len() as u32 + 1;
    let operation = work_operation_id(goal.id, id, w.revision, n);
    goal.apply(&GoalEvent::WorkStarted {
        work: id.into(),
        attempt: n,
        operation,
    })
    .unwrap();
    n
}

fn finish(goal: &mut Goal, id: &str, n: u32, verdict: Verdict) {
    goal.apply(&GoalEvent::WorkEnded {
        work: id.into(),
        attempt: n,
        end: AttemptEnd::Finished {
            answer: format!("{id} output {n}"),
        },
    })
    .unwrap();
    goal.apply(&GoalEvent::Verified {
        work: id.into(),
        attempt: n,
        verdict,
    })
    .unwrap();
}

fn started(instructions: &[GoalInstruction]) -> Vec<&str> {
    instructions
        .iter()
        .filter_map(|i| match i {
            GoalInstruction::StartWork { work, .. } => Some(work.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_plan_is_refused_whole_naming_what_is_wrong() {
    let goal = Goal::new("ship it");
    let check = |works: Vec<ProposedWork>| {
        plan::check(&goal, &ProposedPlan { works }, "planner:test", "why", |a| {
            a == "coder"
        })
    };
    assert_eq!(check(vec![]).unwrap_err(), PlanError::Empty);
    assert_eq!(
        check(vec![
            work("a", &["b"]),
            work("b", &["c"]),
            work("c", &["a"])
        ])
        .unwrap_err(),
        PlanError::Cycle(vec!["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(
        check(vec![work("a", &["a"])]).unwrap_err(),
        PlanError::Cycle(vec!["a".into()])
    );
    assert_eq!(
        check(vec![work("a", &["x"])]).unwrap_err(),
        PlanError::UnknownDependency {
            work: "a".into(),
            on: "x".into()
        }
    );
    assert_eq!(
        check(vec![work("a", &[]), work("a", &[])]).unwrap_err(),
        PlanError::DuplicateId("a".into())
    );
    assert_eq!(
        check(vec![work("a b", &[])]).unwrap_err(),
        PlanError::BadId("a b".into())
    );
    let mut blank = work("a", &[]);
    blank.acceptance = "  ".into();
    assert_eq!(
        check(vec![blank]).unwrap_err(),
        PlanError::BadText {
            work: "a".into(),
            field: "acceptance"
        }
    );
    let mut stranger = work("a", &[]);
    stranger.assignee = Some("nobody".into());
    assert!(matches!(
        check(vec![stranger]).unwrap_err(),
        PlanError::UnknownAssignee { .. }
    ));
    let many: Vec<ProposedWork> = (0..41).map(|i| work(&format!("w{i}"), &[])).collect();
    assert_eq!(
        check(many).unwrap_err(),
        PlanError::TooMany { count: 41, max: 40 }
    );
    let (works, revision) = check(vec![work("a", &[]), work("b", &["a", "a"])]).unwrap();
    assert_eq!(revision.n, 1);
    assert_eq!(works[1].depends_on, ["a"]);
    assert!(works.iter().all(|w| w.status == WorkStatus::Pending));
}

/// The walk: A, B after A, C beside A; B fails once and passes with the gaps in its
/// second prompt; the final acceptance passes: achieved.
#[test]
fn a_goal_runs_its_works_in_order_retries_with_the_gaps_and_is_achieved_on_acceptance() {
    let mut goal = Goal::new("migrate the services");
    assert_eq!(
        decide(&goal),
        [GoalInstruction::Plan {
            why: "the objective".into()
        }]
    );
    planned(
        &mut goal,
        vec![work("a", &[]), work("b", &["a"]), work("c", &[])],
    );
    assert_eq!(goal.status, GoalStatus::Running);
    assert_eq!(started(&decide(&goal)), ["a", "c"], "b waits for a");
    let a = start(&mut goal, "a");
    let c = start(&mut goal, "c");
    assert!(decide(&goal).contains(&GoalInstruction::AwaitWork {
        work: "a".into(),
        attempt: 1,
        operation: work_operation_id(goal.id, "a", 1, 1)
    }));
    finish(&mut goal, "a", a, pass());
    assert_eq!(started(&decide(&goal)), ["b"]);
    let b = start(&mut goal, "b");
    assert!(prompts::work(&goal, goal.work("b").unwrap(), 1).contains("a output 1"));
    finish(&mut goal, "b", b, fail(&["no rollback plan"]));
    assert_eq!(goal.work("b").unwrap().status, WorkStatus::Ready);
    let second = prompts::work(&goal, goal.work("b").unwrap(), 2);
    assert!(
        second.contains("attempt 2") && second.contains("- no rollback plan"),
        "{second}"
    );
    let b = start(&mut goal, "b");
    assert_eq!(b, 2);
    assert_eq!(
        prompts::work(&goal, goal.work("b").unwrap(), 2),
        second,
        "the prompt made once the start is committed is the same"
    );
    finish(&mut goal, "b", b, pass());
    assert!(
        !decide(&goal).contains(&GoalInstruction::Accept),
        "c still runs"
    );
    finish(&mut goal, "c", c, pass());
    assert_eq!(decide(&goal), [GoalInstruction::Accept]);
    assert!(prompts::accept(&goal).contains("b output 2"));
    goal.apply(&GoalEvent::Accepted { verdict: pass() })
        .unwrap();
    assert_eq!(goal.status, GoalStatus::Achieved);
    assert!(decide(&goal).is_empty());
}

#[test]
fn a_work_is_blocked_when_its_attempts_run_out_and_a_retry_grants_one_more() {
    let mut goal = Goal::new("x");
    goal.limits.max_attempts = 2;
    planned(&mut goal, vec![work("a", &[])]);
    let n = start(&mut goal, "a");
    finish(&mut goal, "a", n, fail(&["one"]));
    let n = start(&mut goal, "a");
    finish(&mut goal, "a", n, fail(&["two"]));
    assert_eq!(goal.work("a").unwrap().status, WorkStatus::Blocked);
    assert_eq!(goal.status, GoalStatus::NeedsAttention);
    assert!(
        goal.reason
            .as_deref()
            .unwrap()
            .contains("did not pass in 2 attempts")
    );
    assert!(
        decide(&goal).is_empty(),
        "nothing starts while a person decides"
    );
    // A start past the limit is refused even if asked.
    let late = GoalEvent::WorkStarted {
        work: "a".into(),
        attempt: 3,
        operation: work_operation_id(goal.id, "a", 1, 3),
    };
    assert!(goal.clone().apply(&late).is_err());
    goal.apply(&GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Retry { work: "a".into() },
    })
    .unwrap();
    assert_eq!(goal.status, GoalStatus::Running);
    assert_eq!(started(&decide(&goal)), ["a"]);
    goal.apply(&late).unwrap();
}

#[test]
fn the_same_gaps_twice_end_the_attempts_early() {
    let mut goal = Goal::new("x");
    goal.limits.max_attempts = 5;
    planned(&mut goal, vec![work("a", &[])]);
    let n = start(&mut goal, "a");
    finish(&mut goal, "a", n, fail(&["Missing tests", "no docs"]));
    let n = start(&mut goal, "a");
    finish(&mut goal, "a", n, fail(&["no docs ", "missing tests"]));
    assert_eq!(goal.work("a").unwrap().status, WorkStatus::Blocked);
    assert!(goal.reason.as_deref().unwrap().contains("made no progress"));
}

#[test]
fn a_final_acceptance_with_gaps_is_never_achieved_and_a_person_decides() {
    let mut goal = Goal::new("x");
    planned(&mut goal, vec![work("a", &[])]);
    let n = start(&mut goal, "a");
    finish(&mut goal, "a", n, pass());
    goal.apply(&GoalEvent::Accepted {
        verdict: fail(&["the report is missing"]),
    })
    .unwrap();
    assert_eq!(goal.status, GoalStatus::NeedsAttention);
    assert!(
        goal.reason
            .as_deref()
            .unwrap()
            .contains("the report is missing")
    );
    assert_eq!(
        goal.clone()
            .apply(&GoalEvent::Decided {
                by: "ann".into(),
                decision: GoalDecision::Resume
            })
            .unwrap_err(),
        GoalError::NotNow {
            what: "a resume",
            status: GoalStatus::NeedsAttention
        },
        "gaps are not resumed past"
    );
    let mut accepted = goal.clone();
    accepted
        .apply(&GoalEvent::Decided {
            by: "ann".into(),
            decision: GoalDecision::Accept {
                note: "good enough".into(),
            },
        })
        .unwrap();
    assert_eq!(accepted.status, GoalStatus::Achieved);
    assert_eq!(
        accepted.decided_by.as_deref(),
        Some("accepted by ann: good enough")
    );
    // A new plan keeps what passed.
    goal.apply(&GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Replan {
            why: "add the report".into(),
        },
    })
    .unwrap();
    assert_eq!(goal.status, GoalStatus::Planning);
    let (works, revision) = plan::check(
        &goal,
        &ProposedPlan {
            works: vec![work("report", &["a"])],
        },
        "planner:test",
        "add the report",
        |_| true,
    )
    .unwrap();
    assert_eq!(revision.n, 2);
    assert_eq!(revision.works, ["a", "report"]);
    goal.apply(&GoalEvent::Planned { works, revision }).unwrap();
    assert_eq!(started(&decide(&goal)), ["report"]);
    assert!(goal.verdict.is_none(), "a new plan is accepted afresh");
}

#[test]
fn events_folded_twice_change_nothing_and_stale_ones_are_refused() {
    let mut goal = Goal::new("x");
    planned(&mut goal, vec![work("a", &[])]);
    let n = start(&mut goal, "a");
    let before = goal.clone();
    goal.apply(&GoalEvent::WorkStarted {
        work: "a".into(),
        attempt: n,
        operation: work_operation_id(goal.id, "a", 1, n),
    })
    .unwrap();
    assert_eq!(goal, before, "a start run again changes nothing");
    let wrong = GoalEvent::WorkStarted {
        work: "a".into(),
        attempt: 2,
        operation: work_operation_id(goal.id, "a", 1, 2),
    };
    assert!(matches!(
        goal.apply(&wrong),
        Err(GoalError::WorkNotNow { .. })
    ));
    let end = GoalEvent::WorkEnded {
        work: "a".into(),
        attempt: n,
        end: AttemptEnd::Failed { why: "boom".into() },
    };
    goal.apply(&end).unwrap();
    let after = goal.clone();
    goal.apply(&end).unwrap();
    assert_eq!(goal, after);
    assert_eq!(goal.work("a").unwrap().status, WorkStatus::Ready);
    assert!(goal.work("a").unwrap().feedback(2)[0].contains("boom"));
    assert!(matches!(
        goal.apply(&GoalEvent::Verified {
            work: "a".into(),
            attempt: 1,
            verdict: pass()
        }),
        Err(GoalError::WorkNotNow { .. })
    ));
    assert_ne!(
        work_operation_id(goal.id, "a", 1, 1),
        work_operation_id(goal.id, "a", 1, 2)
    );
    assert_ne!(
        work_operation_id(goal.id, "a", 1, 1),
        work_operation_id(goal.id, "b", 1, 1)
    );
    assert_eq!(
        work_operation_id(goal.id, "a", 1, 1),
        work_operation_id(goal.id, "a", 1, 1)
    );
}

fn edited(goal: &Goal, works: Vec<ProposedWork>) -> GoalEvent {
    let (works, revision) = plan::check(
        goal,
        &ProposedPlan { works },
        "user:ann",
        "split it",
        |_| true,
    )
    .unwrap();
    GoalEvent::Edited { works, revision }
}

#[test]
fn a_person_edits_the_plan_keeping_what_passed_and_retiring_what_is_left_out() {
    let mut goal = Goal::new("x");
    goal.limits.max_attempts = 1;
    planned(
        &mut goal,
        vec![work("a", &[]), work("b", &[]), work("c", &["b"])],
    );
    let n = start(&mut goal, "a");
    // Not while a work runs.
    let early = edited(&goal, vec![work("d", &[])]);
    assert!(matches!(
        goal.apply(&early),
        Err(GoalError::WorksRunning(w)) if w == "a"
    ));
    finish(&mut goal, "a", n, pass());
    let n = start(&mut goal, "b");
    finish(&mut goal, "b", n, fail(&["wrong"]));
    assert_eq!(goal.work("b").unwrap().status, WorkStatus::Blocked);
    assert_eq!(goal.status, GoalStatus::NeedsAttention);
    // b is named again (afresh, with operations of the new revision); c is left out.
    let event = edited(&goal, vec![work("b", &["a"]), work("d", &["b"])]);
    goal.apply(&event).unwrap();
    let again = goal.clone();
    goal.apply(&event).unwrap();
    assert_eq!(goal, again, "an edit folded twice changes nothing");
    assert_eq!(goal.status, GoalStatus::Running);
    assert_eq!(goal.revisions.len(), 2);
    assert_eq!(goal.revisions[1].by, "user:ann");
    assert_eq!(goal.work("a").unwrap().status, WorkStatus::Passed);
    assert_eq!(goal.work("c").unwrap().status, WorkStatus::Retired);
    let b = goal.work("b").unwrap();
    assert_eq!(
        (b.status, b.attempts.len(), b.revision),
        (WorkStatus::Pending, 0, 2)
    );
    let ops: Vec<_> = decide(&goal)
        .into_iter()
        .filter_map(|i| match i {
            GoalInstruction::StartWork {
                work, operation, ..
            } => Some((work, operation)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ops,
        [("b".to_owned(), work_operation_id(goal.id, "b", 2, 1))]
    );
    assert_ne!(
        work_operation_id(goal.id, "b", 2, 1),
        work_operation_id(goal.id, "b", 1, 1),
        "the new b never finds the old b's operation"
    );
    // A passed work cannot be named again.
    assert_eq!(
        plan::check(
            &goal,
            &ProposedPlan {
                works: vec![work("a", &[])]
            },
            "user:ann",
            "redo",
            |_| true
        )
        .unwrap_err(),
        PlanError::DuplicateId("a".into())
    );
    // A paused goal stays paused through an edit.
    goal.apply(&GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Pause,
    })
    .unwrap();
    let event = edited(&goal, vec![work("b", &["a"])]);
    goal.apply(&event).unwrap();
    assert_eq!(goal.status, GoalStatus::Paused);
    assert_eq!(goal.work("d").unwrap().status, WorkStatus::Retired);
}

#[test]
fn pausing_starts_nothing_new_and_follows_what_runs() {
    let mut goal = Goal::new("x");
    planned(&mut goal, vec![work("a", &[]), work("b", &[])]);
    goal.limits.max_parallel = 1;
    assert_eq!(started(&decide(&goal)), ["a"], "one at a time");
    let n = start(&mut goal, "a");
    goal.apply(&GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Pause,
    })
    .unwrap();
    assert_eq!(
        decide(&goal),
        [GoalInstruction::AwaitWork {
            work: "a".into(),
            attempt: n,
            operation: work_operation_id(goal.id, "a", 1, n)
        }]
    );
    finish(&mut goal, "a", n, pass());
    assert!(decide(&goal).is_empty());
    goal.apply(&GoalEvent::Decided {
        by: "ann".into(),
        decision: GoalDecision::Resume,
    })
    .unwrap();
    assert_eq!(started(&decide(&goal)), ["b"]);
    goal.apply(&GoalEvent::BudgetSpent {
        stop: true,
        why: "cost limit $1".into(),
    })
    .unwrap();
    assert_eq!(goal.status, GoalStatus::Failed);
    assert!(decide(&goal).is_empty());
}

/// A random plan (a DAG) and a random verifier, driven by a runner that does what `decide`
/// says: it always ends, never runs past the attempts allowed or the parallel limit, never
/// starts a work before its dependencies, never reuses an operation, and is achieved only on
/// a passing final acceptance.
fn scenario() -> impl Strategy<Value = (Vec<Vec<usize>>, Vec<u8>, u32, u32)> {
    (1usize..8).prop_flat_map(|n| {
        (
            proptest::collection::vec(proptest::collection::vec(0usize..8, 0..3), n).prop_map(
                |deps| {
                    deps.into_iter()
                        .enumerate()
                        .map(|(i, d)| d.into_iter().filter(|x| *x < i).collect())
                        .collect()
                },
            ),
            proptest::collection::vec(any::<u8>(), 97),
            1u32..4,
            1u32..4,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn a_goal_driven_at_random_keeps_its_rules((deps, dice, max_attempts, max_parallel) in scenario()) {
        let mut goal = Goal::new("random");
        goal.limits.max_attempts = max_attempts;
        goal.limits.max_parallel = max_parallel;
        let works: Vec<ProposedWork> = deps
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let names: Vec<String> = d.iter().map(|x| format!("w{x}")).collect();
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                work(&format!("w{i}"), &refs)
            })
            .collect();
        planned(&mut goal, works);
        let mut dice = dice.into_iter().cycle();
        let mut operations = BTreeSet::new();
        // One instruction at a time, in a random order among those decided: the interleavings
        // of a runner doing them concurrently and committing each as it is done.
        for _ in 0..2000 {
            let todo = decide(&goal);
            if todo.is_empty() {
                break;
            }
            let pick = dice.next().unwrap_or(0) as usize % todo.len();
            if let Some(i) = todo.into_iter().nth(pick) {
                match i {
                    GoalInstruction::Plan { .. } => prop_assert!(false, "no replan here"),
                    GoalInstruction::StartWork { work, attempt, operation } => {
                        let w = goal.work(&work).unwrap();
                        for d in &w.depends_on {
                            prop_assert!(goal.work(d).unwrap().status.unblocks());
                        }
                        prop_assert!(attempt <= goal.attempts_allowed(w));
                        prop_assert!(operations.insert(operation), "an operation is started once");
                        goal.apply(&GoalEvent::WorkStarted { work, attempt, operation }).unwrap();
                        let running = goal.works.iter().filter(|w| matches!(w.status, WorkStatus::Running | WorkStatus::Verifying)).count();
                        prop_assert!(running <= max_parallel as usize);
                    }
                    GoalInstruction::AwaitWork { work, attempt, .. } => {
                        let end = if dice.next().is_some_and(|d| d < 40) {
                            AttemptEnd::Failed { why: "crashed".into() }
                        } else {
                            AttemptEnd::Finished { answer: "out".into() }
                        };
                        goal.apply(&GoalEvent::WorkEnded { work, attempt, end }).unwrap();
                    }
                    GoalInstruction::Verify { work, attempt } => {
                        let verdict = if dice.next().is_some_and(|d| d >= 128) { pass() } else { fail(&["gap"]) };
                        goal.apply(&GoalEvent::Verified { work, attempt, verdict }).unwrap();
                    }
                    GoalInstruction::Accept => {
                        let verdict = if dice.next().is_some_and(|d| d >= 64) { pass() } else { fail(&["not yet"]) };
                        let passed = verdict.passed;
                        goal.apply(&GoalEvent::Accepted { verdict }).unwrap();
                        prop_assert_eq!(goal.status == GoalStatus::Achieved, passed);
                    }
                }
            }
        }
        prop_assert!(decide(&goal).is_empty(), "it settles");
        match goal.status {
            GoalStatus::Achieved => prop_assert!(goal.verdict.as_ref().is_some_and(|v| v.passed)),
            GoalStatus::NeedsAttention => prop_assert!(goal.reason.is_some()),
            other => prop_assert!(false, "ended {other}"),
        }
        for w in &goal.works {
            prop_assert!(w.attempts.len() as u32 <= goal.attempts_allowed(w));
        }
    }
}
