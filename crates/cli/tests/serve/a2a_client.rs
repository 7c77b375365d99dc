//! rein as an A2A client: a remote agent registered by its card (`rein agent create NAME
//! --a2a-url URL`) and delegated to. The remote agent is another rein, a real `rein serve`
//! with its A2A door; the delegating rein is the CLI on its own database.

use super::*;

/// The delegating rein's own database (the remote one is the test's).
fn local_db(e: &Env) -> String {
    e.dir.join("local.db").display().to_string()
}

/// `rein ARGS` on the delegating rein's database, with the remote agent's token in
/// `HELPER_TOKEN`.
fn local_cmd(e: &Env, token: &str, args: &[&str]) -> Command {
    let mut c = e.command_on(&local_db(e), args);
    c.env("HELPER_TOKEN", token);
    c
}

async fn local(e: &Env, token: &str, args: &[&str]) -> (i32, String, String) {
    shaped(local_cmd(e, token, args).output().await.unwrap())
}

/// The operations of `agent` on the remote server, as its owner lists them.
async fn remote_runs(e: &Env, rein: &Rein, token: &str, agent: &str) -> Vec<Value> {
    let (status, list) = e
        .call(rein, "GET", "/v1/operations?limit=50", Some(token), None)
        .await;
    assert_eq!(status, 200, "{list}");
    let items = list["operations"]
        .as_array()
        .or_else(|| list.as_array())
        .cloned()
        .unwrap_or_default();
    items.into_iter().filter(|o| o["agent"] == agent).collect()
}

/// A remote rein serving agent `remote` (role `ROLE-REMOTE`) to alice; her token.
async fn remote_rein(e: &Env, config: Value) -> (Rein, String) {
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    e.create_agents(&rein, &token, &[("remote", config)]).await;
    (rein, token)
}

/// The root operation the delegating rein ran (its only one without a parent).
async fn local_root(e: &Env, token: &str) -> String {
    let (code, out, err) = local(e, token, &["--json", "op", "list"]).await;
    assert_eq!(code, 0, "{err}");
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|o| o["parent_operation"].is_null() && o["agent"] == "boss")
        .and_then(|o| o["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no root operation in {out}"))
}

