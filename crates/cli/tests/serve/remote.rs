//! The CLI's commands against a server (`--server URL`, a token in `REIN_TOKEN`): topics,
//! groups, tasks, briefs and memories are the caller's on the server, read and changed through
//! its API with the same flags and output as on this machine; what only this machine can do is
//! refused, naming why.

use super::*;

#[tokio::test]
async fn topics_groups_tasks_briefs_and_memories_are_managed_on_a_server() {
    let e = env(vec![
        Canned::openai_text("Hello from the server."),
        Canned::openai_text("3 new items in the queue."),
    ])
    .await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;

    // A run started from here is alice's on the server, in a topic of hers.
    let (code, out, err) = e.on_server(&rein, &alice, &["run", "Say hello."]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Hello from the server."), "{out}");
    let (_, topics) = e.call(&rein, "GET", "/v1/topics", Some(&alice), None).await;
    let topic = topics[0]["id"].as_str().unwrap().to_owned();
    let (code, out, err) = e.on_server(&rein, &alice, &["topic", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&topic), "{out}");
    let (code, out, err) = e.on_server(&rein, &alice, &["topic", "show", &topic]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Hello from the server."), "{out}");
    assert!(err.contains("you> Say hello."), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["topic", "rename", &topic, "Greetings"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (_, topics) = e.call(&rein, "GET", "/v1/topics", Some(&alice), None).await;
    assert_eq!(topics[0]["title"], "Greetings");
    // Another user's topic is not there for bob (the server's 404, said as one line).
    let (code, _, err) = e.on_server(&rein, &bob, &["topic", "show", &topic]).await;
    assert_eq!(code, 1);
    assert!(err.contains(&format!("no topic {topic}")), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["topic", "delete", &topic])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("operations' records kept"), "{err}");
    let (_, topics) = e.call(&rein, "GET", "/v1/topics", Some(&alice), None).await;
    assert_eq!(topics.as_array().unwrap().len(), 0, "{topics}");

    // Groups of alice's agents on the server.
    for name in ["ann", "cy"] {
        let (code, _, err) = e.on_server(&rein, &alice, &["agent", "create", name]).await;
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &["group", "create", "team", "--members", "ann,zed"],
        )
        .await;
    assert_eq!(code, 1, "a member that is not an agent of hers");
    assert!(err.contains("zed"), "{err}");
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &[
                "group",
                "create",
                "team",
                "--members",
                "ann,cy",
                "--policy",
                "round-robin",
            ],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &["group", "edit", "team", "--max-rounds", "3"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("team (version 2)"), "{out}");
    let (_, group) = e
        .call(&rein, "GET", "/v1/groups/team", Some(&alice), None)
        .await;
    assert_eq!(group["config"]["members"], json!(["ann", "cy"]));
    assert_eq!(group["config"]["policy"], "round_robin");
    assert_eq!(group["config"]["max_rounds"], 3);
    let (code, out, _) = e.on_server(&rein, &alice, &["group", "list"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("team") && out.contains("ann, cy"), "{out}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["group", "delete", "team"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (status, _) = e
        .call(&rein, "GET", "/v1/groups/team", Some(&alice), None)
        .await;
    assert_eq!(status, 404);

    // A task created from here runs on the server; its brief is resolved from here.
    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &[
                "task",
                "create",
                "--title",
                "Queue watch",
                "--instruction",
                "Check the queue.",
                "--every",
                "1d",
            ],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let task = out.split_whitespace().next().unwrap().to_owned();
    assert!(
        out.contains("every 86400s") && out.contains("Queue watch"),
        "{out}"
    );
    let (code, out, _) = e.on_server(&rein, &alice, &["task", "pause", &task]).await;
    assert_eq!(code, 0);
    assert!(out.contains(" paused "), "{out}");
    let (code, out, _) = e.on_server(&rein, &alice, &["task", "resume", &task]).await;
    assert_eq!(code, 0);
    assert!(out.contains(" active "), "{out}");
    let (code, out, err) = e
        .on_server(&rein, &alice, &["task", "next", &task, "--count", "2"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &["task", "edit", &task, "--title", "Queue check"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Queue check"), "{out}");
    let (code, out, err) = e.on_server(&rein, &alice, &["task", "run", &task]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3 new items in the queue."), "{out}");
    let brief = eventually("the run's brief", || async {
        let (_, l) = e
            .call(
                &rein,
                "GET",
                "/v1/briefs?unresolved=true",
                Some(&alice),
                None,
            )
            .await;
        l["briefs"]
            .as_array()
            .and_then(|b| b.first())
            .and_then(|b| b["id"].as_str())
            .map(str::to_owned)
    })
    .await;
    let (code, out, err) = e
        .on_server(&rein, &alice, &["task", "history", &task])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("run ") && out.contains("manual"), "{out}");
    let (code, out, _) = e.on_server(&rein, &alice, &["task", "show", &task]).await;
    assert_eq!(code, 0);
    assert!(out.contains("instruction: Check the queue."), "{out}");
    let (code, out, err) = e.on_server(&rein, &alice, &["brief", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&brief) && out.contains("unread"), "{out}");
    let (code, out, _) = e.on_server(&rein, &alice, &["brief", "show", &brief]).await;
    assert_eq!(code, 0);
    assert!(out.contains("3 new items in the queue."), "{out}");
    let (code, out, err) = e
        .on_server(&rein, &alice, &["brief", "resolve", &brief, "acknowledge"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("resolved: acknowledge"), "{out}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["brief", "resolve", &brief, "acknowledge"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("already resolved"), "{err}");
    // The server refuses a hook on its own network (its rule, not this machine's).
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &[
                "brief",
                "hook",
                "set",
                "http://127.0.0.1:9/hook",
                "--secret",
                "0123456789abcdef",
            ],
        )
        .await;
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = e.on_server(&rein, &alice, &["brief", "hook", "show"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no brief hook is set"), "{err}");
    let (code, _, err) = e.on_server(&rein, &bob, &["task", "show", &task]).await;
    assert_eq!(code, 1, "bob has no such task");
    assert!(err.contains(&format!("no task {task}")), "{err}");
    let (code, _, err) = e.on_server(&rein, &alice, &["task", "delete", &task]).await;
    assert_eq!(code, 0, "{err}");
    let (status, _) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/tasks/{task}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 404);

    // Memories: learning is turned off and on for alice on the server.
    let (code, _, err) = e.on_server(&rein, &alice, &["memory", "off"]).await;
    assert_eq!(code, 0, "{err}");
    let (_, m) = e
        .call(&rein, "GET", "/v1/memories", Some(&alice), None)
        .await;
    assert_eq!(m["extraction"], false);
    let (code, _, err) = e.on_server(&rein, &alice, &["memory", "list"]).await;
    assert_eq!(code, 0);
    assert!(err.contains("learning is off"), "{err}");
    let (code, _, err) = e.on_server(&rein, &alice, &["memory", "on"]).await;
    assert_eq!(code, 0, "{err}");
    let (_, m) = e
        .call(&rein, "GET", "/v1/memories", Some(&alice), None)
        .await;
    assert_eq!(m["extraction"], true);
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &["memory", "forget", "mem_00000000000000000000000000000000"],
        )
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no memory"), "{err}");
    let (code, _, err) = e.on_server(&rein, &alice, &["memory", "extract"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("learns from its users' conversations on its own"),
        "{err}"
    );
    // What alice spent on the server: her run and her task's run.
    let (code, out, err) = e
        .on_server(&rein, &alice, &["--json", "usage", "--by", "model"])
        .await;
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["total"]["operations"], 2, "{report}");
    let (code, _, err) = e.on_server(&rein, &alice, &["usage", "--by", "user"]).await;
    assert_eq!(code, 1, "by user is for admins");
    assert!(err.contains("for admins"), "{err}");
}

#[tokio::test]
async fn knowledge_bases_on_a_server_take_files_from_here() {
    let e = env(vec![]).await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let docs = e.dir.join("remote-docs");
    std::fs::create_dir_all(docs.join(".git")).unwrap();
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\n## Install\n\nRun `cargo install rein-cli` to install it.\n",
    )
    .unwrap();
    std::fs::write(docs.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
    std::fs::write(docs.join(".git/config"), "not indexed").unwrap();
    let docs_arg = docs.display().to_string();

    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "create", "manuals"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "create", "manuals"])
        .await;
    assert_eq!(code, 1, "the server's 409");
    assert!(err.contains("already exists"), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "add", "manuals", &docs_arg])
        .await;
    assert_eq!(code, 0, "{err}");
    let guide = format!("{docs_arg}/guide.md");
    assert!(err.contains(&format!("{guide}: 2 chunks")), "{err}");
    assert!(err.contains("logo.png: skipped: a binary file"), "{err}");
    assert!(!err.contains(".git"), "hidden folders are left out: {err}");
    let (_, base) = e
        .call(&rein, "GET", "/v1/knowledge/manuals", Some(&alice), None)
        .await;
    assert_eq!(base["files"], 2, "{base}");

    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &["kb", "search", "manuals", "how do I install it?"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("[{guide}:")) && out.contains("cargo install rein-cli"),
        "{out}"
    );
    assert!(
        err.contains("full-text search only"),
        "no embedding model: {err}"
    );
    let (code, out, _) = e.on_server(&rein, &alice, &["kb", "list"]).await;
    assert_eq!(code, 0);
    assert!(
        out.starts_with("manuals") && out.contains("2 files"),
        "{out}"
    );
    let (code, out, _) = e.on_server(&rein, &alice, &["kb", "show", "manuals"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("logo.png  skipped: a binary file"), "{out}");
    assert!(out.contains("embedding model: none"), "{out}");

    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "remove", "manuals", &guide])
        .await;
    assert_eq!(code, 0, "{err}");
    let (_, found) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge/manuals/search",
            Some(&alice),
            Some(json!({"query": "install"})),
        )
        .await;
    assert_eq!(found["hits"].as_array().unwrap().len(), 0, "{found}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "remove", "manuals", &guide])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("has no file"), "{err}");
    // An embedding model the server has no provider for is refused by the server.
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &["kb", "set", "manuals", "--embed-model", "nowhere/embed"],
        )
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("nowhere/embed"), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "set", "manuals", "--no-embed-model"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "resume", "manuals"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("on its own"), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &alice, &["kb", "delete", "manuals"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (status, _) = e
        .call(&rein, "GET", "/v1/knowledge/manuals", Some(&alice), None)
        .await;
    assert_eq!(status, 404);
}

/// `rein --server URL chat` with `input` piped to its stdin.
async fn chat_on(e: &Env, rein: &Rein, token: &str, input: &str) -> (i32, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = e
        .remote(rein, Some(token), &["chat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    shaped(child.wait_with_output().await.unwrap())
}

#[tokio::test]
async fn chat_on_a_server_keeps_its_topic_there_regenerates_and_switches_branches() {
    let e = env(vec![
        Canned::openai_text("one"),
        Canned::openai_text("two"),
        Canned::openai_text("two, again"),
        Canned::openai_text("three"),
    ])
    .await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let (code, out, err) = chat_on(
        &e,
        &rein,
        &alice,
        "first\nsecond\n/regenerate\n/edit second, edited\n/branch\n/branch 1\n/model gpt-4o\n/skill nothing-here\n/exit\n",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("two, again") && out.contains("three"), "{out}");
    let turns = |i: usize| e.model.requests()[i].conversation_texts();
    assert_eq!(
        turns(1),
        ["first", "one", "second"],
        "one topic on the server"
    );
    assert_eq!(
        turns(2),
        ["first", "one", "second"],
        "a regeneration answers the same message again"
    );
    assert_eq!(
        turns(3),
        ["first", "one", "second, edited"],
        "an edit replaces it"
    );
    assert!(err.contains("[2/2] second, edited"), "{err}");
    let after = err.split("/branch N shows").nth(1).unwrap();
    assert!(after.contains("you> [1/2] second\n"), "{after}");
    assert!(out.contains("[2/2] two, again"), "{out}");
    assert!(err.contains("must be addressed as provider/model"), "{err}");
    assert!(err.contains("no skill `nothing-here`"), "{err}");
    let topic = err
        .lines()
        .find_map(|l| l.strip_prefix("topic: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    let (status, tree) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/topics/{topic}/tree"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 200, "alice's topic on the server: {tree}");
    assert_eq!(tree["messages"].as_array().unwrap().len(), 7, "{tree}");
}
