//! rein as an MCP server: the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`,
//! installed by scripts/test into `.jsclients/`) against `/mcp` on a real `rein serve`.

use super::*;

/// The MCP SDK's install, and a test environment whose model answers `ROLE-HELPER` agents
/// 17 × 23 with the calculator; `None` after reporting `test` skipped without the SDK.
async fn sdk_and_helper(test: &str) -> Option<(std::path::PathBuf, Env)> {
    let clients = rein_testkit::js_clients(test, "@modelcontextprotocol/sdk")?;
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-HELPER",
        vec![calc("h1", "17*23"), Canned::openai_text("17 × 23 = 391.")],
    );
    Some((clients, e))
}

/// The SDK lists the caller's default and exposed agents as tools (not a hidden one), runs
/// one to its answer with progress notifications, gets "waiting" for a call that needs an
/// approval it cannot be asked for, approves and rejects (with a reason the model reads)
/// through elicitation (a sub-agent's call too), reads recent operations as resources; a
/// hidden agent, a missing prompt, another user's conversation, a bad token and a foreign
/// Origin are refused.
#[tokio::test]
async fn the_mcp_sdk_runs_exposed_agents_with_progress_and_approvals() {
    let Some((clients, e)) = sdk_and_helper("the MCP SDK against rein's MCP server").await else {
        return;
    };
    e.model.route(
        "ROLE-CAREFUL",
        vec![
            calc("k1", "2+2"),
            calc("k2", "3+3"),
            Canned::openai_text("3 + 3 = 6."),
            calc("k3", "4+4"),
            Canned::openai_text("I did not add them: not now."),
            calc("k4", "5+5"),
            Canned::openai_text("5 + 5 = 10."),
        ],
    );
    e.model.route(
        "ROLE-LEAD",
        vec![
            delegate("Add", "Add 5 and 5.", "careful"),
            Canned::openai_text("The team says 10."),
        ],
    );
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    let other = e.token("bob").await;
    e.create_agents(
        &rein,
        &token,
        &[
            (
                "helper",
                json!({"system_role": "ROLE-HELPER: you calculate.", "tools": ["calculator"], "approval": "auto-run", "expose": true}),
            ),
            (
                "careful",
                json!({"system_role": "ROLE-CAREFUL: you calculate.", "tools": ["calculator"], "approval": "allow-list", "expose": true}),
            ),
            (
                "lead",
                json!({"system_role": "ROLE-LEAD: you delegate.", "tools": ["agents", "calculator"], "approval": "allow-list", "allow": ["agents"], "expose": true}),
            ),
            (
                "hidden",
                json!({"system_role": "ROLE-HIDDEN", "tools": ["calculator"]}),
            ),
        ],
    )
    .await;
    let report = node_report(
        "mcp.cjs",
        &[&clients.to_string_lossy(), &rein.base, &token],
        &[("OTHER_TOKEN", &other)],
    )
    .await;

    assert_eq!(report["server"]["name"], "rein", "{report:#}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        tools,
        ["run", "run_careful", "run_helper", "run_lead"],
        "{report:#}"
    );
    assert_eq!(report["tools"][0]["required"], json!(["prompt"]));

    let answered = &report["answered"];
    assert_eq!(answered["text"], "17 × 23 = 391.", "{report:#}");
    assert_eq!(answered["isError"], false);
    assert_eq!(answered["structured"]["status"], "done", "{report:#}");
    let progress = report["progress"].as_array().unwrap();
    assert!(
        progress.len() >= 3 && progress.windows(2).all(|w| w[0].as_f64() < w[1].as_f64()),
        "progress rises with each step: {report:#}"
    );

    let waiting = &report["waiting"];
    assert!(
        waiting["text"]
            .as_str()
            .unwrap()
            .contains("waits for an approval"),
        "{report:#}"
    );
    assert_eq!(waiting["structured"]["status"], "waiting_for_human");
    let parked = waiting["structured"]["operation_id"].as_str().unwrap();
    let (status, detail) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{parked}"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        detail["operation"]["status"], "waiting_for_human",
        "it stays parked, resumable: {detail}"
    );

    assert!(
        report["hidden"]["thrown"]
            .as_str()
            .unwrap_or_default()
            .contains("no tool `run_hidden`"),
        "{report:#}"
    );
    assert!(
        report["noPrompt"]["thrown"]
            .as_str()
            .unwrap_or_default()
            .contains("prompt"),
        "{report:#}"
    );

    assert!(
        report["longPrompt"]["thrown"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 100000 characters"),
        "{report:#}"
    );
    let answered_id = answered["structured"]["operation_id"].as_str().unwrap();
    assert!(
        report["resources"]
            .as_array()
            .unwrap()
            .contains(&json!(format!("rein://operations/{answered_id}"))),
        "{report:#}"
    );
    assert_eq!(report["read"]["answer"], "17 × 23 = 391.", "{report:#}");

    assert_eq!(report["approved"]["text"], "3 + 3 = 6.", "{report:#}");
    assert_eq!(
        report["rejected"]["text"], "I did not add them: not now.",
        "{report:#}"
    );
    assert_eq!(
        report["delegated"]["text"], "The team says 10.",
        "{report:#}"
    );
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "{report:#}");
    assert!(
        asked[2].as_str().unwrap().contains("5+5"),
        "the sub-agent's call was asked: {report:#}"
    );
    assert!(
        asked[0].as_str().unwrap().contains("calculator"),
        "{report:#}"
    );
    let rejected = e
        .model
        .requests()
        .into_iter()
        .find_map(|r| {
            r.body["messages"].as_array().and_then(|ms| {
                ms.iter()
                    .find(|m| m["tool_call_id"] == "k3")
                    .and_then(|m| m["content"].as_str().map(str::to_owned))
            })
        })
        .unwrap_or_default();
    assert!(
        rejected.contains("not now"),
        "the reason reached the model: {rejected}"
    );

    assert!(
        report["foreignTopic"]["thrown"]
            .as_str()
            .unwrap_or_default()
            .contains("no topic"),
        "{report:#}"
    );
    assert_eq!(report["otherTools"], json!(["run"]), "{report:#}");
    assert!(
        report["badToken"]
            .as_str()
            .unwrap()
            .contains("unknown, expired or revoked token"),
        "{report:#}"
    );
    assert_eq!(report["foreignOrigin"]["status"], 403, "{report:#}");
    assert_eq!(
        report["foreignOrigin"]["body"]["error"]["code"], "forbidden_origin",
        "{report:#}"
    );
}

