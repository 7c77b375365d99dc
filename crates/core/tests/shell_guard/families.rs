//! The families of disguised destruction the guard follows by effect, from
//! `tests/data/guard_families.jsonl` (one JSON object a line: `family`, `rule` — the first
//! blacklist rule it must match, `null` for a harmless look-alike that must match none — and
//! `command`; the CLI's end-to-end guard test runs the same file against a canary home):
//! launchers that run their arguments (a case for every entry of the guard's launcher table),
//! shells fed by a descriptor, a here-document, an alias or a process substitution, and
//! deletion by side effect (`tar --remove-files`, `rsync --delete`, `git clean -f`, `zip -m`,
//! `find -exec rm|shred|truncate`, `shred`, `truncate`).

use super::*;

/// One case of the families file.
#[derive(serde::Deserialize)]
struct Case {
    family: String,
    rule: Option<String>,
    command: String,
}

fn cases() -> Vec<Case> {
    include_str!("../data/guard_families.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn each_family_matches_its_rule_and_look_alikes_match_none() {
    let rules = default_security_blacklist();
    let mut failures = Vec::new();
    let cases = cases();
    for c in &cases {
        let got = blacklist_match(rules, &json!({ "command": c.command })).map(|r| r.id.as_str());
        if got != c.rule.as_deref() {
            failures.push(format!(
                "[{}] {:?}: expected {:?}, got {got:?}",
                c.family, c.command, c.rule
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} mismatched:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let dangerous = cases.iter().filter(|c| c.rule.is_some()).count();
    assert!(dangerous >= 100, "{dangerous} dangerous cases");
    for family in ["fed", "side_effect", "harmless"] {
        assert!(
            cases.iter().filter(|c| c.family == family).count() >= 15,
            "family {family}"
        );
    }
}

#[test]
fn every_launcher_of_the_table_has_a_case() {
    let cases = cases();
    let missing: Vec<&str> = rein_core::intervention::shell::launcher_names()
        .filter(|name| {
            !cases
                .iter()
                .any(|c| c.family == format!("launcher:{name}") && c.rule.is_some())
        })
        .collect();
    assert!(missing.is_empty(), "launchers without a case: {missing:?}");
}

#[test]
fn the_families_ask_in_auto_run_refuse_in_headless_and_look_alikes_run() {
    let checker = InterventionChecker::new();
    let mut state = common::state("x");
    for c in cases() {
        let call = shell_call(&c.command);
        state.intervention.approval_mode = ApprovalMode::AutoRun;
        let auto = checker.check(&call, &state);
        state.intervention.approval_mode = ApprovalMode::Headless;
        let headless = checker.check(&call, &state);
        if c.rule.is_some() {
            assert_eq!(auto, Action::RequireApproval, "{}", c.command);
            assert_eq!(headless, Action::Block, "{}", c.command);
        } else {
            assert_eq!(
                (auto, headless),
                (Action::Execute, Action::Execute),
                "{}",
                c.command
            );
        }
    }
}