/// On the delegating rein: agent `helper`, the remote agent at `url` (its token in
/// `HELPER_TOKEN`, a private address allowed, `extra` flags), and agent `boss` (`ROLE-BOSS`),
/// which delegates.
async fn helper_and_boss(e: &Env, token: &str, url: &str, extra: &[&str]) {
    let mut args = vec![
        "agent",
        "create",
        "helper",
        "--a2a-url",
        url,
        "--token-env",
        "HELPER_TOKEN",
        "--a2a-private",
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = local(e, token, &args).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = local(
        e,
        token,
        &[
            "agent",
            "create",
            "boss",
            "--system",
            "ROLE-BOSS: you delegate.",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
}

/// The request the parent's (`ROLE-BOSS`) model got after the delegation.
fn boss_after_delegating(e: &Env) -> rein_model::testing::Recorded {
    e.model
        .requests()
        .into_iter()
        .filter(|r| r.system_text().contains("ROLE-BOSS"))
        .nth(1)
        .expect("the parent's model was asked again")
}

/// Registration reads and checks the card (a private address only with the flag, an address
/// without a card refused naming it); delegating sends the task to the remote rein, whose
/// approval comes back as the sub-agent's question on the root; answering it sends the
/// decision, and the remote answer reaches the parent's model; one remote task in all.
#[tokio::test]
async fn a_remote_rein_agent_is_delegated_to_and_its_approval_is_asked_on_the_root() {
    let e = env(vec![]).await;
    e.model.route(
        "ROLE-REMOTE",
        vec![calc("k1", "6*7"), Canned::openai_text("The answer is 42.")],
    );
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("ask helper", "What is 6*7?", "helper"),
            Canned::openai_text("The helper says 42."),
        ],
    );
    let (rein, token) = remote_rein(
        &e,
        json!({"system_role": "ROLE-REMOTE: you calculate.", "tools": ["calculator"], "approval": "allow-list", "expose": true}),
    )
    .await;
    let url = format!("{}/a2a/remote", rein.base);
    let (code, _, err) = local(
        &e,
        &token,
        &["agent", "create", "helper", "--a2a-url", &url],
    )
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("127.0.0.1") && err.contains("--a2a-private"),
        "{err}"
    );
    // A card for its users only, fetched without a token; an agent that is not there.
    let (code, _, err) = local(
        &e,
        &token,
        &[
            "agent",
            "create",
            "helper",
            "--a2a-url",
            &url,
            "--a2a-private",
        ],
    )
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("A2A agent card at") && err.contains("401") && err.contains("--token-env"),
        "{err}"
    );
    let nobody = format!("{}/a2a/nobody", rein.base);
    let (code, _, err) = local(
        &e,
        &token,
        &[
            "agent",
            "create",
            "helper",
            "--a2a-url",
            &nobody,
            "--a2a-private",
            "--token-env",
            "HELPER_TOKEN",
        ],
    )
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("A2A agent card at") && err.contains("404"),
        "{err}"
    );
    helper_and_boss(&e, &token, &url, &[]).await;
    let (_, out, _) = local(&e, &token, &["--json", "agent", "show", "helper"]).await;
    let shown: Value = serde_json::from_str(out.trim()).unwrap();
    let config = &shown["config"];
    assert_eq!(config["surface"], "a2a:helper", "{shown}");
    assert_eq!(config["a2a"]["card"]["name"], "remote");
    assert_eq!(config["a2a"]["card"]["endpoint"], url);
    assert!(
        config["a2a"]["card"]["skills"]
            .to_string()
            .contains("tool:calculator"),
        "{shown}"
    );
    assert!(
        config["a2a"].get("token").is_none() && !out.contains(&token),
        "the token is not stored"
    );
    let (code, out, _) = local(&e, &token, &["agent", "list"]).await;
    assert_eq!(code, 0);
    assert!(out.contains(&format!("remote: {url}")), "{out}");

    let (code, _, err) = local(&e, &token, &["run", "--agent", "boss", "What is 6*7?"]).await;
    assert_eq!(code, 3, "waiting for the remote agent's approval: {err}");
    assert!(
        err.contains("The remote agent `helper` asks to run: calculator"),
        "{err}"
    );
    let root = local_root(&e, &token).await;
    // An answer that fits no option is refused and takes nothing: the question stays open.
    let (code, _, err) = local(&e, &token, &["answer", &root, "--option", "maybe"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("`maybe` is not one of the options: approve, reject"),
        "{err}"
    );
    let (code, out, err) = local(&e, &token, &["answer", &root, "--option", "approve"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("The helper says 42."), "{out}\n{err}");

    let requests = e.model.requests();
    let remote_calls: Vec<_> = requests
        .iter()
        .filter(|r| r.system_text().contains("ROLE-REMOTE"))
        .collect();
    assert_eq!(remote_calls.len(), 2, "the remote model ran twice");
    assert_eq!(
        remote_calls[1].tool_result("k1"),
        "42",
        "the approved call ran"
    );
    let boss = requests
        .iter()
        .filter(|r| r.system_text().contains("ROLE-BOSS"))
        .nth(1)
        .expect("the parent's model was asked again");
    assert!(
        boss.tool_result("d1").contains("The answer is 42."),
        "{}",
        boss.tool_result("d1")
    );
    let runs = remote_runs(&e, &rein, &token, "remote").await;
    assert_eq!(runs.len(), 1, "one remote task: {runs:?}");
    assert_eq!(runs[0]["status"], "done");

    // The sub-agent's own record: its question, the remote answer as its model's result, its end.
    let (_, shown, _) = local(&e, &token, &["--json", "op", "show", &root]).await;
    let shown: Value = serde_json::from_str(shown.trim()).unwrap();
    let child = shown["sub_agents"][0]["id"].as_str().unwrap().to_owned();
    let (code, events, err) = local(&e, &token, &["--json", "op", "events", &child]).await;
    assert_eq!(code, 0, "{err}");
    let kinds: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|ev| ev["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("no {k} event: {kinds:?}"))
    };
    assert!(at("human_approve_required") < at("llm_result"), "{kinds:?}");
    assert!(at("llm_result") < at("done"), "{kinds:?}");
    assert!(events.contains("The answer is 42."), "{events}");
}

/// A remote rein whose agent answers after 2 s, and a parent (`ROLE-BOSS`) that delegates
/// to `helper` once and then says what it heard: the test's environment, the remote server,
/// alice's token there.
async fn slow_remote() -> (Env, Rein, String) {
    let e = env(vec![]).await;
    e.model.route(
        "ROLE-REMOTE",
        vec![Canned::openai_text("Slow but sure: 42.").after(Duration::from_secs(2))],
    );
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("ask helper", "What is 6*7?", "helper"),
            Canned::openai_text("The helper says 42."),
        ],
    );
    let (rein, token) = remote_rein(
        &e,
        json!({"system_role": "ROLE-REMOTE: you answer.", "tools": [], "expose": true}),
    )
    .await;
    (e, rein, token)
}

