//! rein as an A2A server: the official A2A SDKs (`a2a-sdk` for Python in `.pyclients/`,
//! `@a2a-js/sdk` in `.jsclients/`, installed by scripts/test) against a real `rein serve`.

use super::*;

/// A JSON-RPC request to `path` as `token`, with `A2A-Version: 1.0` unless `version` says
/// otherwise (`None`: no header); the HTTP status and the body (a streamed answer: its first
/// event's data).
async fn rpc(
    e: &Env,
    rein: &Rein,
    path: &str,
    token: &str,
    version: Option<&str>,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value) {
    let mut req = e
        .http
        .post(format!("{}{path}", rein.base))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json");
    if let Some(v) = version {
        req = req.header("a2a-version", v);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.body(body.to_string()).send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .unwrap_or(&text);
    (
        status,
        serde_json::from_str(json).unwrap_or_else(|_| panic!("not JSON ({status}): {text}")),
    )
}

fn send(text: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": "r1", "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}
    })
}

/// The Python SDK reads the public and per-agent cards, runs the default agent, streams a task
/// that asks for an approval and goes on once given, waits on another while a push
/// configuration hears the rest (a rejection's reason reaching the model), answers a question
/// with text, cancels a waiting task (a second cancel and a message to it refused), picks a
/// dropped stream up again by the task's id, continues a conversation by its context, reads and
/// lists tasks; another user's task and agent are not found and a bad token refused. Then, raw: a missing
/// version header, an unknown method, a file part, a hidden agent, a foreign page, a read-only
/// token, the extended card and a user past their cap (a rejected task) are each answered as
/// A2A says.
#[tokio::test]
async fn the_a2a_python_sdk_runs_tasks_through_approvals_questions_streams_and_pushes() {
    let Some(python) = rein_testkit::python_with("the A2A Python SDK against rein", "a2a.client")
    else {
        return;
    };
    let question = json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    let e = env(vec![Canned::openai_text("Hello from rein.")]).await;
    e.model.route(
        "ROLE-CAREFUL",
        vec![
            calc("k1", "2+2"),
            Canned::openai_text("2 + 2 = 4."),
            calc("k2", "3+3"),
            Canned::openai_text("I did not add them: not now."),
            Canned::openai_tools(&[("q1", "ask_user__ask", &question.to_string())]),
            Canned::openai_text("Deploying."),
            calc("k3", "4+4"),
            Canned::openai_text("5 + 5 = 10.").after(std::time::Duration::from_secs(3)),
            Canned::openai_text("Still 4."),
        ],
    );
    let rein = e.start_with(&["--allow-private-hooks"], &[]).await;
    let token = e.token("alice").await;
    let other = e.token("bob").await;
    e.create_agents(
        &rein,
        &token,
        &[
            (
                "careful",
                json!({"system_role": "ROLE-CAREFUL: you calculate.", "tools": ["calculator", "ask_user"], "approval": "allow-list", "expose": true}),
            ),
            (
                "hidden",
                json!({"system_role": "ROLE-HIDDEN", "tools": ["calculator"]}),
            ),
        ],
    )
    .await;
    let run = Command::new(&python)
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/a2a_sdk.py"))
        .args([&rein.base, &token])
        .env("OTHER_TOKEN", &other)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let r: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "no report from a2a_sdk.py:\n{stdout}\n{}",
            String::from_utf8_lossy(&run.stderr)
        )
    });
    assert!(
        r.get("error").is_none(),
        "{}",
        r["error"].as_str().unwrap_or_default()
    );

    // The cards.
    let public = &r["public"];
    assert_eq!(public["name"], "rein", "{public:#}");
    assert_eq!(
        public["supportedInterfaces"][0],
        json!({"url": format!("{}/a2a", rein.base), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"})
    );
    assert_eq!(public["capabilities"]["streaming"], true);
    assert_eq!(public["capabilities"]["pushNotifications"], true);
    assert_eq!(
        public["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let card = &r["card"];
    assert_eq!(card["name"], "careful");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{}/a2a/careful", rein.base)
    );
    assert_eq!(card["description"], "ROLE-CAREFUL: you calculate.");
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(
        skills.contains(&"tool:calculator") && !skills.iter().any(|s| s.contains("shell")),
        "the agent's tools, and only them: {skills:?}"
    );

    assert_eq!(r["default"]["state"], "TASK_STATE_COMPLETED", "{r:#}");
    assert_eq!(r["default"]["answer"], "Hello from rein.");

    // A streamed approval.
    let asked = r["asked"].as_array().unwrap();
    assert_eq!(asked[0]["kind"], "task", "{r:#}");
    let last = asked.last().unwrap();
    assert_eq!(last["state"], "TASK_STATE_INPUT_REQUIRED", "{r:#}");
    let ask = &last["message"]["parts"][1]["data"];
    assert_eq!(ask["kind"], "approval", "{r:#}");
    assert_eq!(ask["toolCallId"], "k1");
    assert_eq!(ask["arguments"], json!({"expression": "2+2"}));
    let approved = r["approved"].as_array().unwrap();
    let n = approved.len();
    assert!(n >= 2, "{r:#}");
    assert_eq!(
        approved[n - 2],
        json!({"kind": "artifact", "text": "2 + 2 = 4.", "last": true}),
        "{r:#}"
    );
    assert_eq!(approved[n - 1]["state"], "TASK_STATE_COMPLETED");

    // A blocking wait, a push configuration, a rejection with its reason.
    assert_eq!(r["parked"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r:#}");
    assert_eq!(r["pushConfig"]["token"], "tok-1");
    assert_eq!(r["pushConfigs"]["configs"].as_array().unwrap().len(), 1);
    assert_eq!(r["rejected"]["state"], "TASK_STATE_COMPLETED", "{r:#}");
    assert_eq!(r["rejected"]["answer"], "I did not add them: not now.");
    assert!(
        e.model
            .requests()
            .iter()
            .any(|q| q.body.to_string().contains("not now")),
        "the model reads the rejection's reason"
    );
    let pushed = r["pushed"].as_array().unwrap();
    assert!(
        pushed.iter().all(|p| p["token"] == "tok-1"),
        "every push carries the configuration's token: {pushed:#?}"
    );
    assert!(
        pushed.iter().any(
            |p| p["body"]["artifactUpdate"]["artifact"]["parts"][0]["text"]
                == "I did not add them: not now."
        ),
        "{pushed:#?}"
    );
    assert_eq!(
        pushed.last().unwrap()["body"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{pushed:#?}"
    );

    // A question answered with text.
    assert_eq!(r["question"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r:#}");
    let q = &r["question"]["status"]["parts"][1]["data"];
    assert_eq!(q["kind"], "question");
    assert_eq!(q["options"][0], json!({"key": "yes", "label": "Deploy"}));
    assert_eq!(r["answered"]["answer"], "Deploying.", "{r:#}");

    // Cancelled.
    assert_eq!(r["cancelled"]["state"], "TASK_STATE_CANCELED", "{r:#}");
    assert!(
        r["cancelAgain"]
            .as_str()
            .unwrap()
            .contains("TaskNotCancelable"),
        "{r:#}"
    );
    assert!(
        r["toEnded"]
            .as_str()
            .unwrap()
            .contains("UnsupportedOperation"),
        "{r:#}"
    );

    // A dropped stream picked up again.
    let opening = r["opening"]["state"].as_str().unwrap();
    assert!(
        opening == "TASK_STATE_WORKING" || opening == "TASK_STATE_SUBMITTED",
        "{r:#}"
    );
    let resumed = r["resumed"].as_array().unwrap();
    assert_eq!(resumed[0]["kind"], "task", "{r:#}");
    assert!(resumed.iter().any(|i| i["text"] == "5 + 5 = 10."), "{r:#}");
    assert_eq!(resumed.last().unwrap()["state"], "TASK_STATE_COMPLETED");
    assert!(
        r["subscribeEnded"]
            .as_str()
            .unwrap()
            .contains("UnsupportedOperation"),
        "{r:#}"
    );

    // The conversation goes on; reading and listing.
    assert_eq!(r["continued"]["contextId"], r["firstContext"], "{r:#}");
    assert_eq!(r["continued"]["answer"], "Still 4.");
    let got = &r["got"];
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["history"][0]["role"], "ROLE_USER");
    assert_eq!(got["history"][0]["parts"][0]["text"], "Add 2 and 2.");
    assert_eq!(got["history"][1]["parts"][0]["text"], "2 + 2 = 4.");
    assert_eq!(got["artifacts"][0]["artifactId"], "answer");
    assert_eq!(r["listedTotal"], 2, "{r:#}");
    assert_eq!(r["listed"][0]["answer"], "Still 4.", "newest first: {r:#}");
    assert_eq!(r["paged"]["n"], 1);
    assert_eq!(r["paged"]["next"], "1");
    assert!(r["paged"]["total"].as_u64().unwrap() >= 5, "{r:#}");
    assert!(
        r["otherUser"].as_str().unwrap().contains("TaskNotFound"),
        "{r:#}"
    );
    assert!(
        r["otherUsersAgent"].as_str().unwrap().contains("404"),
        "another user's agent is not found: {r:#}"
    );
    assert!(r["badToken"].as_str().unwrap().contains("401"), "{r:#}");

    // Raw requests.
    let (_, unversioned) = rpc(&e, &rein, "/a2a", &token, None, &[], send("hi")).await;
    assert_eq!(unversioned["error"]["code"], -32009, "{unversioned}");
    let (_, unknown) = rpc(
        &e,
        &rein,
        "/a2a",
        &token,
        Some("1.0"),
        &[],
        json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {}}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["id"], 7);
    let (_, file) = rpc(
        &e,
        &rein,
        "/a2a",
        &token,
        Some("1.0"),
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://example.com/a.png"}]}}}),
    )
    .await;
    assert_eq!(file["error"]["code"], -32005, "{file}");
    let (hidden, _) = rpc(
        &e,
        &rein,
        "/a2a/hidden",
        &token,
        Some("1.0"),
        &[],
        send("hi"),
    )
    .await;
    assert_eq!(hidden, 404);
    let (status, _) = e
        .call(
            &rein,
            "GET",
            "/a2a/hidden/.well-known/agent-card.json",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (foreign, _) = rpc(
        &e,
        &rein,
        "/a2a",
        &token,
        Some("1.0"),
        &[("origin", "http://evil.example")],
        send("hi"),
    )
    .await;
    assert_eq!(foreign, 403);
    let reader = e
        .token_with(&["token", "create", "--user", "alice", "--scope", "read"])
        .await;
    let (scoped, body) = rpc(&e, &rein, "/a2a", &reader, Some("1.0"), &[], send("hi")).await;
    assert_eq!(scoped, 403, "{body}");
    let first_task = r["asked"][0]["id"].as_str().unwrap();
    let (_, read) = rpc(
        &e,
        &rein,
        "/a2a",
        &reader,
        Some("1.0"),
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": first_task}}),
    )
    .await;
    assert_eq!(
        read["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{read}"
    );

    let (_, extended) = rpc(
        &e,
        &rein,
        "/a2a/careful",
        &token,
        Some("1.0"),
        &[],
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetExtendedAgentCard"}),
    )
    .await;
    assert_eq!(extended["result"]["name"], "careful", "{extended}");
    assert_eq!(
        extended["result"]["supportedInterfaces"][0]["url"],
        format!("{}/a2a/careful", rein.base)
    );

    let carol = e.token("carol").await;
    let out = e
        .command(&["user", "caps", "carol", "--daily-tokens", "0"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, capped) = rpc(&e, &rein, "/a2a", &carol, Some("1.0"), &[], send("hi")).await;
    let status = &capped["result"]["task"]["status"];
    assert_eq!(status["state"], "TASK_STATE_REJECTED", "{capped}");
    assert_eq!(
        status["message"]["metadata"]["code"], "spend_cap_reached",
        "{capped}"
    );
    let (_, theirs) = e
        .call(&rein, "GET", "/v1/operations", Some(&carol), None)
        .await;
    assert_eq!(theirs, json!([]), "nothing ran");
}

/// The JavaScript SDK reads the exposed agent's card, sends a message and waits for its task,
/// streams another on the same conversation, reads the first back and lists both; a message
/// whose push URL reaches this machine is refused before anything runs.
#[tokio::test]
async fn the_a2a_javascript_sdk_sends_streams_reads_and_lists() {
    let Some(clients) =
        rein_testkit::js_clients("the A2A JavaScript SDK against rein", "@a2a-js/sdk")
    else {
        return;
    };
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-HELPER",
        vec![
            calc("h1", "17*23"),
            Canned::openai_text("17 × 23 = 391."),
            Canned::openai_text("Still 391."),
        ],
    );
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    e.create_agents(
        &rein,
        &token,
        &[(
            "helper",
            json!({"system_role": "ROLE-HELPER: you calculate.", "tools": ["calculator"], "approval": "auto-run", "expose": true}),
        )],
    )
    .await;
    let r = node_report(
        "a2a.cjs",
        &[&clients.to_string_lossy(), &rein.base, &token],
        &[],
    )
    .await;
    assert_eq!(r["sent"]["state"], "TASK_STATE_COMPLETED", "{r:#}");
    assert_eq!(r["sent"]["answer"], "17 × 23 = 391.");
    let streamed = r["streamed"].as_array().unwrap();
    assert_eq!(streamed[0]["kind"], "task", "{r:#}");
    assert!(streamed.iter().any(|i| i["text"] == "Still 391."), "{r:#}");
    assert_eq!(streamed.last().unwrap()["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        r["got"]["history"],
        json!([
            ["ROLE_USER", "What is 17 × 23?"],
            ["ROLE_AGENT", "17 × 23 = 391."]
        ]),
        "{r:#}"
    );
    assert_eq!(
        r["listed"],
        json!(["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"])
    );

    // Without --allow-private-hooks a push URL on this machine is refused, and the message
    // with it starts nothing.
    let (_, before) = e
        .call(&rein, "GET", "/v1/operations", Some(&token), None)
        .await;
    let (_, refused) = rpc(
        &e,
        &rein,
        "/a2a/helper",
        &token,
        Some("1.0"),
        &[],
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "Again?"}]},
            "configuration": {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/hook"}}
        }}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("internal address"),
        "{refused}"
    );
    let (_, after) = e
        .call(&rein, "GET", "/v1/operations", Some(&token), None)
        .await;
    assert_eq!(before, after, "nothing started");
}
