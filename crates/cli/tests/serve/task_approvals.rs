//! A task run that parks on an approval asks the person: an urgent decision brief (posted to
//! the owner's hook) with `approve_call` and `reject_call`; resolving it decides the call and
//! the run goes on. Decided on the operation itself instead, the brief closes (`decided`) and
//! no longer holds the task.

use super::*;

/// Wait for an unresolved brief of `task` offering `approve_call`.
async fn approval_brief(e: &Env, rein: &Rein, token: &str, task: &str) -> Value {
    eventually("an approval brief", || async {
        let (_, l) = e
            .call(rein, "GET", "/v1/briefs?unresolved=true", Some(token), None)
            .await;
        l["briefs"].as_array().and_then(|b| {
            b.iter()
                .find(|b| {
                    b["task_id"] == task
                        && b["actions"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|a| a["key"] == "approve_call"))
                })
                .cloned()
        })
    })
    .await
}

async fn task(e: &Env, rein: &Rein, token: &str, title: &str) -> String {
    let (status, task) = e
        .call(
            rein,
            "POST",
            "/v1/tasks",
            Some(token),
            Some(json!({"title": title, "instruction": "Say hi from the shell."})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

async fn run_now(e: &Env, rein: &Rein, token: &str, task: &str) -> String {
    let (status, run) = e
        .call(
            rein,
            "POST",
            &format!("/v1/tasks/{task}/run"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(status, 202, "{run}");
    run["operation_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_task_run_parked_on_an_approval_asks_in_an_urgent_brief_whose_resolution_decides() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "s1",
            "shell__run",
            &json!({"command": "echo from-task"}).to_string(),
        )]),
        Canned::openai_text("Said hi."),
        Canned::openai_tools(&[(
            "s2",
            "shell__run",
            &json!({"command": "echo again"}).to_string(),
        )]),
        Canned::openai_text("Said it again."),
    ])
    .await;
    let alice = e.token("alice").await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let rein = e
        .start_with(
            &[
                "--allow-private-hooks",
                "--workdir",
                &work.display().to_string(),
            ],
            &[],
        )
        .await;
    let (url, hits) = hook_receiver().await;
    let (status, body) = e
        .call(
            &rein,
            "PUT",
            "/v1/brief-hook",
            Some(&alice),
            Some(json!({"url": url, "secret": "a-secret-of-24-characters"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // 1: resolved through the brief.
    let first = task(&e, &rein, &alice, "Greeter").await;
    let op = run_now(&e, &rein, &alice, &first).await;
    let brief = approval_brief(&e, &rein, &alice, &first).await;
    assert_eq!(
        (&brief["kind"], &brief["priority"]),
        (&json!("decision"), &json!("urgent"))
    );
    assert_eq!(brief["operation_id"], op.as_str());
    let summary = brief["summary"].as_str().unwrap();
    assert!(
        summary.contains("shell/run({\"command\":\"echo from-task\"})")
            && summary.contains("requires approval in manual mode"),
        "{summary}"
    );
    let id = brief["id"].as_str().unwrap().to_owned();
    eventually("the approval brief delivered to the hook", || async {
        let h = hits.lock().unwrap().clone();
        h.iter()
            .any(|x| x.status == 200 && x.body["brief"]["id"] == id.as_str())
            .then_some(())
    })
    .await;
    let (status, done) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/briefs/{id}/resolve"),
            Some(&alice),
            Some(json!({"action": "approve_call"})),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["operation_id"], op.as_str());
    let detail = wait_status(&e, &rein, &op, &alice, "done").await;
    assert_eq!(detail["operation"]["finish_reason"], "completed");
    let ran = e.model.requests()[1].tool_result("s1");
    assert!(ran.trim_end().ends_with("from-task"), "the call ran: {ran}");
    let (_, list) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            None,
        )
        .await;
    assert!(list[0]["decided_by"].is_string(), "{list}");
    // Only one approval brief was raised for that parking.
    let (_, all) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/briefs?task={first}"),
            Some(&alice),
            None,
        )
        .await;
    let approvals = all["briefs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["actions"].to_string().contains("approve_call"))
        .count();
    assert_eq!(approvals, 1, "{all}");

    // 2: decided on the operation itself: the brief closes and holds nothing.
    let second = task(&e, &rein, &alice, "Greeter again").await;
    let op = run_now(&e, &rein, &alice, &second).await;
    let brief = approval_brief(&e, &rein, &alice, &second).await;
    let id = brief["id"].as_str().unwrap().to_owned();
    let detail = wait_status(&e, &rein, &op, &alice, "waiting_for_human").await;
    approve_all(&e, &rein, &op, &alice, &detail).await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    let closed = eventually("the brief closed", || async {
        let (_, b) = e
            .call(
                &rein,
                "GET",
                &format!("/v1/briefs/{id}"),
                Some(&alice),
                None,
            )
            .await;
        b["resolution"].is_object().then_some(b)
    })
    .await;
    assert_eq!(closed["resolution"]["action"], "decided");
    // Resolving it now is refused: it was resolved.
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/briefs/{id}/resolve"),
            Some(&alice),
            Some(json!({"action": "reject_call"})),
        )
        .await;
    assert_eq!(status, 409);
}
