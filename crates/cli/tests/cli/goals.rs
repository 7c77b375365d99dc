//! `rein goal`, with scripted models (no network), here and (in the parity run) through a
//! server that runs the goal while the command follows it: a goal planned
//! into three works (b after a, c beside a), b failing its first verification and passing its
//! second with the verifier's gaps in its prompt, the final acceptance passing; a work that
//! keeps failing blocked and retried from the command line; each model asked exactly what it
//! should be, and exactly as often.

use super::*;
use serde_json::{Value, json};

fn plan_json(works: Value) -> Canned {
    Canned::openai_text(&json!({ "works": works }).to_string())
}

fn verdict(passed: bool, gaps: &[&str]) -> Canned {
    Canned::openai_text(
        &json!({"passed": passed, "gaps": gaps, "evidence": ["read the output"]}).to_string(),
    )
}

fn asked(e: &Env, marker: &str) -> Vec<rein_model::testing::Recorded> {
    e.server
        .requests()
        .into_iter()
        .filter(|r| r.system_text().contains(marker))
        .collect()
}

fn goal_of(err: &str) -> String {
    err.lines()
        .chain(std::iter::once(""))
        .find_map(|l| l.strip_prefix("goal ").map(str::to_owned))
        .unwrap_or_default()
}

async fn agent(e: &Env, name: &str, role: &str) {
    let (code, _, err) = e.rein(&["agent", "create", name, "--system", role]).await;
    assert_eq!(code, 0, "{err}");
}