/// `rein mcp`: the SDK spawns it over stdio on the database, as its local user: the exposed
/// agents (made with `rein agent create --expose true`) are its tools, one runs to its answer
/// with progress, a call that needs approval is approved by elicitation, the operations are
/// resources, and nothing but the protocol is written to stdout.
#[tokio::test]
async fn the_mcp_sdk_spawns_rein_mcp_over_stdio() {
    let Some((clients, e)) = sdk_and_helper("the MCP SDK spawning `rein mcp`").await else {
        return;
    };
    e.model.route(
        "ROLE-CAREFUL",
        vec![calc("k1", "3+3"), Canned::openai_text("3 + 3 = 6.")],
    );
    for (name, role, approval, expose) in [
        ("helper", "ROLE-HELPER: you calculate.", "auto-run", "true"),
        (
            "careful",
            "ROLE-CAREFUL: you calculate.",
            "allow-list",
            "true",
        ),
        ("hidden", "ROLE-HIDDEN", "auto-run", "false"),
    ] {
        let out = e
            .command(&[
                "agent",
                "create",
                name,
                "--system",
                role,
                "--tools",
                "calculator",
                "--approval",
                approval,
                "--expose",
                expose,
            ])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let spawn = spawned(&e, &["mcp"]);
    let report = node_report(
        "mcp_stdio.cjs",
        &[&clients.to_string_lossy()],
        &[("REIN_MCP", &spawn.to_string())],
    )
    .await;
    assert_eq!(report["server"]["name"], "rein", "{report:#}");
    assert_eq!(
        report["tools"],
        json!(["run", "run_careful", "run_helper"]),
        "{report:#}"
    );
    assert_eq!(report["answered"]["text"], "17 × 23 = 391.", "{report:#}");
    assert!(
        report["progress"].as_array().unwrap().len() >= 3,
        "{report:#}"
    );
    assert_eq!(report["approved"], "3 + 3 = 6.", "{report:#}");
    assert_eq!(report["asked"].as_array().unwrap().len(), 1, "{report:#}");
    let answered = report["answered"]["structured"]["operation_id"]
        .as_str()
        .unwrap();
    assert!(
        report["resources"]
            .as_array()
            .unwrap()
            .contains(&json!(format!("rein://operations/{answered}"))),
        "{report:#}"
    );
    assert_eq!(report["stderrSaysListening"], false, "no HTTP listener");
    // The operations are the local user's, in the database like any other.
    let out = e.command(&["op", "list", "--json"]).output().await.unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(answered),
        "{out:?}"
    );
}
