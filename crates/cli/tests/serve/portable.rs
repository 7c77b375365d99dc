//! `rein export --user NAME FILE` and `rein import FILE` end to end: a user's agents,
//! conversations, operations (with their tool calls), knowledge base and memory setting move
//! from the test's database (SQLite, or PostgreSQL in the matrix) to a new SQLite file; a server
//! on the new file shows each of them as the old one did (the user's new id in place of the
//! old), searches the knowledge base by its words, and continues the conversation; a second
//! import of the same archive is refused whole; no token or session travels.

use super::*;

#[tokio::test]
async fn a_users_data_moves_to_another_database_and_reads_the_same_there() {
    let e = env(vec![
        calc("c1", "6*7"),
        Canned::openai_text("It is 42."),
        Canned::openai_text("Noted."),
        Canned::openai_text("Still here."),
    ])
    .await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "helper", "config": {"system_role": "Be brief.", "tools": ["calculator"]}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (code, out, err) = e
        .on_server(&rein, &alice, &["run", "--agent", "helper", "What is 6*7?"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("It is 42."), "{out}");
    let (_, ops) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    let op = ops[0]["id"].as_str().unwrap().to_owned();
    let topic = ops[0]["topic_id"].as_str().unwrap().to_owned();
    continue_topic(&e, &rein, &alice, &topic, "Remember that.").await;

    let docs = e.dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("notes.md"),
        "# Notes\n\nThe code word is aubergine.\n",
    )
    .unwrap();
    let (code, _, err) = e.on_server(&rein, &alice, &["kb", "create", "notes"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &["kb", "add", "notes", &docs.display().to_string()],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e.on_server(&rein, &alice, &["memory", "off"]).await;
    assert_eq!(code, 0, "{err}");

    let views: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("/v1/operations/{op}"), None),
        ("GET", "/v1/operations".to_owned(), None),
        ("GET", "/v1/topics".to_owned(), None),
        ("GET", format!("/v1/topics/{topic}/tree"), None),
        ("GET", format!("/v1/topics/{topic}/messages"), None),
        ("GET", "/v1/agents".to_owned(), None),
        ("GET", "/v1/knowledge/notes".to_owned(), None),
        (
            "POST",
            "/v1/knowledge/notes/search".to_owned(),
            Some(json!({"query": "aubergine"})),
        ),
        ("GET", "/v1/memories".to_owned(), None),
    ];
    let mut before = Vec::new();
    for (method, path, body) in &views {
        let (status, answer) = e
            .call(&rein, method, path, Some(&alice), body.clone())
            .await;
        assert_eq!(status, 200, "{path}: {answer}");
        before.push(answer);
    }
    drop(rein);

    let archive = e.dir.join("alice.jsonl");
    let archive_arg = archive.display().to_string();
    let out = e
        .command(&["export", "--user", "alice", &archive_arg])
        .output()
        .await
        .unwrap();
    let (code, _, err) = shaped(out);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("exported"), "{err}");
    let written = std::fs::read_to_string(&archive).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&archive).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the archive is its owner's only");
    }
    let header: Value = serde_json::from_str(written.lines().next().unwrap()).unwrap();
    let old_id = header["user_id"].as_str().unwrap().to_owned();
    assert_eq!(header["user_name"], "alice");
    assert!(!written.contains(&alice), "a token travelled");
    assert!(!written.contains("api_tokens") && !written.contains("\"sessions\""));
    // Not over an existing file.
    let out = e
        .command(&["export", "--user", "alice", &archive_arg])
        .output()
        .await
        .unwrap();
    assert_eq!(shaped(out).0, 1);

    let moved_db = e.dir.join("moved.db").display().to_string();
    let out = e
        .command_on(&moved_db, &["import", &archive_arg])
        .output()
        .await
        .unwrap();
    let (code, out, err) = shaped(out);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("operations") && out.contains("knowledge_chunks"),
        "{out}"
    );
    let out = e
        .command_on(&moved_db, &["import", &archive_arg])
        .output()
        .await
        .unwrap();
    let (code, _, err) = shaped(out);
    assert_eq!(code, 1, "a user of that name is refused");
    assert!(err.contains("--merge"), "{err}");
    let out = e
        .command_on(&moved_db, &["import", "--merge", &archive_arg])
        .output()
        .await
        .unwrap();
    let (code, _, err) = shaped(out);
    assert_eq!(code, 1, "a second import is refused");
    assert!(err.contains("already in"), "{err}");

    let (rein, alice_there) = reads_the_same(&e, &moved_db, &views, &before, &old_id).await;
    // From SQLite into PostgreSQL too (the matrix's PostgreSQL run moved it the other way).
    if !e.db().starts_with("postgres")
        && let Some(pg) =
            rein_testkit::postgres_scratch("import into PostgreSQL", "rein_import").await
    {
        let out = e
            .command_on(&pg.url, &["import", &archive_arg])
            .output()
            .await
            .unwrap();
        let (code, _, err) = shaped(out);
        assert_eq!(code, 0, "{err}");
        let (server, _) = reads_the_same(&e, &pg.url, &views, &before, &old_id).await;
        drop(server);
        pg.drop().await;
    }
    let search = &before[7];
    assert!(search.to_string().contains("aubergine"), "{search}");
    assert_eq!(before[8]["extraction"], false, "{}", before[8]);
    // The conversation goes on there.
    continue_topic(&e, &rein, &alice_there, &topic, "Still there?").await;
    let asked = e.model.requests().pop().unwrap();
    for earlier in [
        "What is 6*7?",
        "It is 42.",
        "Remember that.",
        "Noted.",
        "Still there?",
    ] {
        assert!(
            asked.carries(earlier),
            "the moved conversation lacks {earlier:?}"
        );
    }
}

/// A server on `db`, where the archive was imported, answers each of `views` as `before` (the
/// user's id there in place of `old_id`): the server and alice's token there.
async fn reads_the_same(
    e: &Env,
    db: &str,
    views: &[(&str, String, Option<Value>)],
    before: &[Value],
    old_id: &str,
) -> (Rein, String) {
    let rein = e.start_on(db, &[], &[]).await;
    let alice = e
        .token_on(db, &["token", "create", "--user", "alice"])
        .await;
    let new_id = {
        use rein_store::Accounts;
        let moved = rein_store::SqlStore::open(db, rein_store::Synchronous::Normal)
            .await
            .unwrap();
        moved.user_by_name("alice").await.unwrap().unwrap().id
    };
    assert_ne!(new_id, old_id, "a new user here");
    for ((method, path, body), was) in views.iter().zip(before) {
        let (status, answer) = e
            .call(&rein, method, path, Some(&alice), body.clone())
            .await;
        assert_eq!(status, 200, "{path}: {answer}");
        let was: Value = serde_json::from_str(&was.to_string().replace(old_id, &new_id)).unwrap();
        assert_eq!(answer, was, "{path} reads otherwise on {db}");
    }
    (rein, alice)
}

/// A new turn in `topic`, run to its end: the operation's detail.
async fn continue_topic(e: &Env, rein: &Rein, token: &str, topic: &str, input: &str) -> Value {
    let (status, created) = e
        .call(
            rein,
            "POST",
            "/v1/operations",
            Some(token),
            Some(json!({"input": input, "topic": topic})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let id = created["operation_id"].as_str().unwrap().to_owned();
    wait_status(e, rein, &id, token, "done").await
}