#[tokio::test]
async fn a_goal_is_planned_run_verified_retried_and_achieved_only_on_acceptance() {
    let e = env(Vec::new()).await;
    agent(&e, "alpha", "ROLE-ALPHA: you inventory services.").await;
    agent(&e, "beta", "ROLE-BETA: you migrate services.").await;
    agent(&e, "gamma", "ROLE-GAMMA: you write docs.").await;
    e.server.route(
        "You plan long-horizon work",
        vec![plan_json(json!([
            {"id": "a", "instruction": "List the services.", "assignee": "alpha", "depends_on": [], "acceptance": "every service is listed"},
            {"id": "b", "instruction": "Migrate each listed service.", "assignee": "beta", "depends_on": ["a"], "acceptance": "each has a rollback plan"},
            {"id": "c", "instruction": "Write the runbook.", "assignee": "gamma", "depends_on": [], "acceptance": "the runbook exists"},
        ]))],
    );
    e.server.route(
        "ROLE-ALPHA",
        vec![Canned::openai_text("Services: auth, billing.")],
    );
    e.server.route(
        "ROLE-BETA",
        vec![
            Canned::openai_text("Migrated auth and billing."),
            Canned::openai_text("Migrated auth and billing; rollback: snapshot then restore."),
        ],
    );
    e.server
        .route("ROLE-GAMMA", vec![Canned::openai_text("Runbook written.")]);
    e.server
        .route("reviewer of work `a`", vec![verdict(true, &[])]);
    e.server.route(
        "reviewer of work `b`",
        vec![verdict(false, &["no rollback plan"]), verdict(true, &[])],
    );
    e.server
        .route("reviewer of work `c`", vec![verdict(true, &[])]);
    e.server
        .route("reviewer of the whole objective", vec![verdict(true, &[])]);
    let (code, out, err) = e
        .rein(&[
            "goal",
            "create",
            "Migrate the services",
            "--acceptance",
            "every service migrated with a rollback plan",
        ])
        .await;
    assert_eq!(code, 0, "achieved: {out}\n{err}");
    let id = goal_of(&out);
    assert!(
        err.contains("b: attempt 1 did not pass: no rollback plan"),
        "{err}"
    );
    assert!(err.contains("the final acceptance passed"), "{err}");
    let (code, shown, err) = e.rein(&["goal", "show", &id, "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let g: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(g["goal"]["status"], "achieved", "{g:#}");
    let attempts = |w: &str| {
        g["goal"]["works"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == w)
            .unwrap()["attempts"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!((attempts("a"), attempts("b"), attempts("c")), (1, 2, 1));
    // Each model was asked exactly what it should be, exactly as often.
    let planner = asked(&e, "You plan long-horizon work");
    assert_eq!(planner.len(), 1);
    let planned = planner[0].body.to_string();
    assert!(
        planned.contains("Migrate the services") && planned.contains("alpha"),
        "{planned}"
    );
    assert_eq!(asked(&e, "ROLE-ALPHA").len(), 1);
    assert_eq!(asked(&e, "ROLE-GAMMA").len(), 1);
    let beta = asked(&e, "ROLE-BETA");
    assert_eq!(beta.len(), 2);
    let first = beta[0].body.to_string();
    assert!(
        first.contains("Services: auth, billing."),
        "b reads what a produced: {first}"
    );
    let second = beta[1].body.to_string();
    assert!(
        second.contains("attempt 2") && second.contains("no rollback plan"),
        "the gaps are in the retry: {second}"
    );
    assert_eq!(asked(&e, "reviewer of work `a`").len(), 1);
    let b_judged = asked(&e, "reviewer of work `b`");
    assert_eq!(b_judged.len(), 2);
    assert!(
        b_judged[1]
            .body
            .to_string()
            .contains("rollback: snapshot then restore")
    );
    assert_eq!(asked(&e, "reviewer of work `c`").len(), 1);
    let accepted = asked(&e, "reviewer of the whole objective");
    assert_eq!(accepted.len(), 1);
    assert!(
        accepted[0]
            .body
            .to_string()
            .contains("every service migrated with a rollback plan")
    );
    // Listed.
    let (_, listed, _) = e.rein(&["goal", "list"]).await;
    assert!(
        listed.contains(&id) && listed.contains("achieved"),
        "{listed}"
    );
}

#[tokio::test]
async fn a_work_that_keeps_failing_is_blocked_retried_and_a_gap_at_acceptance_is_not_achieved() {
    let e = env(Vec::new()).await;
    agent(&e, "solo", "ROLE-SOLO: you do it.").await;
    e.server.route(
        "You plan long-horizon work",
        vec![plan_json(json!([
            {"id": "only", "instruction": "Do it.", "assignee": null, "depends_on": [], "acceptance": "it is done"},
        ]))],
    );
    e.server.route(
        "ROLE-SOLO",
        vec![
            Canned::openai_text("Tried."),
            Canned::openai_text("Tried harder."),
            Canned::openai_text("Done, with proof."),
        ],
    );
    e.server.route(
        "reviewer of work `only`",
        vec![
            verdict(false, &["not done"]),
            verdict(false, &["still not done"]),
            verdict(true, &[]),
        ],
    );
    e.server.route(
        "reviewer of the whole objective",
        vec![verdict(false, &["the report is missing"])],
    );
    let (code, out, err) = e
        .rein(&[
            "goal",
            "create",
            "Do the thing",
            "--agent",
            "solo",
            "--max-attempts",
            "2",
        ])
        .await;
    assert_eq!(code, 3, "blocked, waiting for a person: {err}");
    let id = goal_of(&out);
    assert!(err.contains("did not pass in 2 attempts"), "{err}");
    let (_, shown, _) = e.rein(&["goal", "show", &id]).await;
    assert!(
        shown.contains("needs_attention") && shown.contains("blocked"),
        "{shown}"
    );
    // The inbox has an urgent decision pointing at the goal.
    let (_, inbox, _) = e.rein(&["brief", "list", "--json"]).await;
    let brief = inbox
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|b| {
            b["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("Goal needs you"))
        })
        .unwrap_or_else(|| panic!("no brief: {inbox}"));
    assert_eq!(brief["priority"], "urgent", "{brief:#}");
    assert_eq!(brief["artifacts"][0]["reference"], id.as_str(), "{brief:#}");
    // It offers the decisions themselves; nothing to resume while a work is blocked.
    let offered: Vec<&str> = brief["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "retry:only",
            "skip:only",
            "replan",
            "accept",
            "reject",
            "cancel",
            "acknowledge"
        ]
    );
    let (code, _, err) = e
        .rein(&["brief", "resolve", brief["id"].as_str().unwrap(), "resume"])
        .await;
    assert_eq!(code, 1, "not offered: {err}");
    assert!(err.contains("not `resume`"), "{err}");
    // A retry from the command line continues it; the acceptance then finds a gap.
    let (code, _, err) = e.rein(&["goal", "retry", &id, "only"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e.rein(&["goal", "run", &id]).await;
    assert_eq!(code, 3, "a gap at acceptance is never achieved: {err}");
    assert!(err.contains("the report is missing"), "{err}");
    let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
    let g: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(g["goal"]["status"], "needs_attention", "{g:#}");
    assert_eq!(
        g["goal"]["works"][0]["attempts"].as_array().unwrap().len(),
        3
    );
    assert_eq!(asked(&e, "ROLE-SOLO").len(), 3);
    // A person may accept it, on their word, recorded: here from the inbox, the brief's
    // comment the note.
    let (_, inbox, _) = e.rein(&["brief", "list", "--json"]).await;
    let gaps = inbox
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|b| {
            b["summary"]
                .as_str()
                .is_some_and(|t| t.contains("the report is missing"))
        })
        .unwrap_or_else(|| panic!("no brief for the gaps: {inbox}"));
    let offered: Vec<&str> = gaps["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    assert!(
        !offered.contains(&"resume"),
        "gaps are no pause: {offered:?}"
    );
    let (code, _, err) = e
        .rein(&[
            "brief",
            "resolve",
            gaps["id"].as_str().unwrap(),
            "accept",
            "--comment",
            "the report is not needed",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (_, shown, _) = e.rein(&["goal", "show", &id]).await;
    assert!(
        shown.contains("accepted by") && shown.contains("the report is not needed"),
        "{shown}"
    );
    // Nothing more to decide on a goal that is over.
    let (code, _, err) = e.rein(&["goal", "cancel", &id]).await;
    assert_eq!(code, 1);
    assert!(err.contains("achieved"), "{err}");
}

/// The walk's scripts on `server`, with spare worker answers: a work's model call in flight
/// when the process is killed is asked again when its operation resumes (the goal's own calls
/// are never in flight at a goal commit: its runner does one thing at a time). Its agents are
/// alpha, beta and gamma, each with its `ROLE-…` marker.
pub(crate) fn walk_script(server: &rein_model::testing::Server) {
    server.route(
        "You plan long-horizon work",
        vec![plan_json(json!([
            {"id": "a", "instruction": "List the services.", "assignee": "alpha", "depends_on": [], "acceptance": "every service is listed"},
            {"id": "b", "instruction": "Migrate each listed service.", "assignee": "beta", "depends_on": ["a"], "acceptance": "each has a rollback plan"},
            {"id": "c", "instruction": "Write the runbook.", "assignee": "gamma", "depends_on": [], "acceptance": "the runbook exists"},
        ]))],
    );
    for (role, answer) in [
        ("ROLE-ALPHA", "Services: auth, billing."),
        ("ROLE-BETA", "Migrated."),
        ("ROLE-GAMMA", "Runbook written."),
    ] {
        server.route(role, (0..6).map(|_| Canned::openai_text(answer)).collect());
    }
    server.route("reviewer of work `a`", vec![verdict(true, &[])]);
    server.route(
        "reviewer of work `b`",
        vec![verdict(false, &["no rollback plan"]), verdict(true, &[])],
    );
    server.route("reviewer of work `c`", vec![verdict(true, &[])]);
    server.route("reviewer of the whole objective", vec![verdict(true, &[])]);
}

/// How often the walk asks each of the goal's own models, however often it is killed: the plan
/// once, each verdict once (b's twice), the acceptance once.
pub(crate) const WALK_GOAL_CALLS: [(&str, usize); 5] = [
    ("You plan long-horizon work", 1),
    ("reviewer of work `a`", 1),
    ("reviewer of work `b`", 2),
    ("reviewer of work `c`", 1),
    ("reviewer of the whole objective", 1),
];

/// SIGKILL right after each of the walk's 14 goal commits (the plan, each work's start, end
/// and verdict, the acceptance), then `rein goal run`: the goal is achieved with every work's
/// attempt one operation, every verdict asked and committed once, the plan asked once.
#[tokio::test]
async fn a_goal_killed_after_any_commit_resumes_with_nothing_done_twice() {
    if super::local_only(
        "a_goal_killed_after_any_commit_resumes_with_nothing_done_twice",
        "it kills this process at crash points",
    ) {
        return;
    }
    for n in 1..=14 {
        let e = env(Vec::new()).await;
        agent(&e, "alpha", "ROLE-ALPHA: you inventory services.").await;
        agent(&e, "beta", "ROLE-BETA: you migrate services.").await;
        agent(&e, "gamma", "ROLE-GAMMA: you write docs.").await;
        walk_script(&e.server);
        let (code, out, err) = e
            .rein(&["goal", "create", "Migrate the services", "--detach"])
            .await;
        assert_eq!(code, 0, "{err}");
        let id = goal_of(&out);
        kill_at(&e, &["goal", "run", &id], &format!("goal:{n}")).await;
        let (code, _, err) = e.rein(&["goal", "run", &id]).await;
        assert_eq!(code, 0, "killed after commit {n}, then achieved: {err}");
        let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
        let g: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(g["goal"]["status"], "achieved", "after commit {n}: {g:#}");
        let attempts: Vec<usize> = ["a", "b", "c"]
            .iter()
            .map(|w| {
                g["goal"]["works"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["id"] == *w)
                    .unwrap()["attempts"]
                    .as_array()
                    .unwrap()
                    .len()
            })
            .collect();
        assert_eq!(attempts, [1, 2, 1], "after commit {n}");
        // One operation per attempt, in the store.
        let (_, ops, _) = e.rein(&["op", "list", "--json"]).await;
        assert_eq!(ops.lines().count(), 4, "after commit {n}: {ops}");
        // The goal's own calls: each exactly once.
        for (marker, times) in WALK_GOAL_CALLS {
            assert_eq!(asked(&e, marker).len(), times, "{marker} after commit {n}");
        }
    }
}

/// The goal's cost limit crossed inside a work: under `stop` the whole goal fails, no other
/// work starts; under `interrupt` the work's operation is parked resumably and the goal waits
/// for a person.
#[tokio::test]
async fn a_goal_past_its_cost_limit_stops_or_waits_as_its_policy_says() {
    for (policy, code, status, op_status) in [
        ("stop", 1, "failed", "done"),
        ("interrupt", 3, "needs_attention", "interrupted"),
    ] {
        let e = env(Vec::new()).await;
        agent(&e, "spender", "ROLE-SPENDER: you spend.").await;
        e.server.route(
            "You plan long-horizon work",
            vec![plan_json(json!([
                {"id": "big", "instruction": "Spend.", "assignee": null, "depends_on": [], "acceptance": "spent"},
                {"id": "later", "instruction": "After.", "assignee": null, "depends_on": ["big"], "acceptance": "done"},
            ]))],
        );
        e.server.route(
            "ROLE-SPENDER",
            vec![Canned::openai_text_costing("Spent a lot.", 0.5)],
        );
        let (got, out, err) = e
            .rein(&[
                "goal",
                "create",
                "Spend wisely",
                "--agent",
                "spender",
                "--cost-limit",
                "0.10",
                "--on-budget",
                policy,
            ])
            .await;
        assert_eq!(got, code, "{policy}: {err}");
        assert!(err.contains("budget: spent"), "{policy}: {err}");
        let id = goal_of(&out);
        let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
        let g: Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(g["goal"]["status"], status, "{policy}: {g:#}");
        assert!(g["spent_usd"].as_f64().unwrap() >= 0.5, "{g:#}");
        assert_eq!(
            g["goal"]["works"][1]["attempts"].as_array().unwrap().len(),
            0,
            "{policy}: nothing after it started"
        );
        let (_, ops, _) = e.rein(&["op", "list", "--json"]).await;
        assert_eq!(ops.lines().count(), 1, "{ops}");
        let op: Value = serde_json::from_str(ops.lines().next().unwrap()).unwrap();
        assert_eq!(op["status"], op_status, "{policy}: {op:#}");
    }
}

fn plan_file(e: &Env, name: &str, works: Value) -> String {
    let path = e.dir.join(name);
    std::fs::write(&path, json!({ "works": works }).to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

/// `rein goal plan ID --edit FILE`: a person's plan before the planner is asked here (which then
/// never is; a server asks it at once, and its answer is no plan), refused whole when it is
/// wrong, and again after a work is blocked: the blocked work left out is retired, the new
/// work runs, and the goal is achieved on acceptance.
#[tokio::test]
async fn a_person_edits_a_goals_plan_before_and_during_its_run() {
    let e = env(Vec::new()).await;
    agent(&e, "solo", "ROLE-SOLO: you do it.").await;
    // Here the planner is asked only when the goal runs; a server asks it as soon as the goal
    // is made, and this one answers with no plan.
    let server_plans = super::parity();
    e.server.route(
        "You plan long-horizon work",
        vec![Canned::openai_text("I would rather not.")],
    );
    e.server.route(
        "ROLE-SOLO",
        vec![
            Canned::openai_text("Counted: 3."),
            Canned::openai_text("Half done."),
            Canned::openai_text("Report written: 3 services."),
        ],
    );
    e.server
        .route("reviewer of work `count`", vec![verdict(true, &[])]);
    e.server
        .route("reviewer of work `big`", vec![verdict(false, &["too big"])]);
    e.server
        .route("reviewer of work `report`", vec![verdict(true, &[])]);
    e.server
        .route("reviewer of the whole objective", vec![verdict(true, &[])]);
    let (code, out, err) = e
        .rein(&[
            "goal",
            "create",
            "Report on the services",
            "--agent",
            "solo",
            "--max-attempts",
            "1",
            "--detach",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let id = goal_of(&out);
    if server_plans {
        rein_testkit::eventually("the server's planner answered with no plan", || async {
            let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
            let g: Value = serde_json::from_str(&shown).ok()?;
            (g["goal"]["status"] == "needs_attention").then_some(())
        })
        .await;
    }
    // Refused whole, naming what is wrong; the goal is unchanged.
    let cyclic = plan_file(
        &e,
        "cyclic.json",
        json!([
            {"id": "x", "instruction": "X.", "depends_on": ["y"], "acceptance": "x"},
            {"id": "y", "instruction": "Y.", "depends_on": ["x"], "acceptance": "y"},
        ]),
    );
    let (code, _, err) = e.rein(&["goal", "plan", &id, "--edit", &cyclic]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cycle"), "{err}");
    let stranger = plan_file(
        &e,
        "stranger.json",
        json!([{"id": "x", "instruction": "X.", "assignee": "nobody", "acceptance": "x"}]),
    );
    let (code, _, err) = e.rein(&["goal", "plan", &id, "--edit", &stranger]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`nobody`, which is not one of your agents"),
        "{err}"
    );
    let garbled = plan_file(&e, "garbled.json", json!([{"id": "x"}]));
    let (code, _, err) = e.rein(&["goal", "plan", &id, "--edit", &garbled]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not a plan"), "{err}");
    // Before the planner is asked: the person's plan is the first revision.
    let first = plan_file(
        &e,
        "first.json",
        json!([
            {"id": "count", "instruction": "Count the services.", "acceptance": "a number"},
            {"id": "big", "instruction": "Do everything else.", "depends_on": ["count"], "acceptance": "all of it"},
        ]),
    );
    let (code, out, err) = e
        .rein(&[
            "goal",
            "plan",
            &id,
            "--edit",
            &first,
            "--why",
            "I know the steps",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("is running (plan 1)"), "{out}");
    let (code, printed, err) = e.rein(&["goal", "plan", &id]).await;
    assert_eq!(code, 0, "{err}");
    let printed: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(printed["works"][1]["id"], "big", "{printed:#}");
    assert_eq!(printed["works"][1]["depends_on"], json!(["count"]));
    let (code, _, err) = e.rein(&["goal", "run", &id]).await;
    assert_eq!(code, 3, "big is blocked: {err}");
    // During: `big` is replaced by a smaller work; what passed is kept.
    let second = plan_file(
        &e,
        "second.json",
        json!([
            {"id": "report", "instruction": "Write the report.", "depends_on": ["count"], "acceptance": "a report"},
        ]),
    );
    let (code, out, err) = e
        .rein(&[
            "goal",
            "plan",
            &id,
            "--edit",
            &second,
            "--why",
            "smaller steps",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("is running (plan 2)"), "{out}");
    let (code, _, err) = e.rein(&["goal", "run", &id]).await;
    assert_eq!(code, 0, "achieved: {err}");
    assert!(err.contains("report: attempt 1 passed"), "{err}");
    let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
    let g: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(g["goal"]["status"], "achieved", "{g:#}");
    let status = |w: &str| {
        g["goal"]["works"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == w)
            .map(|x| x["status"].clone())
    };
    assert_eq!(
        (status("count"), status("big"), status("report")),
        (
            Some(json!("passed")),
            Some(json!("retired")),
            Some(json!("passed"))
        )
    );
    let revisions = g["goal"]["revisions"].as_array().unwrap();
    assert_eq!(revisions.len(), 2);
    assert_eq!(revisions[0]["why"], "I know the steps");
    assert_eq!(revisions[1]["why"], "smaller steps");
    assert!(
        revisions[1]["by"].as_str().unwrap().starts_with("user:"),
        "{revisions:?}"
    );
    assert_eq!(
        asked(&e, "You plan long-horizon work").len(),
        usize::from(server_plans),
        "a plan written before the goal runs is never asked of the planner"
    );
    assert_eq!(asked(&e, "ROLE-SOLO").len(), 3);
    // The report's worker read what `count` produced.
    assert!(
        asked(&e, "ROLE-SOLO")[2]
            .body
            .to_string()
            .contains("Counted: 3.")
    );
}

/// The judge walk's agents and scripts: `doer` does notes then summary (twice), `judge`
/// passes notes, finds a gap in the first summary, passes the second and the whole.
async fn judge_walk(e: &Env) {
    // Not `worker`: an argument of that name would keep the parity run's command here.
    agent(e, "doer", "ROLE-WORKER: you do the work.").await;
    agent(e, "judge", "ROLE-JUDGE: you check work.").await;
    e.server.route(
        "You plan long-horizon work",
        vec![plan_json(json!([
            {"id": "notes", "instruction": "Write the notes.", "assignee": null, "depends_on": [], "acceptance": "three notes"},
            {"id": "summary", "instruction": "Summarise the notes.", "assignee": null, "depends_on": ["notes"], "acceptance": "names every note"},
        ]))],
    );
    e.server.route(
        "ROLE-WORKER",
        vec![
            Canned::openai_text("Notes: alpha, beta, gamma."),
            Canned::openai_text("Summary: alpha and beta."),
            Canned::openai_text("Summary: alpha, beta and gamma."),
        ],
    );
    e.server.route(
        "ROLE-JUDGE",
        vec![
            Canned::openai_text(
                "I read the notes.\n```json\n{\"passed\": true, \"gaps\": [], \"evidence\": [\"three notes listed\"]}\n```",
            ),
            Canned::openai_text(
                "The summary misses one. {\"passed\": false, \"gaps\": [\"gamma is not named\"], \"evidence\": [\"alpha and beta only\"]}",
            ),
            Canned::openai_text(
                "{\"passed\": true, \"gaps\": [], \"evidence\": [\"all three named\"]}",
            ),
            Canned::openai_text(
                "Every work is there.\n{\"passed\": true, \"gaps\": [], \"evidence\": [\"notes and summary\"]}",
            ),
        ],
    );
}

/// `--verifier-agent judge`: every verification and the final acceptance is an operation of
/// the judge agent (no verifier model call is made), whose answer ends with the verdict as
/// JSON (fenced, after prose, or alone); its failed verdict's gaps reach the retry; its
/// operations count in the goal's spending. A judge that is the worker, or no agent, is
/// refused.
#[tokio::test]
async fn a_verifier_agent_judges_each_work_in_operations_of_its_own() {
    let e = env(Vec::new()).await;
    judge_walk(&e).await;
    for (args, says) in [
        (
            vec!["--agent", "judge", "--verifier-agent", "judge"],
            "never judged by who did it",
        ),
        (vec!["--verifier-agent", "nobody"], "no agent `nobody`"),
        (
            vec![
                "--verifier",
                "openai/gpt-4o-mini",
                "--verifier-agent",
                "judge",
            ],
            "cannot be used with",
        ),
    ] {
        let mut argv = vec!["goal", "create", "Notes and a summary"];
        argv.extend(args.iter().copied());
        let (code, _, err) = e.rein(&argv).await;
        assert_ne!(code, 0, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let (code, out, err) = e
        .rein(&[
            "goal",
            "create",
            "Notes and a summary",
            "--agent",
            "doer",
            "--verifier-agent",
            "judge",
        ])
        .await;
    assert_eq!(code, 0, "achieved: {out}\n{err}");
    assert!(
        err.contains("summary: attempt 1 did not pass: gamma is not named"),
        "{err}"
    );
    let id = goal_of(&out);
    // No verifier model call: every judgement was the judge agent's.
    assert_eq!(asked(&e, "independent, strict reviewer").len(), 0);
    let judged = asked(&e, "ROLE-JUDGE");
    assert_eq!(
        judged.len(),
        4,
        "two attempts of summary, notes, the acceptance"
    );
    let first = judged[0].body.to_string();
    assert!(
        first.contains("Notes: alpha, beta, gamma.")
            && first.contains("End your answer with the verdict"),
        "the judge reads the work's output: {first}"
    );
    assert!(
        judged[3]
            .body
            .to_string()
            .contains("Summary: alpha, beta and gamma."),
        "the acceptance reads every work"
    );
    let retried = asked(&e, "ROLE-WORKER")[2].body.to_string();
    assert!(retried.contains("gamma is not named"), "{retried}");
    // Seven operations: three attempts, four judgements, all counted in the goal's spending.
    let (_, listed, _) = e.rein(&["op", "list", "--json"]).await;
    let ops: Vec<Value> = listed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|v| match v {
            Value::Array(all) => all,
            one => vec![one],
        })
        .collect();
    assert_eq!(ops.len(), 7, "{listed}");
    let tokens: u64 = ops
        .iter()
        .map(|o| o["total_tokens"].as_u64().unwrap_or_default())
        .sum();
    let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
    let g: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(g["goal"]["status"], "achieved", "{g:#}");
    assert_eq!(g["settings"]["verifier_agent"], "judge", "{g:#}");
    assert!(
        g["spent_tokens"].as_u64().unwrap() >= tokens && tokens > 0,
        "the judge's operations count: {} of {tokens}",
        g["spent_tokens"]
    );
}

/// SIGKILL of `rein goal run` right after each of the judge walk's 14 operation commits (three
/// attempts' and four judgements' steps and ends), then `rein goal run` again: achieved with
/// seven operations, every model asked once.
#[tokio::test]
async fn a_goal_killed_inside_a_verifier_agents_judgement_judges_once() {
    if super::local_only(
        "a_goal_killed_inside_a_verifier_agents_judgement_judges_once",
        "it kills this process at crash points",
    ) {
        return;
    }
    for k in 1..=14 {
        let e = env(Vec::new()).await;
        judge_walk(&e).await;
        let (code, out, err) = e
            .rein(&[
                "goal",
                "create",
                "Notes and a summary",
                "--agent",
                "doer",
                "--verifier-agent",
                "judge",
                "--detach",
            ])
            .await;
        assert_eq!(code, 0, "{err}");
        let id = goal_of(&out);
        kill_at(&e, &["goal", "run", &id], &format!("commit:{k}")).await;
        let (code, _, err) = e.rein(&["goal", "run", &id]).await;
        assert_eq!(code, 0, "killed after commit {k}, then achieved: {err}");
        let (_, listed, _) = e.rein(&["op", "list", "--json"]).await;
        assert_eq!(listed.lines().count(), 7, "after commit {k}: {listed}");
        for (marker, times) in [
            ("ROLE-JUDGE", 4),
            ("ROLE-WORKER", 3),
            ("You plan long-horizon work", 1),
        ] {
            assert_eq!(asked(&e, marker).len(), times, "{marker} after commit {k}");
        }
    }
}

/// Under `interrupt`, a goal its budget stopped waits for a person, its brief offering to
/// resume; `rein goal resume ID --cost-limit` sets the new limit (committed as the person's)
/// and the work's operation, interrupted by its share of the old limit, runs on where it
/// stopped (the same operation, no new attempt) and the goal is achieved.
#[tokio::test]
async fn a_goal_its_budget_interrupted_runs_on_where_it_stopped_once_its_limit_is_raised() {
    let e = env(Vec::new()).await;
    agent(&e, "spender", "ROLE-SPENDER: you spend.").await;
    e.server.route(
        "You plan long-horizon work",
        vec![plan_json(json!([
            {"id": "big", "instruction": "Spend.", "assignee": null, "depends_on": [], "acceptance": "spent"},
            {"id": "later", "instruction": "After.", "assignee": null, "depends_on": ["big"], "acceptance": "done"},
        ]))],
    );
    e.server.route(
        "ROLE-SPENDER",
        vec![
            Canned::openai_text_costing("Spent a lot.", 0.5),
            Canned::openai_text("Spent, and checked."),
            Canned::openai_text("Later done."),
        ],
    );
    for w in ["big", "later"] {
        e.server
            .route(&format!("reviewer of work `{w}`"), vec![verdict(true, &[])]);
    }
    e.server
        .route("reviewer of the whole objective", vec![verdict(true, &[])]);
    let (code, out, err) = e
        .rein(&[
            "goal",
            "create",
            "Spend wisely",
            "--agent",
            "spender",
            "--cost-limit",
            "0.10",
            "--on-budget",
            "interrupt",
        ])
        .await;
    assert_eq!(code, 3, "waits for a person: {err}");
    let id = goal_of(&out);
    // The work's operation, found through the goal (the list's order is not the point).
    let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
    let g: Value = serde_json::from_str(&shown).unwrap();
    let big_id = g["goal"]["works"][0]["attempts"][0]["operation"].clone();
    let (_, ops, _) = e.rein(&["op", "list", "--json"]).await;
    let big: Value = ops
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|op| op["id"] == big_id)
        .unwrap_or_else(|| panic!("the work's operation {big_id} is listed: {ops}"));
    assert_eq!(big["status"], "interrupted", "{big:#}");
    let (_, inbox, _) = e.rein(&["brief", "list", "--json"]).await;
    assert!(
        inbox.contains("\"key\":\"resume\""),
        "a spent budget can be resumed from the inbox: {inbox}"
    );
    // Resuming without new limits runs into the same limit again.
    let (code, _, err) = e.rein(&["goal", "resume", &id]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e.rein(&["goal", "run", &id]).await;
    assert_eq!(code, 3, "still over its limit: {err}");
    assert!(err.contains("its budget ran out"), "{err}");
    let (code, out, err) = e.rein(&["goal", "resume", &id, "--cost-limit", "5"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("is running"), "{out}");
    let (code, _, err) = e.rein(&["goal", "run", &id]).await;
    assert_eq!(code, 0, "achieved: {err}");
    let (_, shown, _) = e.rein(&["goal", "show", &id, "--json"]).await;
    let g: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(g["goal"]["status"], "achieved", "{g:#}");
    assert_eq!(g["settings"]["cost_limit"], 5.0, "{g:#}");
    assert_eq!(
        g["goal"]["works"][0]["attempts"].as_array().unwrap().len(),
        1,
        "the interrupted attempt ran on: {g:#}"
    );
    assert_eq!(
        g["goal"]["works"][0]["attempts"][0]["operation"], big["id"],
        "{g:#}"
    );
    let (_, ops, _) = e.rein(&["op", "list", "--json"]).await;
    assert_eq!(ops.lines().count(), 2, "{ops}");
    assert_eq!(asked(&e, "ROLE-SPENDER").len(), 3);
}
