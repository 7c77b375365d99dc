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
