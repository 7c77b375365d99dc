//! One conversation, one operation at a time, through the API: ten concurrent `POST
//! /v1/operations` on one topic run one after another under `enqueue` (also across two servers
//! sharing PostgreSQL) and the topic's active path holds every exchange in order; under
//! `reject` one runs and nine are `409 topic_busy`; an operation posted while the topic's
//! operation waits for an approval is queued, refused, or ends that one, per policy.

use super::*;

/// The active path of `topic` as `(role, text)`, root first.
async fn path(e: &Env, rein: &Rein, token: &str, topic: &str) -> Vec<(String, String)> {
    let (status, tree) = e
        .call(
            rein,
            "GET",
            &format!("/v1/topics/{topic}/tree"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{tree}");
    let by_id: std::collections::HashMap<&str, &Value> = tree["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m))
        .collect();
    tree["active_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| {
            let m = by_id[id.as_str().unwrap()];
            let text = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>();
            (m["role"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

/// Every prompt `q0`…`q9` on the path, each followed at once by an answer, in one order.
fn assert_every_exchange_in_order(path: &[(String, String)], n: usize) {
    assert_eq!(path.len(), 2 * n, "{path:?}");
    let mut prompts = Vec::new();
    for pair in path.chunks(2) {
        assert_eq!(pair[0].0, "user", "{path:?}");
        assert_eq!(pair[1].0, "assistant", "{path:?}");
        assert!(pair[1].1.starts_with("answer "), "{path:?}");
        prompts.push(pair[0].1.clone());
    }
    prompts.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("q{i}")).collect();
    want.sort();
    assert_eq!(prompts, want, "every exchange is on the path once");
}

/// Post `q0`…`q{n-1}` on `topic` at once, alternating over `servers`; the answers.
async fn post_all(
    e: &Env,
    servers: &[&Rein],
    token: &str,
    topic: &str,
    when_busy: &str,
    n: usize,
) -> Vec<(u16, Value)> {
    let calls = (0..n).map(|i| {
        let rein = servers[i % servers.len()];
        e.call(
            rein,
            "POST",
            "/v1/operations",
            Some(token),
            Some(json!({"input": format!("q{i}"), "topic": topic, "when_busy": when_busy})),
        )
    });
    futures::future::join_all(calls).await
}

async fn wait_all_done(e: &Env, rein: &Rein, token: &str, ops: &[String]) {
    for op in ops {
        let detail = wait_status(e, rein, op, token, "done").await;
        assert_eq!(detail["operation"]["finish_reason"], "completed");
    }
}

#[tokio::test]
async fn ten_concurrent_posts_on_one_topic_run_one_after_another_or_are_refused() {
    let answers: Vec<Canned> = (0..10)
        .map(|i| Canned::openai_text(&format!("answer {i}")))
        .collect();
    let e = env(answers).await;
    let alice = e.token("alice").await;
    let rein = e.start(&[]).await;
    let answered = post_all(&e, &[&rein], &alice, "t-ten", "enqueue", 10).await;
    let mut ops = Vec::new();
    let mut queued = 0;
    for (status, body) in &answered {
        assert_eq!(*status, 202, "{body}");
        queued += usize::from(body["status"] == "queued");
        ops.push(body["operation_id"].as_str().unwrap().to_owned());
    }
    assert!(queued >= 9, "{answered:?}");
    wait_all_done(&e, &rein, &alice, &ops).await;
    assert_every_exchange_in_order(&path(&e, &rein, &alice, "t-ten").await, 10);
    // Each model call saw every exchange before it: they ran one after another.
    for (i, r) in e.model.requests().iter().enumerate() {
        let users = r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .count();
        assert_eq!(users, i + 1, "request {i}");
    }

    // Refused when busy: one runs, nine are told which operation is in the way.
    let e = env(vec![shell_call("s1")]).await;
    let alice = e.token("alice").await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let rein = e
        .start_with(&["--workdir", &work.display().to_string()], &[])
        .await;
    let answered = post_all(&e, &[&rein], &alice, "t-busy", "reject", 10).await;
    let accepted: Vec<&Value> = answered
        .iter()
        .filter(|(s, _)| *s == 202)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(accepted.len(), 1, "{answered:?}");
    let first = accepted[0]["operation_id"].as_str().unwrap();
    for (status, body) in answered.iter().filter(|(s, _)| *s != 202) {
        assert_eq!(*status, 409, "{body}");
        assert_eq!(body["error"]["code"], "topic_busy");
        assert_eq!(body["error"]["details"]["operation_id"], first, "{body}");
    }
}

#[tokio::test]
async fn a_post_while_the_topic_waits_for_an_approval_follows_each_policy() {
    let e = env(vec![
        shell_call("s1"),
        // enqueue: the first is approved, then the queued one answers.
        Canned::openai_text("hi done"),
        Canned::openai_text("answer queued"),
        // interrupt: the next waits for an approval, and a new post ends it.
        shell_call("s2"),
        Canned::openai_text("answer after moving on"),
    ])
    .await;
    let alice = e.token("alice").await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let rein = e
        .start_with(&["--workdir", &work.display().to_string()], &[])
        .await;
    let post = |input: &str, when_busy: &str| json!({"input": input, "topic": "t-parked", "when_busy": when_busy});
    let a = e
        .create_operation(&rein, &alice, post("say hi", "enqueue"))
        .await;
    let detail = wait_status(&e, &rein, &a, &alice, "waiting_for_human").await;
    // reject: 409, nothing written.
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(post("x", "reject")),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("topic_busy"))
    );
    assert_eq!(body["error"]["details"]["status"], "waiting_for_human");
    // enqueue: queued, visible as such, started once the first is approved and done.
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(post("queued", "enqueue")),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        (body["status"].as_str(), body["queued_behind"].as_str()),
        (Some("queued"), Some(a.as_str()))
    );
    let b = body["operation_id"].as_str().unwrap().to_owned();
    let (_, shown) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{b}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(shown["operation"]["status"], "queued");
    approve_all(&e, &rein, &a, &alice, &detail).await;
    wait_status(&e, &rein, &b, &alice, "done").await;
    // interrupt: a third waits for an approval; a fourth ends it and runs.
    let c = e
        .create_operation(&rein, &alice, post("say hi again", "enqueue"))
        .await;
    wait_status(&e, &rein, &c, &alice, "waiting_for_human").await;
    let d = e
        .create_operation(&rein, &alice, post("never mind", "interrupt"))
        .await;
    wait_status(&e, &rein, &d, &alice, "done").await;
    let (_, ended) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{c}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(ended["operation"]["status"], "done");
    assert_eq!(ended["operation"]["finish_detail"], "the person moved on");
    let (_, list) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{c}/interventions"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        (&list[0]["status"], &list[0]["outcome"]),
        (&json!("rejected"), &json!("the person moved on"))
    );
    let texts: Vec<String> = path(&e, &rein, &alice, "t-parked")
        .await
        .into_iter()
        .map(|(role, text)| format!("{role}: {text}"))
        .collect();
    let at = |t: &str| {
        texts
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("{t} not on {texts:?}"))
    };
    assert!(at("user: say hi") < at("assistant: hi done"));
    assert!(at("assistant: hi done") < at("user: queued"));
    assert!(at("user: queued") < at("assistant: answer queued"));
    assert!(at("assistant: answer queued") < at("user: say hi again"));
    assert!(at("user: say hi again") < at("user: never mind"));
    assert_eq!(texts.last().unwrap(), "assistant: answer after moving on");
}

#[tokio::test]
async fn ten_concurrent_posts_across_two_servers_sharing_postgres_run_one_after_another() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "ten_concurrent_posts_across_two_servers_sharing_postgres_run_one_after_another",
        "rein_topic_queue_e2e",
    )
    .await
    else {
        return;
    };
    let db = scratch.url.clone();
    let mut answers: Vec<Canned> = (0..10)
        .map(|i| Canned::openai_text(&format!("answer {i}")))
        .collect();
    // The one that holds the second topic keeps it while the others are refused.
    answers.push(Canned::openai_text_then_stall("thinking"));
    let e = env(answers).await;
    let out = e
        .command_on(&db, &["token", "create", "--user", "alice"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let alice = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let a = e.start_on(&db, &[], &[]).await;
    let b = e.start_on(&db, &[], &[]).await;
    let answered = post_all(&e, &[&a, &b], &alice, "t-two", "enqueue", 10).await;
    let ops: Vec<String> = answered
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 202, "{body}");
            body["operation_id"].as_str().unwrap().to_owned()
        })
        .collect();
    wait_all_done(&e, &a, &alice, &ops).await;
    assert_every_exchange_in_order(&path(&e, &a, &alice, "t-two").await, 10);
    let answered = post_all(&e, &[&a, &b], &alice, "t-two-busy", "reject", 10).await;
    let refused = answered.iter().filter(|(s, _)| *s == 409).count();
    assert_eq!(refused, 9, "{answered:?}");
    drop((a, b));
    scratch.drop().await;
}
