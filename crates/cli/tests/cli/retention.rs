//! `rein gc` and `rein backup` on this machine's database: old finished operations lose their
//! steps, events and tool results (never a parked one), keep their record and messages; a
//! backup taken while the database is in use opens as the database and shows the same; on
//! PostgreSQL the documented `pg_dump` backup restores with `pg_restore`. Conversations nobody
//! touched go with `--topics-older-than`, never one whose operation is parked.

use super::*;

/// The `--json op list` lines: (id, status, topic).
async fn listed(e: &Env) -> Vec<(String, String, String)> {
    let (_, out, _) = e.rein(&["--json", "op", "list"]).await;
    out.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_owned(),
                v["status"].as_str().unwrap().to_owned(),
                v["topic_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// On PostgreSQL, the documented backup: `pg_dump --format=custom --schema=S`, the schema then
/// lost (dropped), `pg_restore --clean --if-exists` brings it back and `op show` shows what it
/// showed before.
async fn restores_from_pg_dump(e: &Env, op: &str) {
    let url = e.db();
    // The scratch schema's URL is the database's with `options=-c search_path=SCHEMA` added.
    let at = url.find("options=").unwrap_or_else(|| panic!("{url}"));
    let (base, options) = (&url[..at - 1], &url[at..]);
    let schema = options.rsplit("search_path%3D").next().unwrap().to_owned();
    let (_, before, _) = e.rein(&["op", "show", op]).await;
    let dump = e.dir.join("rein.dump");
    let run = |program: &str, args: Vec<String>| {
        let out = std::process::Command::new(program).args(&args).output();
        let out = out.unwrap_or_else(|err| panic!("{program}: {err}"));
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(
        "pg_dump",
        vec![
            "--format=custom".into(),
            format!("--schema={schema}"),
            format!("--file={}", dump.display()),
            base.to_owned(),
        ],
    );
    run(
        "psql",
        vec![
            "-q".into(),
            base.to_owned(),
            "-c".into(),
            format!("DROP SCHEMA {schema} CASCADE"),
        ],
    );
    let (code, _, _) = e.rein(&["op", "show", op]).await;
    assert_ne!(code, 0, "the schema is gone");
    run(
        "pg_restore",
        vec![
            "--clean".into(),
            "--if-exists".into(),
            format!("--dbname={base}"),
            dump.display().to_string(),
        ],
    );
    let (code, after, err) = e.rein(&["op", "show", op]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(before, after, "restored as it was");
}

#[tokio::test]
async fn gc_compacts_only_finished_operations_and_a_backup_opens_as_the_database() {
    let e = env(vec![
        Canned::openai_text("one"),
        Canned::openai_text("two"),
        calc("c1", "1+1"),
    ])
    .await;
    assert_eq!(e.rein(&["run", "first"]).await.0, 0);
    assert_eq!(e.rein(&["run", "second"]).await.0, 0);
    let (code, _, err) = e.rein(&["run", "--approval", "allow-list", "third"]).await;
    assert_eq!(code, 3, "parked: {err}");
    let ops = listed(&e).await;
    let done: Vec<&(String, String, String)> = ops.iter().filter(|o| o.1 == "done").collect();
    let parked = ops.iter().find(|o| o.1 == "waiting_for_human").unwrap();
    assert_eq!(done.len(), 2, "{ops:?}");
    let (first, _, first_topic) = done[0];

    // A backup opens as the database and shows the same (SQLite; PostgreSQL says pg_dump).
    let copy = e.dir.join("copy.db");
    let copy_arg = copy.display().to_string();
    let (code, _, err) = e.rein(&["backup", &copy_arg]).await;
    if e.db().starts_with("postgres") {
        assert_eq!(code, 1);
        assert!(err.contains("pg_dump"), "{err}");
        restores_from_pg_dump(&e, first).await;
    } else {
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("backed up"), "{err}");
        let (_, shown, _) = e.rein(&["op", "show", first]).await;
        let (code, from_copy, err) = e.rein(&["--db", &copy_arg, "op", "show", first]).await;
        assert_eq!(code, 0, "{err}");
        assert_eq!(shown, from_copy);
        let (code, _, err) = e.rein(&["backup", &copy_arg]).await;
        assert_eq!(code, 1, "an existing file is not overwritten");
        assert!(err.contains("exists"), "{err}");
    }

    // A dry run counts and deletes nothing.
    let (code, _, err) = e.rein(&["gc", "--older-than", "0"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 finished operations to compact"), "{err}");
    let (_, events, _) = e.rein(&["op", "events", first]).await;
    assert!(!events.trim().is_empty());

    // Applied in batches of one: the finished ones keep their record and messages only.
    let (code, _, err) = e
        .rein(&["gc", "--older-than", "0", "--apply", "--batch", "1"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 finished operations compacted"), "{err}");
    let (_, events, _) = e.rein(&["op", "events", first]).await;
    assert!(events.trim().is_empty(), "{events}");
    let (code, shown, err) = e.rein(&["op", "show", first]).await;
    assert_eq!(code, 0, "{err}");
    assert!(shown.contains("done"), "{shown}");
    let (_, topic, topic_err) = e.rein(&["topic", "show", first_topic]).await;
    assert!(
        topic.contains("one") || topic.contains("two"),
        "{topic}{topic_err}"
    );
    // The parked one is untouched and still continues.
    let (_, events, _) = e.rein(&["op", "events", &parked.0]).await;
    assert!(events.contains("human_approve_required"), "{events}");
    let (_, _, err) = e.rein(&["gc", "--older-than", "0", "--apply"]).await;
    assert!(err.contains("0 finished operations compacted"), "{err}");
    let (code, _, err) = e.rein(&["gc", "--older-than", "1"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("0 finished operations"),
        "nothing is a day old: {err}"
    );

    // Conversations nobody touched: the two finished ones go (their records stay, and what
    // they cost), the parked one's stays; none is a day old yet.
    let (_, usage_before, _) = e.rein(&["usage"]).await;
    let (_, _, err) = e.rein(&["gc", "--topics-older-than", "1"]).await;
    assert!(err.contains("0 untouched conversations to delete"), "{err}");
    let (code, _, err) = e.rein(&["gc", "--topics-older-than", "0"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 untouched conversations to delete"), "{err}");
    let (code, _, err) = e
        .rein(&["gc", "--topics-older-than", "0", "--apply", "--batch", "1"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("2 untouched conversations deleted"), "{err}");
    let (code, _, _) = e.rein(&["topic", "show", first_topic]).await;
    assert_ne!(code, 0, "the conversation is gone");
    let (code, _, err) = e.rein(&["topic", "show", &parked.2]).await;
    assert_eq!(code, 0, "the parked operation's stays: {err}");
    let (code, shown, err) = e.rein(&["op", "show", first]).await;
    assert_eq!(code, 0, "{err}");
    assert!(shown.contains("done"), "the record stays: {shown}");
    let (_, usage_after, _) = e.rein(&["usage"]).await;
    assert_eq!(usage_before, usage_after, "what they cost still counts");
}
