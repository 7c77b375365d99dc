//! The client libraries front-ends are built with, against a real server: AG-UI's
//! `@ag-ui/client` and the AI SDK's `ai` (npm, installed by scripts/test into `.jsclients/`),
//! each validating every event it reads against its protocol's schemas and sequence rules.

use super::*;

fn plan_call(id: &str, items: Value) -> Canned {
    Canned::openai_tools(&[(id, "todo__write", &json!({ "items": items }).to_string())])
}

/// `@ag-ui/client`'s HttpAgent runs agents through `POST /v1/ag-ui`: a planning agent's run
/// (its plan as a state snapshot and JSON Patch deltas the client applies, its tool calls with
/// their results, its answer, its token usage), a reconnect that gets the conversation back as
/// a messages snapshot, an approval that ends a run with an interrupt which the next run
/// resumes to the end, and another user's thread id refused.
#[tokio::test]
async fn the_ag_ui_client_runs_agents_with_plans_and_interrupts() {
    let Some(clients) = rein_testkit::js_clients("the AG-UI client test", "@ag-ui/client") else {
        return;
    };
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-PLAN",
        vec![
            plan_call(
                "p1",
                json!([{"text": "multiply", "status": "in_progress"}, {"text": "report", "status": "pending"}]),
            ),
            calc("c1", "17*23"),
            plan_call(
                "p2",
                json!([{"text": "multiply", "status": "done"}, {"text": "report", "status": "done"}]),
            ),
            Canned::openai_text("17 × 23 = 391."),
        ],
    );
    e.model.route(
        "ROLE-CAREFUL",
        vec![calc("k1", "2+2"), Canned::openai_text("2 + 2 = 4.")],
    );
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    let other = e.token("bob").await;
    e.create_agents(
        &rein,
        &token,
        &[
            (
                "planner",
                json!({"system_role": "ROLE-PLAN: you plan.", "tools": ["todo", "calculator"], "approval": "auto-run"}),
            ),
            (
                "careful",
                json!({"system_role": "ROLE-CAREFUL: you calculate.", "tools": ["calculator"], "approval": "allow-list"}),
            ),
        ],
    )
    .await;
    let report = node_report(
        "agui.cjs",
        &[&clients.to_string_lossy(), &rein.base, &token],
        &[("OTHER_TOKEN", &other)],
    )
    .await;

    let plan = &report["plan"];
    let types: Vec<&str> = plan["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(types.first(), Some(&"RUN_STARTED"), "{report:#}");
    assert_eq!(types.get(1), Some(&"STATE_SNAPSHOT"), "{report:#}");
    assert_eq!(types.last(), Some(&"RUN_FINISHED"), "{report:#}");
    assert_eq!(plan["outcome"], "success", "{report:#}");
    assert_eq!(
        plan["state"]["todo"],
        json!([{"text": "multiply", "status": "done"}, {"text": "report", "status": "done"}]),
        "the client applied the snapshot and both deltas: {report:#}"
    );
    assert_eq!(plan["deltas"].as_array().unwrap().len(), 2, "{report:#}");
    assert_eq!(
        plan["deltas"][1],
        json!([
            {"op": "replace", "path": "/todo/0", "value": {"text": "multiply", "status": "done"}},
            {"op": "replace", "path": "/todo/1", "value": {"text": "report", "status": "done"}}
        ]),
        "{report:#}"
    );
    assert_eq!(
        plan["tools"],
        json!(["todo/write", "calculator/evaluate", "todo/write"]),
        "{report:#}"
    );
    assert!(
        plan["results"][1].as_str().unwrap().contains("391"),
        "{report:#}"
    );
    assert_eq!(plan["text"], json!(["17 × 23 = 391."]), "{report:#}");
    assert!(
        plan["usage"][0]["totalTokens"].as_u64().unwrap() > 0,
        "{report:#}"
    );
    for step in [
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
    ] {
        assert!(types.contains(&step), "{step} missing: {report:#}");
    }

    let reconnect = &report["reconnect"];
    assert_eq!(
        reconnect["types"],
        json!(["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]),
        "{report:#}"
    );
    let roles = reconnect["roles"].as_array().unwrap();
    assert_eq!(roles.first(), Some(&json!("user")), "{report:#}");
    assert_eq!(roles.last(), Some(&json!("assistant")), "{report:#}");
    assert!(roles.contains(&json!("tool")), "{report:#}");

    let parked = &report["parked"];
    assert_eq!(parked["outcome"], "interrupt", "{report:#}");
    assert_eq!(parked["interrupts"][0]["id"], "k1", "{report:#}");
    assert_eq!(
        parked["interrupts"][0]["reason"], "tool_approval",
        "{report:#}"
    );
    assert!(
        parked["interrupts"][0]["message"]
            .as_str()
            .unwrap()
            .contains("calculator/evaluate"),
        "{report:#}"
    );
    assert_eq!(parked["pending"], json!(["k1"]), "{report:#}");

    let resumed = &report["resumed"];
    assert_eq!(resumed["outcome"], "success", "{report:#}");
    assert!(
        !resumed["types"]
            .as_array()
            .unwrap()
            .contains(&json!("TOOL_CALL_START")),
        "the call the last run showed is not shown again: {report:#}"
    );
    assert!(
        resumed["results"][0].as_str().unwrap().contains('4'),
        "{report:#}"
    );
    assert_eq!(resumed["text"], json!(["2 + 2 = 4."]), "{report:#}");
    assert_eq!(report["stranger"], "404", "{report:#}");
    assert_eq!(e.model.requests().len(), 6, "no model call was repeated");
}

/// The AI SDK's `DefaultChatTransport` and `readUIMessageStream` drive `/v1/ui/chat`: a run
/// read until its tool's output and then dropped by the client goes on, and a reconnect by the
/// chat's id gets the message whole (the tool part, the reasoning, the answer, each once, and
/// the usage as a data part); once the run ended, a reconnect finds nothing (`204`). An
/// approval ends the stream asking; the answered approval (what `addToolApprovalResponse`
/// sends) continues it. The stop endpoint cancels a run whose model stalls: the stream ends
/// with `abort` and the operation is interrupted.
#[tokio::test]
async fn the_ai_sdk_reads_reconnects_approves_and_stops_chats() {
    let Some(clients) = rein_testkit::js_clients("the AI SDK client test", "ai") else {
        return;
    };
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-WRITER",
        vec![
            calc("w1", "6*7"),
            Canned::openai_stream(
                &[
                    json!({"reasoning_content": "Now I can answer."}),
                    json!({"content": "6 × 7 = 42."}),
                ],
                "stop",
            )
            .after(Duration::from_secs(5)),
        ],
    );
    e.model.route(
        "ROLE-CAREFUL",
        vec![calc("a1", "2+2"), Canned::openai_text("2 + 2 = 4.")],
    );
    e.model.route(
        "ROLE-STALL",
        vec![Canned::openai_text_then_stall("I am thinking")],
    );
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    e.create_agents(
        &rein,
        &token,
        &[
            (
                "writer",
                json!({"system_role": "ROLE-WRITER: you multiply.", "tools": ["calculator"], "approval": "auto-run"}),
            ),
            (
                "careful",
                json!({"system_role": "ROLE-CAREFUL: you calculate.", "tools": ["calculator"], "approval": "allow-list"}),
            ),
            ("staller", json!({"system_role": "ROLE-STALL: you think."})),
        ],
    )
    .await;
    let report = node_report(
        "ai_sdk.cjs",
        &[&clients.to_string_lossy(), &rein.base, &token],
        &[],
    )
    .await;

    let before = report["before"].as_array().unwrap();
    assert_eq!(before.first(), Some(&json!("start")), "{report:#}");
    assert_eq!(
        before.last(),
        Some(&json!("tool-output-available")),
        "{report:#}"
    );
    assert!(!before.contains(&json!("text-delta")), "{report:#}");
    let parts = report["resumed"]["parts"].as_array().unwrap();
    let of = |t: &str| parts.iter().filter(|p| p["type"] == t).collect::<Vec<_>>();
    assert_eq!(of("dynamic-tool").len(), 1, "{report:#}");
    assert_eq!(
        of("dynamic-tool")[0]["state"],
        "output-available",
        "{report:#}"
    );
    assert_eq!(of("dynamic-tool")[0]["output"], "42", "{report:#}");
    assert_eq!(of("reasoning").len(), 1, "{report:#}");
    assert_eq!(
        of("reasoning")[0]["text"],
        "Now I can answer.",
        "{report:#}"
    );
    assert_eq!(of("text").len(), 1, "{report:#}");
    assert_eq!(of("text")[0]["text"], "6 × 7 = 42.", "{report:#}");
    assert!(
        of("data-rein-usage")[0]["data"]["totalTokens"]
            .as_u64()
            .unwrap()
            > 0,
        "{report:#}"
    );
    assert_eq!(report["after_end"], "none", "{report:#}");

    let parked = report["parked"]["parts"].as_array().unwrap();
    let tool = parked.iter().find(|p| p["type"] == "dynamic-tool").unwrap();
    assert_eq!(tool["state"], "approval-requested", "{report:#}");
    assert_eq!(tool["approval"]["id"], "a1", "{report:#}");
    assert!(
        parked
            .iter()
            .any(|p| p["type"] == "data-rein-approval"
                && p["data"]["calls"][0]["toolCallId"] == "a1"),
        "{report:#}"
    );
    let continued = report["continued"]["parts"].as_array().unwrap();
    let tool = continued
        .iter()
        .find(|p| p["type"] == "dynamic-tool")
        .unwrap();
    assert_eq!(tool["state"], "output-available", "{report:#}");
    assert_eq!(tool["output"], "4", "{report:#}");
    assert!(
        continued
            .iter()
            .any(|p| p["type"] == "text" && p["text"] == "2 + 2 = 4."),
        "{report:#}"
    );

    let stop = &report["stop"];
    assert_eq!(stop["stopped"]["status"], 200, "{report:#}");
    assert_eq!(
        stop["chunks"].as_array().unwrap().last(),
        Some(&json!("abort")),
        "{report:#}"
    );
    let op = report["stop_operation"].as_str().unwrap();
    let detail = wait_status(&e, &rein, op, &token, "interrupted").await;
    assert_eq!(detail["operation"]["status"], "interrupted");
    assert_eq!(e.model.requests().len(), 5, "no model call was repeated");
}