/// Rejecting the remote agent's approval on the root sends its decision back: the remote
/// model reads the rejection and answers without running the call.
#[tokio::test]
async fn rejecting_a_remote_approval_on_the_root_reaches_the_remote_model() {
    let e = env(vec![]).await;
    e.model.route(
        "ROLE-REMOTE",
        vec![
            calc("k1", "6*7"),
            Canned::openai_text("I did not calculate."),
        ],
    );
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("ask helper", "What is 6*7?", "helper"),
            Canned::openai_text("The helper declined."),
        ],
    );
    let (rein, token) = remote_rein(
        &e,
        json!({"system_role": "ROLE-REMOTE: you calculate.", "tools": ["calculator"], "approval": "allow-list", "expose": true}),
    )
    .await;
    let url = format!("{}/a2a/remote", rein.base);
    helper_and_boss(&e, &token, &url, &[]).await;
    let (code, _, err) = local(&e, &token, &["run", "--agent", "boss", "What is 6*7?"]).await;
    assert_eq!(code, 3, "{err}");
    let root = local_root(&e, &token).await;
    let (code, out, err) = local(&e, &token, &["reject", &root, "--reason", "not now"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("The helper declined."), "{out}\n{err}");
    let remote_calls: Vec<_> = e
        .model
        .requests()
        .into_iter()
        .filter(|r| r.system_text().contains("ROLE-REMOTE"))
        .collect();
    assert_eq!(remote_calls.len(), 2, "the remote model was asked again");
    assert!(
        remote_calls[1].tool_result("k1").contains("reject"),
        "{}",
        remote_calls[1].tool_result("k1")
    );
    assert!(
        boss_after_delegating(&e)
            .tool_result("d1")
            .contains("I did not calculate."),
        "the remote answer reached the parent"
    );
}

/// After a crash: the slow remote agent got the task once, its model answered once, and the
/// parent's model read its answer.
async fn answered_once(e: &Env, remote: &Rein, token: &str) {
    let runs = remote_runs(e, remote, token, "remote").await;
    assert_eq!(runs.len(), 1, "the task was not sent again: {runs:?}");
    assert_eq!(runs[0]["status"], "done");
    let remote_calls = e
        .model
        .requests()
        .iter()
        .filter(|r| r.system_text().contains("ROLE-REMOTE"))
        .count();
    assert_eq!(remote_calls, 1, "the remote agent answered once");
    let boss = boss_after_delegating(e);
    assert!(
        boss.tool_result("d1").contains("Slow but sure: 42."),
        "{}",
        boss.tool_result("d1")
    );
}

/// The delegating process is killed with SIGKILL once it has sent the task, before it kept
/// the remote task's id: resumed, it finds the task by its context instead of sending it
/// again, follows it to its answer and hands it to the parent.
#[tokio::test]
async fn a_delegation_killed_after_sending_finds_its_remote_task_instead_of_sending_again() {
    let (e, rein, token) = slow_remote().await;
    let url = format!("{}/a2a/remote", rein.base);
    helper_and_boss(&e, &token, &url, &[]).await;

    let mut run = local_cmd(&e, &token, &["run", "--agent", "boss", "What is 6*7?"]);
    run.env("REIN_TEST_PAUSE_AT", "a2a:sent")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = run.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let paused = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("REIN_TEST_PAUSED") {
                return true;
            }
        }
        false
    };
    assert!(
        tokio::time::timeout(Duration::from_secs(60), paused)
            .await
            .unwrap_or(false),
        "the run paused after sending"
    );
    child.kill().await.unwrap(); // SIGKILL
    assert_eq!(remote_runs(&e, &rein, &token, "remote").await.len(), 1);

    let root = local_root(&e, &token).await;
    let (code, out, err) = local(&e, &token, &["op", "resume", &root]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let (_, shown, _) = local(&e, &token, &["--json", "op", "show", &root]).await;
    let shown: Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["operation"]["status"], "done", "{shown}");
    let child = &shown["sub_agents"][0];
    assert_eq!(child["status"], "done", "{shown}");
    assert!(
        child["total_tokens"].as_u64().unwrap_or(0) > 0,
        "the remote task's reported usage is the child's: {child}"
    );
    answered_once(&e, &rein, &token).await;
}

