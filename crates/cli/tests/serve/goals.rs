//! `/v1/goals` on a real `rein serve` with scripted models: a goal created over the API is
//! planned, run, verified and achieved by the server with no client attached; its events come
//! in order; decisions on it are checked; another user's goal is not found.

use super::*;

fn verdict(passed: bool, gaps: &[&str]) -> Canned {
    Canned::openai_text(&json!({"passed": passed, "gaps": gaps, "evidence": ["read"]}).to_string())
}

#[tokio::test]
async fn a_goal_created_over_the_api_is_achieved_by_the_server_alone() {
    let e = env(Vec::new()).await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    e.create_agents(
        &rein,
        &alice,
        &[
            ("writer", json!({"system_role": "ROLE-WRITER: you write."})),
            (
                "checker",
                json!({"system_role": "ROLE-CHECKER: you check."}),
            ),
        ],
    )
    .await;
    e.model.route(
        "You plan long-horizon work",
        vec![Canned::openai_text(
            &json!({"works": [
                {"id": "draft", "instruction": "Draft it.", "assignee": "writer", "depends_on": [], "acceptance": "a draft"},
                {"id": "check", "instruction": "Check the draft.", "assignee": "checker", "depends_on": ["draft"], "acceptance": "checked"},
            ]})
            .to_string(),
        )],
    );
    e.model
        .route("ROLE-WRITER", vec![Canned::openai_text("The draft.")]);
    e.model
        .route("ROLE-CHECKER", vec![Canned::openai_text("Checked: fine.")]);
    e.model
        .route("reviewer of work `draft`", vec![verdict(true, &[])]);
    e.model
        .route("reviewer of work `check`", vec![verdict(true, &[])]);
    e.model
        .route("reviewer of the whole objective", vec![verdict(true, &[])]);
    // Refused before anything is kept.
    let (status, refused) = e
        .call(
            &rein,
            "POST",
            "/v1/goals",
            Some(&alice),
            Some(json!({"objective": "  "})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    let (status, refused) = e
        .call(
            &rein,
            "POST",
            "/v1/goals",
            Some(&alice),
            Some(json!({"objective": "x", "agent": "nobody"})),
        )
        .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (422, Some("agent_missing")),
        "{refused}"
    );
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/goals",
            Some(&alice),
            Some(
                json!({"objective": "Write a checked draft", "agent": "writer", "cost_limit": 5.0}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["goal"]["id"].as_str().unwrap().to_owned();
    // Its stream, opened as it starts, sends each commit once, in order, and ends with it.
    let mut stream = e
        .sse(&rein, &format!("/v1/goals/{id}/stream"), &alice, None)
        .await;
    let mut streamed = Vec::new();
    // Meanwhile `rein goal show --watch` follows it from another machine until it rests.
    let watch_args = ["goal", "show", id.as_str(), "--watch", "--json"];
    let ((code, watched, err), ()) = tokio::join!(
        e.on_server(&rein, &alice, &watch_args),
        stream.rest(&mut streamed)
    );
    assert_eq!(code, 0, "{err}");
    let views: Vec<Value> = watched
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = views.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]) && seqs.last() == Some(&8),
        "each change printed once, to the end: {seqs:?}"
    );
    assert_eq!(views.last().unwrap()["goal"]["status"], "achieved");
    let ids: Vec<u64> = streamed.iter().map(|m| m.id.unwrap()).collect();
    assert_eq!(ids, (1..=8).collect::<Vec<_>>(), "{streamed:?}");
    assert_eq!(streamed[7].data["event"]["type"], "accepted");
    assert_eq!(streamed[7].data["seq"], 8);
    // Resumed after commit 5: the rest, then the end.
    let mut resumed = e
        .sse(&rein, &format!("/v1/goals/{id}/stream"), &alice, Some(5))
        .await;
    let mut rest = Vec::new();
    resumed.rest(&mut rest).await;
    let ids: Vec<u64> = rest.iter().map(|m| m.id.unwrap()).collect();
    assert_eq!(ids, [6, 7, 8]);
    let done = eventually("the goal achieved", || async {
        let (_, g) = e
            .call(&rein, "GET", &format!("/v1/goals/{id}"), Some(&alice), None)
            .await;
        (g["goal"]["status"] == "achieved").then_some(g)
    })
    .await;
    assert_eq!(done["settings"]["cost_limit"], 5.0, "{done:#}");
    assert_eq!(done["goal"]["works"].as_array().unwrap().len(), 2);
    let (status, events) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/goals/{id}/events"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "planned",
            "work_started",
            "work_ended",
            "verified",
            "work_started",
            "work_ended",
            "verified",
            "accepted"
        ]
    );
    let seqs: Vec<u64> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<_>>());
    // The works' operations are alice's, in her list.
    let (_, ops) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    assert_eq!(ops.as_array().unwrap().len(), 2, "{ops:#}");
    // A decision on a goal that is over is a conflict; another user's goal is not found; a bad
    // id is a 400.
    let (status, refused) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/goals/{id}/decisions"),
            Some(&alice),
            Some(json!({"type": "cancel"})),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    let (status, _) = e
        .call(&rein, "GET", &format!("/v1/goals/{id}"), Some(&bob), None)
        .await;
    assert_eq!(status, 404);
    let (status, _) = e
        .call(&rein, "GET", "/v1/goals/not-a-goal", Some(&alice), None)
        .await;
    assert_eq!(status, 400);
    let (_, listed) = e.call(&rein, "GET", "/v1/goals", Some(&bob), None).await;
    assert_eq!(listed["goals"], json!([]));
}

