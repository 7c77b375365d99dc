//! Grants and the reasons of pending calls through the HTTP API: every pending call says why it
//! asks (in `pending[].reason` and the `human_approve_required` event); "approve always" is a
//! grant the server keeps and applies (a harmless shell call runs unasked after it, a
//! blacklisted one still asks and cannot be granted); a grant of one conversation does not
//! apply in another; revoking it takes effect at the next call; another user's grants are
//! invisible.

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::{Value, json};

fn shell(id: &str, command: &str) -> Canned {
    Canned::openai_tools(&[(id, "shell__run", &json!({"command": command}).to_string())])
}

/// The operation's detail once it waits for a person.
async fn waiting(e: &Api, token: &str, body: Value) -> (String, Value) {
    let op = e.create_operation(token, body).await;
    let detail = e.wait_status(&op, token, "waiting_for_human").await;
    (op, detail)
}

async fn decide(e: &Api, token: &str, op: &str, decision: Value) -> (u16, Value) {
    e.call(
        "POST",
        &format!("/v1/operations/{op}/interventions"),
        Some(token),
        Some(json!({ "decisions": [decision] })),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_grant_runs_harmless_calls_unasked_never_blacklisted_ones_and_revokes_at_once() {
    let e = Api::with_workdir(vec![
        // 1, conversation T: asks (manual mode: the shell's policy), granted for T.
        shell("s1", "echo one"),
        Canned::openai_text("one"),
        // 2, T: runs unasked; then the guard flags `rm -rf ~`.
        shell("s2", "echo two"),
        shell("s3", "rm -rf ~"),
        Canned::openai_text("not that"),
        // 3, another conversation: asks.
        shell("s4", "echo three"),
        // 4, T after revoking: asks again.
        shell("s5", "echo four"),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;

    let (op1, detail) = waiting(&e, &alice, json!({"input": "one", "topic": "t-grants"})).await;
    let reason = &detail["pending"][0]["reason"];
    assert_eq!(reason["source"], "tool_policy", "{detail}");
    assert_eq!(reason["rule"], "tool:shell/run");
    assert_eq!(reason["every_time"], false);
    assert!(
        reason["explanation"]
            .as_str()
            .unwrap()
            .contains("requires approval in manual mode"),
        "{reason}"
    );
    // The event carries the same reason.
    let seen = e.events(&op1, &alice).await;
    let asked = seen
        .iter()
        .rfind(|v| v["type"] == "human_approve_required")
        .unwrap();
    assert_eq!(&asked["reasons"]["s1"], reason);

    // `grant` goes with approve only.
    let (status, body) = decide(
        &e,
        &alice,
        &op1,
        json!({"tool_call_id": "s1", "decision": "reject", "grant": "topic"}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("decision_does_not_fit"))
    );
    let (status, body) = decide(
        &e,
        &alice,
        &op1,
        json!({"tool_call_id": "s1", "decision": "approve", "grant": "topic"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    e.wait_status(&op1, &alice, "done").await;
    let (_, grants) = e.call("GET", "/v1/grants", Some(&alice), None).await;
    let grant = grants["grants"][0].clone();
    assert_eq!(
        (&grant["tool"], &grant["scope"], &grant["target"]),
        (&json!("shell/run"), &json!("topic"), &json!("t-grants")),
        "{grants}"
    );
    let id = grant["id"].as_str().unwrap().to_owned();

    // 2: the harmless call ran unasked, the blacklisted one asks every time.
    let (op2, detail) = waiting(&e, &alice, json!({"input": "two", "topic": "t-grants"})).await;
    assert_eq!(detail["pending"].as_array().unwrap().len(), 1, "{detail}");
    assert_eq!(detail["pending"][0]["call"]["id"], "s3");
    let reason = &detail["pending"][0]["reason"];
    assert_eq!(
        (&reason["source"], &reason["rule"], &reason["every_time"]),
        (
            &json!("guard"),
            &json!("security_blacklist:rm_home_dir"),
            &json!(true)
        ),
        "{reason}"
    );
    assert!(
        reason["node"].as_str().unwrap().contains("rm -rf ~"),
        "{reason}"
    );
    let (status, body) = decide(
        &e,
        &alice,
        &op2,
        json!({"tool_call_id": "s3", "decision": "approve", "grant": "topic"}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("grant_not_allowed")),
        "{body}"
    );
    // Nothing was decided by the refused request.
    let (_, list) = e
        .call(
            "GET",
            &format!("/v1/operations/{op2}/interventions"),
            Some(&alice),
            None,
        )
        .await;
    let s2 = list
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["call"]["id"] == "s3")
        .unwrap();
    assert_eq!(s2["status"], "pending");
    let (status, _) = decide(
        &e,
        &alice,
        &op2,
        json!({"tool_call_id": "s3", "decision": "reject", "reason": "never"}),
    )
    .await;
    assert_eq!(status, 202);
    e.wait_status(&op2, &alice, "done").await;
    let requests = e.model.requests();
    assert!(
        requests[3]
            .tool_result("s2")
            .trim_end()
            .ends_with("--- stdout ---\ntwo"),
        "s2 ran under the grant: {}",
        requests[3].tool_result("s2")
    );

    // 3: another conversation asks.
    let (_, detail) = waiting(&e, &alice, json!({"input": "three", "topic": "t-other"})).await;
    assert_eq!(detail["pending"][0]["call"]["id"], "s4");

    // Another user neither sees nor revokes it.
    let path = format!("/v1/grants/{id}");
    let (status, _) = e.call("GET", &path, Some(&bob), None).await;
    assert_eq!(status, 404);
    let (status, _) = e.call("DELETE", &path, Some(&bob), None).await;
    assert_eq!(status, 404);
    let (status, body) = e
        .call("GET", "/v1/grants/grant_nope", Some(&alice), None)
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_request"))
    );
    let (status, body) = e
        .call("GET", "/v1/grants?target=", Some(&alice), None)
        .await;
    assert_eq!(status, 400, "an empty target is not one: {body}");

    // 4: revoked, T asks again at once.
    let (status, revoked) = e.call("DELETE", &path, Some(&alice), None).await;
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["revoked_at"].is_string());
    let (_, detail) = waiting(&e, &alice, json!({"input": "four", "topic": "t-grants"})).await;
    assert_eq!(detail["pending"][0]["call"]["id"], "s5");
    let (_, listed) = e
        .call("GET", "/v1/grants?revoked=true", Some(&alice), None)
        .await;
    assert_eq!(listed["grants"].as_array().unwrap().len(), 1);
    let (_, active) = e.call("GET", "/v1/grants", Some(&alice), None).await;
    assert!(active["grants"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allow_list_set_on_the_request_runs_the_calculator_unasked_and_parks_on_the_shell() {
    let e = Api::with_workdir(vec![
        Canned::openai_tools(&[
            (
                "c1",
                "calculator__evaluate",
                &json!({"expression": "6*7"}).to_string(),
            ),
            (
                "s1",
                "shell__run",
                &json!({"command": "echo hi"}).to_string(),
            ),
        ]),
        Canned::openai_text("42 and hi"),
    ])
    .await;
    let alice = e.token("alice").await;
    let (status, body) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "x", "approval": "allow-list", "allow": ["not a tool"]})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (op, detail) = waiting(
        &e,
        &alice,
        json!({"input": "sum and greet", "approval": "allow-list", "allow": ["calculator"]}),
    )
    .await;
    assert_eq!(detail["spec"]["allow"], json!(["calculator"]));
    let pending = detail["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{detail}");
    assert_eq!(pending[0]["call"]["id"], "s1");
    assert_eq!(pending[0]["reason"]["source"], "mode");
    assert_eq!(pending[0]["reason"]["rule"], "approval_mode:allow_list");
    e.approve_all(&op, &alice, &detail).await;
    e.wait_status(&op, &alice, "done").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_tool_rules_decide_before_the_tools_policy_and_the_blacklist_before_both() {
    let e = Api::with_workdir(vec![
        // `echo …` never asks under the agent's rule; `git push` always does; `cat .env` is
        // the blacklist's (reading credentials), whatever the rule says.
        shell("s1", "echo ruled"),
        shell("s2", "git push origin main"),
        Canned::openai_text("pushed?"),
        shell("s3", "cat .env"),
    ])
    .await;
    let alice = e.token("alice").await;
    let rules = json!({"shell": [
        {"match": {"command": "git push*"}, "policy": "always"},
        {"policy": "never"}
    ]});
    let post_agent = |name: &str, config: Value| {
        let body = json!({ "name": name, "config": config });
        e.call("POST", "/v1/agents", Some(&alice), Some(body))
    };
    // Rules that cannot be used are refused naming the tool: a policy that is not one, a key
    // that is not a tool, a regex that does not compile (what the document cannot say).
    for (rules, says) in [
        (json!({"shell": "sometimes"}), "tool rule for `shell`"),
        (json!({"no tool!": "always"}), "tool rule for `no tool!`"),
        (
            json!({"shell": [{"match": {"command": {"type": "regex", "pattern": "("}}, "policy": "always"}]}),
            "invalid regex",
        ),
    ] {
        let (status, body) = post_agent("ruled", json!({"tool_rules": rules})).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "invalid_tool_rule", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    let prices = json!({"no-slash": {"input": 1, "output": 2}});
    let (status, body) = post_agent("priced", json!({ "prices": prices })).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "invalid_prices", "{body}");
    // A rule is kept as it reads back: a null given for an absent field is dropped.
    let given = json!({"shell": [{"match": {"command": {"type": "exact", "pattern": "ls", "predicate": null}}, "policy": "never"}]});
    let (status, body) = post_agent("exact", json!({ "tool_rules": given })).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["config"]["tool_rules"]["shell"][0]["match"]["command"],
        json!({"type": "exact", "pattern": "ls"}),
        "{body}"
    );
    e.create_agents(&alice, &[("ruled", json!({"tool_rules": rules}))])
        .await;
    let (op, detail) = waiting(&e, &alice, json!({"input": "go", "agent": "ruled"})).await;
    // s1 ran under the rule; s2 asks because of it.
    assert_eq!(detail["pending"][0]["call"]["id"], "s2", "{detail}");
    let reason = &detail["pending"][0]["reason"];
    assert_eq!(
        (&reason["source"], &reason["rule"]),
        (&json!("tool_policy"), &json!("tool_rule:shell/run"))
    );
    e.approve_all(&op, &alice, &detail).await;
    e.wait_status(&op, &alice, "done").await;
    let (_, detail) = waiting(&e, &alice, json!({"input": "read it", "agent": "ruled"})).await;
    let reason = &detail["pending"][0]["reason"];
    assert_eq!(
        (&reason["source"], &reason["rule"], &reason["every_time"]),
        (
            &json!("blacklist"),
            &json!("security_blacklist:env_files"),
            &json!(true)
        ),
        "{detail}"
    );
}
