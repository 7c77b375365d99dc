//! rein as an MCP server: the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`,
//! installed by scripts/test into `.jsclients/`) against `/mcp` on a real `rein serve`.

use super::*;

/// The SDK lists the caller's default and exposed agents as tools (not a hidden one), runs
/// one to its answer with progress notifications, gets "waiting" for a call that needs an
/// approval it cannot be asked for, approves and rejects (with a reason the model reads)
/// through elicitation, reads recent operations as resources; a hidden agent, a missing
/// prompt, another user's conversation, a bad token and a foreign Origin are refused.
#[tokio::test]
async fn the_mcp_sdk_runs_exposed_agents_with_progress_and_approvals() {
    let Some(clients) = rein_testkit::js_clients(
        "the MCP SDK against rein's MCP server",
        "@modelcontextprotocol/sdk",
    ) else {
        return;
    };
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-HELPER",
        vec![calc("h1", "17*23"), Canned::openai_text("17 × 23 = 391.")],
    );
    e.model.route(
        "ROLE-CAREFUL",
        vec![
            calc("k1", "2+2"),
            calc("k2", "3+3"),
            Canned::openai_text("3 + 3 = 6."),
            calc("k3", "4+4"),
            Canned::openai_text("I did not add them: not now."),
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
                "hidden",
                json!({"system_role": "ROLE-HIDDEN", "tools": ["calculator"]}),
            ),
        ],
    )
    .await;
    let run = Command::new("node")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mcp.cjs"))
        .args([&clients.to_string_lossy(), rein.base.as_str(), &token])
        .env("OTHER_TOKEN", &other)
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
            panic!(
                "no report from mcp.cjs:\n{stdout}\n{}",
                String::from_utf8_lossy(&run.stderr)
            )
        });
    assert!(report.get("error").is_none(), "{report:#}");

    assert_eq!(report["server"]["name"], "rein", "{report:#}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["run", "run_careful", "run_helper"], "{report:#}");
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
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{report:#}");
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