/// `PUT /v1/goals/{id}/plan`: after the planner's answer was refused, a person's plan is checked
/// (422 naming what is wrong, 400 for a field that is not one) and committed as their revision;
/// the server runs it to the end.
#[tokio::test]
async fn a_person_plans_a_goal_over_the_api_after_the_planner_failed() {
    let e = env(Vec::new()).await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    e.create_agents(
        &rein,
        &alice,
        &[("writer", json!({"system_role": "ROLE-WRITER: you write."}))],
    )
    .await;
    e.model.route(
        "You plan long-horizon work",
        vec![Canned::openai_text("I would rather not.")],
    );
    e.model
        .route("ROLE-WRITER", vec![Canned::openai_text("The note.")]);
    e.model
        .route("reviewer of work `note`", vec![verdict(true, &[])]);
    e.model
        .route("reviewer of the whole objective", vec![verdict(true, &[])]);
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/goals",
            Some(&alice),
            Some(json!({"objective": "Write a note", "agent": "writer"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["goal"]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/goals/{id}/plan");
    let failed = eventually("the plan refused", || async {
        let (_, g) = e
            .call(&rein, "GET", &format!("/v1/goals/{id}"), Some(&alice), None)
            .await;
        (g["goal"]["status"] == "needs_attention").then_some(g)
    })
    .await;
    assert!(
        failed["goal"]["reason"]
            .as_str()
            .unwrap()
            .contains("no usable plan"),
        "{failed:#}"
    );
    let note = json!({"id": "note", "instruction": "Write the note.", "acceptance": "a note"});
    for (body, code, says) in [
        (
            json!({"works": [{"id": "x", "instruction": "X.", "depends_on": ["y"], "acceptance": "x"}]}),
            422,
            "depends on `y`, which is not in the plan",
        ),
        (
            json!({"works": [{"id": "x y", "instruction": "X.", "acceptance": "x"}]}),
            422,
            "is not a short name",
        ),
        (json!({"works": [note], "reason": "typo"}), 400, "reason"),
    ] {
        let (status, refused) = e
            .call(&rein, "PUT", &path, Some(&alice), Some(body.clone()))
            .await;
        assert_eq!(status, code, "{body}: {refused}");
        assert!(
            refused["error"]["message"].as_str().unwrap().contains(says),
            "{body}: {refused}"
        );
    }
    let (status, edited) = e
        .call(
            &rein,
            "PUT",
            &path,
            Some(&alice),
            Some(json!({"works": [note], "why": "the planner would not"})),
        )
        .await;
    assert_eq!(status, 200, "{edited}");
    let revision = &edited["goal"]["revisions"][0];
    assert_eq!(revision["by"], "user:alice", "{edited:#}");
    assert_eq!(revision["why"], "the planner would not");
    let done = eventually("the goal achieved", || async {
        let (_, g) = e
            .call(&rein, "GET", &format!("/v1/goals/{id}"), Some(&alice), None)
            .await;
        (g["goal"]["status"] == "achieved").then_some(g)
    })
    .await;
    assert_eq!(done["goal"]["works"][0]["status"], "passed", "{done:#}");
    // Nothing more to plan on a goal that is over.
    let (status, refused) = e
        .call(
            &rein,
            "PUT",
            &path,
            Some(&alice),
            Some(json!({"works": [note]})),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
}

/// SIGKILL of `rein serve` right after each of a goal's 14 commits (the plan, each work's start,
/// end and verdict, the acceptance: b after a, c beside a, b passing on its second attempt),
/// then a restart on its database: the restarted server takes the goal over once the dead
/// one's claim runs out and achieves it with one operation per attempt, each of the goal's own
/// model calls asked once, and each commit in the log once. Runs on PostgreSQL too
/// (`REIN_E2E_DATABASE=postgres`).
#[tokio::test]
async fn a_server_killed_after_any_goal_commit_resumes_it_with_nothing_done_twice() {
    let mut resumed_in = Vec::new();
    for n in 1..=14u64 {
        let e = env(Vec::new()).await;
        let pause = format!("goal:{n}");
        let rein = e
            .start(&[("REIN_TEST_PAUSE_AT", &pause), ("REIN_LEASE_SECS", "2")])
            .await;
        let alice = e.token("alice").await;
        e.create_agents(
            &rein,
            &alice,
            &[
                (
                    "alpha",
                    json!({"system_role": "ROLE-ALPHA: you inventory."}),
                ),
                ("beta", json!({"system_role": "ROLE-BETA: you migrate."})),
                ("gamma", json!({"system_role": "ROLE-GAMMA: you document."})),
            ],
        )
        .await;
        crate::cli::goals::walk_script(&e.model);
        let (status, created) = e
            .call(
                &rein,
                "POST",
                "/v1/goals",
                Some(&alice),
                Some(json!({"objective": "Migrate the services"})),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        let id = created["goal"]["id"].as_str().unwrap().to_owned();
        rein.wait_for(&format!("REIN_TEST_PAUSED {pause}")).await;
        let mut rein = rein;
        rein.child.kill().await.unwrap();
        let killed = std::time::Instant::now();
        let restarted = e.start(&[("REIN_LEASE_SECS", "2")]).await;
        let done = eventually("the goal achieved after the restart", || async {
            let (_, g) = e
                .call(
                    &restarted,
                    "GET",
                    &format!("/v1/goals/{id}"),
                    Some(&alice),
                    None,
                )
                .await;
            (g["goal"]["status"] == "achieved").then_some(g)
        })
        .await;
        resumed_in.push(killed.elapsed());
        let attempts: Vec<usize> = ["a", "b", "c"]
            .iter()
            .map(|w| {
                done["goal"]["works"]
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
        assert_eq!(attempts, [1, 2, 1], "killed after commit {n}: {done:#}");
        let (_, ops) = e
            .call(&restarted, "GET", "/v1/operations", Some(&alice), None)
            .await;
        assert_eq!(
            ops.as_array().unwrap().len(),
            4,
            "one operation per attempt, killed after commit {n}: {ops:#}"
        );
        let (_, events) = e
            .call(
                &restarted,
                "GET",
                &format!("/v1/goals/{id}/events"),
                Some(&alice),
                None,
            )
            .await;
        let seqs: Vec<u64> = events["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (1..=14).collect::<Vec<_>>(), "after commit {n}");
        for (marker, times) in crate::cli::goals::WALK_GOAL_CALLS {
            let asked = e
                .model
                .requests()
                .into_iter()
                .filter(|r| r.system_text().contains(marker))
                .count();
            assert_eq!(asked, times, "{marker}, killed after commit {n}");
        }
    }
    let longest = resumed_in.iter().max().unwrap();
    eprintln!(
        "a killed server's goal was achieved again within {longest:?} of the kill (2 s lease)"
    );
}