/// The delegating rein is a server: a remote agent registered through the API (the card read
/// by the server, a private address only under `--allow-private-hooks`), delegated to, and the
/// server killed with SIGKILL right after it sent the task. Started again on its database, it
/// resumes the tree, finds the remote task by its context and follows it to its answer; the
/// remote agent got the task once.
#[tokio::test]
async fn a_delegating_server_killed_after_sending_resumes_the_remote_task_on_restart() {
    let (e, remote, token) = slow_remote().await;
    let url = format!("{}/a2a/remote", remote.base);
    let helper = json!({"a2a": {"url": url, "token_env": "HELPER_TOKEN", "private": true}});
    // The remote server runs without --allow-private-hooks: it does not register one there.
    let (status, refused) = e
        .call(
            &remote,
            "POST",
            "/v1/agents",
            Some(&token),
            Some(json!({"name": "helper", "config": helper})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(
        refused["error"]["code"], "remote_agent_unusable",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--allow-private-hooks")),
        "{refused}"
    );

    let parent_db = local_db(&e);
    let bob = e
        .token_on(&parent_db, &["token", "create", "--user", "bob"])
        .await;
    let flags = ["--allow-private-hooks", "--lease-secs", "2"];
    let mut parent = e
        .start_on(
            &parent_db,
            &flags,
            &[("HELPER_TOKEN", &token), ("REIN_TEST_PAUSE_AT", "a2a:sent")],
        )
        .await;
    e.create_agents(
        &parent,
        &bob,
        &[
            ("helper", helper.clone()),
            ("boss", json!({"system_role": "ROLE-BOSS: you delegate."})),
        ],
    )
    .await;
    let (_, shown) = e
        .call(&parent, "GET", "/v1/agents/helper", Some(&bob), None)
        .await;
    assert_eq!(shown["config"]["surface"], "a2a:helper", "{shown}");
    assert_eq!(shown["config"]["a2a"]["card"]["name"], "remote", "{shown}");
    let root = e
        .create_operation(
            &parent,
            &bob,
            json!({"input": "What is 6*7?", "agent": "boss"}),
        )
        .await;
    eventually(
        "the parent server pausing after it sent the task",
        || async {
            parent
                .stderr
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .any(|l| l.starts_with("REIN_TEST_PAUSED"))
                .then_some(())
        },
    )
    .await;
    parent.child.kill().await.unwrap(); // SIGKILL
    assert_eq!(remote_runs(&e, &remote, &token, "remote").await.len(), 1);

    let parent = e
        .start_on(&parent_db, &flags, &[("HELPER_TOKEN", &token)])
        .await;
    let done = wait_status(&e, &parent, &root, &bob, "done").await;
    assert_eq!(done["operation"]["finish_reason"], "completed", "{done}");
    answered_once(&e, &remote, &token).await;
}

/// A token limit on the remote agent binds what it reports having used: once its task's
/// reported usage crosses the limit, rein cancels the task there and the sub-agent ends over
/// its limit, its usage the agent's figures; the parent's model reads why.
#[tokio::test]
async fn a_remote_agent_past_its_token_limit_is_cancelled_there() {
    let e = env(vec![]).await;
    e.model.route(
        "ROLE-REMOTE",
        vec![
            calc("k1", "1+1"),
            Canned::openai_text("Too late.").after(Duration::from_secs(8)),
        ],
    );
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("ask helper", "Add one and one.", "helper"),
            Canned::openai_text("The helper ran out of budget."),
        ],
    );
    let (rein, token) = remote_rein(
        &e,
        json!({"system_role": "ROLE-REMOTE: you calculate.", "tools": ["calculator"], "approval": "auto-run", "expose": true}),
    )
    .await;
    let url = format!("{}/a2a/remote", rein.base);
    helper_and_boss(&e, &token, &url, &["--token-limit", "100"]).await;
    let (code, out, err) = local(&e, &token, &["run", "--agent", "boss", "One plus one?"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("The helper ran out of budget."), "{out}");
    let root = local_root(&e, &token).await;
    let (_, shown, _) = local(&e, &token, &["--json", "op", "show", &root]).await;
    let shown: Value = serde_json::from_str(shown.trim()).unwrap();
    let child = &shown["sub_agents"][0];
    assert_eq!(child["finish_reason"], "token_limit_exceeded", "{child}");
    assert!(
        child["total_tokens"].as_u64().unwrap_or(0) > 100,
        "the agent's reported usage: {child}"
    );
    let runs = remote_runs(&e, &rein, &token, "remote").await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_ne!(
        runs[0]["status"], "done",
        "cancelled before it answered: {runs:?}"
    );
    let boss = boss_after_delegating(&e);
    assert!(
        boss.tool_result("d1").contains("token limit 100"),
        "{}",
        boss.tool_result("d1")
    );
}

/// The sample agent built with the official Python SDK (`tests/clients/a2a_sample_agent.py`),
/// serving; its address and its output's lines (`CANCELLED TASK_ID` per cancel).
async fn sample_agent(
    python: &std::path::Path,
    streaming: bool,
) -> (
    Child,
    String,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let mut child = Command::new(python)
        .arg(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/clients/a2a_sample_agent.py"),
        )
        .env("SAMPLE_STREAMING", if streaming { "1" } else { "0" })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(base) = line.strip_prefix("LISTENING ") {
                return base.to_owned();
            }
        }
        panic!("the sample agent exited before listening");
    })
    .await
    .expect("the sample agent listens");
    (child, base, lines)
}

/// Another implementation: an agent built with the official `a2a-sdk` for Python. Its card
/// is read (skills, streaming); its plain-text `input-required` is asked on the root and the
/// person's words go back as text; its artifact is the answer. A delegation cancelled while
/// the agent works is cancelled there too (`CancelTask`).
#[tokio::test]
async fn an_a2a_sdk_agent_asks_through_the_root_answers_and_is_cancelled_with_the_tree() {
    let Some(python) =
        rein_testkit::python_with("rein delegating to an a2a-sdk agent", "a2a.server.routes")
    else {
        return;
    };
    let (_agent, base, mut said) = sample_agent(&python, true).await;
    let e = env(vec![]).await;
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("weather", "What is the weather?", "helper"),
            Canned::openai_text("It is sunny in Oslo."),
            delegate("slow weather", "slow: take your time", "helper"),
        ],
    );
    let token = "sample-token";
    helper_and_boss(&e, token, &base, &[]).await;
    let (_, out, _) = local(&e, token, &["--json", "agent", "show", "helper"]).await;
    let shown: Value = serde_json::from_str(out.trim()).unwrap();
    let card = &shown["config"]["a2a"]["card"];
    assert_eq!(card["name"], "weather", "{shown}");
    assert_eq!(card["endpoint"], format!("{base}/rpc"), "{shown}");
    assert_eq!(card["streaming"], true);
    assert_eq!(card["skills"], json!(["forecast: Forecast"]));

    let (code, _, err) = local(&e, token, &["run", "--agent", "boss", "Weather?"]).await;
    assert_eq!(code, 3, "waiting for the city: {err}");
    assert!(
        err.contains("The remote agent `helper` asks: Which city?"),
        "{err}"
    );
    let root = local_root(&e, token).await;
    let (code, out, err) = local(&e, token, &["answer", &root, "Oslo"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("It is sunny in Oslo."), "{out}\n{err}");
    let boss = boss_after_delegating(&e);
    assert_eq!(
        boss.tool_result("d1"),
        "Weather in Oslo: sunny, 21 °C.",
        "the agent's artifact is the answer"
    );

    // A second delegation, cancelled while the agent works: the agent hears of it.
    let mut slow = local_cmd(&e, token, &["run", "--agent", "boss", "Take your time."]);
    slow.stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut slow = slow.spawn().unwrap();
    let working = eventually("the agent working on the slow task", || async {
        let resp = e
            .http
            .post(format!("{base}/rpc"))
            .header("authorization", format!("Bearer {token}"))
            .header("a2a-version", "1.0")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).to_string(),
            )
            .send()
            .await
            .ok()?;
        let listed: Value = serde_json::from_slice(&resp.bytes().await.ok()?).ok()?;
        listed["result"]["tasks"]
            .as_array()?
            .iter()
            .find(|t| t["status"]["state"] == "TASK_STATE_WORKING")
            .and_then(|t| t["id"].as_str().map(str::to_owned))
    })
    .await;
    let (code, out, _) = local(&e, token, &["--json", "op", "list"]).await;
    assert_eq!(code, 0);
    let second_root = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|o| o["parent_operation"].is_null() && o["agent"] == "boss")
        .find(|o| o["id"] != root.as_str())
        .and_then(|o| o["id"].as_str().map(str::to_owned))
        .expect("the second run");
    let (code, _, err) = local(&e, token, &["op", "cancel", &second_root]).await;
    assert!(
        code == 4 && err.contains("cancellation requested"),
        "{code}: {err}"
    );
    let cancelled = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = said.next_line().await {
            if let Some(id) = line.strip_prefix("CANCELLED ") {
                return id.to_owned();
            }
        }
        String::new()
    })
    .await
    .unwrap_or_default();
    assert_eq!(cancelled, working, "the remote task was cancelled");
    let _ = tokio::time::timeout(Duration::from_secs(30), slow.wait()).await;
}

/// An agent whose card says it does not stream: the task is sent to return at once and looked
/// at until it asks (the question on the root, the answer sent back) and until it answers;
/// run directly (`rein run --agent helper`), it is the operation itself.
#[tokio::test]
async fn an_agent_that_does_not_stream_is_followed_by_looking_at_its_task() {
    let Some(python) =
        rein_testkit::python_with("rein delegating to an a2a-sdk agent", "a2a.server.routes")
    else {
        return;
    };
    let (_agent, base, _said) = sample_agent(&python, false).await;
    let e = env(vec![]).await;
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("weather", "What is the weather?", "helper"),
            Canned::openai_text("It is sunny in Bergen."),
        ],
    );
    let token = "sample-token";
    helper_and_boss(&e, token, &base, &[]).await;
    let (_, out, _) = local(&e, token, &["--json", "agent", "show", "helper"]).await;
    let shown: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        shown["config"]["a2a"]["card"]["streaming"], false,
        "{shown}"
    );
    let (code, _, err) = local(&e, token, &["run", "--agent", "boss", "Weather?"]).await;
    assert_eq!(code, 3, "waiting for the city: {err}");
    assert!(
        err.contains("The remote agent `helper` asks: Which city?"),
        "{err}"
    );
    let root = local_root(&e, token).await;
    let (code, out, err) = local(&e, token, &["answer", &root, "Bergen"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("It is sunny in Bergen."), "{out}\n{err}");
    assert_eq!(
        boss_after_delegating(&e).tool_result("d1"),
        "Weather in Bergen: sunny, 21 °C."
    );

    // Run directly, the remote agent is the operation itself: its question, then its answer.
    let (code, _, err) = local(&e, token, &["run", "--agent", "helper", "Weather?"]).await;
    assert_eq!(code, 3, "waiting for the city: {err}");
    assert!(
        err.contains("The remote agent `helper` asks: Which city?"),
        "{err}"
    );
    let (code, out, _) = local(&e, token, &["--json", "op", "list"]).await;
    assert_eq!(code, 0);
    let direct = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|o| o["agent"] == "helper" && o["parent_operation"].is_null())
        .and_then(|o| o["id"].as_str().map(str::to_owned))
        .expect("the direct run");
    let (code, out, err) = local(&e, token, &["answer", &direct, "Tromsø"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Weather in Tromsø: sunny, 21 °C."),
        "{out}\n{err}"
    );
}
