//! Replicas and upgrades as an operator meets them: servers, workers and the CLI started at
//! the same instant on an empty database all come up with the schema migrated once; an
//! upgrade with a parked and a running operation; an older build refused; and SIGTERM
//! handing a running operation over at once instead of after its lease.

use super::*;
use sqlx::Connection;

/// How a process of a start-together round shows it is up.
enum Up {
    /// `rein serve`: its listening line.
    Listening,
    /// `rein worker`: its dispatching line.
    Dispatching,
    /// A CLI command: it exits 0.
    Exits,
}

/// Start 3 servers, 2 workers and `rein op list` on `db` at the same instant; each must come
/// up. Returns the servers and workers, still running.
async fn start_together(e: &Env, db: &str, round: usize) -> Vec<Child> {
    let mut spawned = Vec::new();
    let plan = [
        (Up::Listening, vec!["serve", "--addr", "127.0.0.1:0"]),
        (Up::Listening, vec!["serve", "--addr", "127.0.0.1:0"]),
        (Up::Listening, vec!["serve", "--addr", "127.0.0.1:0"]),
        (Up::Dispatching, vec!["worker"]),
        (Up::Dispatching, vec!["worker"]),
        (Up::Exits, vec!["op", "list"]),
    ];
    // Every command is built first, then all are spawned back to back.
    let mut commands: Vec<(Up, Command)> = plan
        .into_iter()
        .map(|(up, args)| {
            let mut c = e.command_on(db, &args);
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            (up, c)
        })
        .collect();
    for (up, c) in &mut commands {
        spawned.push((std::mem::replace(up, Up::Exits), c.spawn().unwrap()));
    }
    let mut running = Vec::new();
    for (i, (up, mut child)) in spawned.into_iter().enumerate() {
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = Vec::new();
        let needle = match up {
            Up::Listening => Some("rein: listening on "),
            Up::Dispatching => Some(" dispatching"),
            Up::Exits => None,
        };
        let came_up = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let found = needle.is_some_and(|n| line.contains(n));
                seen.push(line);
                if found {
                    return true;
                }
            }
            needle.is_none() && child.wait().await.unwrap().success()
        };
        let up = tokio::time::timeout(Duration::from_secs(60), came_up)
            .await
            .unwrap_or(false);
        assert!(
            up,
            "round {round}: process {i} on {db} did not come up:\n{}",
            seen.join("\n")
        );
        if needle.is_some() {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            running.push(child);
        }
    }
    running
}

/// `rein migrate --json` on `db`: the schema's version and how many migrations are recorded.
async fn migrations(e: &Env, db: &str) -> (i64, i64, usize) {
    let out = e
        .command_on(db, &["--json", "migrate"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["schema_version"].as_i64().unwrap(),
        v["known"].as_i64().unwrap(),
        v["migrations"].as_array().unwrap().len(),
    )
}

async fn stop_all(children: Vec<Child>) {
    for mut c in children {
        let _ = c.kill().await;
        let _ = c.wait().await;
    }
}

#[tokio::test]
async fn servers_workers_and_the_cli_started_at_once_on_a_new_sqlite_file_all_come_up() {
    let e = env(vec![]).await;
    for round in 0..20 {
        let db = e.dir.join(format!("round-{round}.db"));
        let db = db.to_str().unwrap();
        let running = start_together(&e, db, round).await;
        let (version, known, recorded) = migrations(&e, db).await;
        assert_eq!((version, recorded as i64), (known, known), "round {round}");
        stop_all(running).await;
    }
}

#[tokio::test]
async fn servers_workers_and_the_cli_started_at_once_on_a_new_postgres_schema_all_come_up() {
    let test = "servers_workers_and_the_cli_started_at_once_on_a_new_postgres_schema_all_come_up";
    let e = env(vec![]).await;
    for round in 0..20 {
        let Some(scratch) = rein_testkit::postgres_scratch(test, "rein_replicas").await else {
            return;
        };
        let running = start_together(&e, &scratch.url, round).await;
        let (version, known, recorded) = migrations(&e, &scratch.url).await;
        assert_eq!((version, recorded as i64), (known, known), "round {round}");
        stop_all(running).await;
        scratch.drop().await;
    }
}

/// Take a database back to how the previous migration set left it: migrations 21 and 22's
/// changes and the bookkeeping columns builds before them lacked, removed.
async fn to_previous_release(url: &str) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    for stmt in [
        "ALTER TABLE operations DROP COLUMN prompt",
        "DELETE FROM rein_schema WHERE version = 22",
        "DROP INDEX operations_by_topic_status",
        "ALTER TABLE operations DROP COLUMN queued",
        "DELETE FROM rein_schema WHERE version = 21",
        "ALTER TABLE rein_schema DROP COLUMN checksum",
        "ALTER TABLE rein_schema DROP COLUMN oldest_binary",
    ] {
        sqlx::query(stmt)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{stmt}: {e}"));
    }
    conn.close().await.unwrap();
}

async fn an_upgrade_with_operations_in_flight(e: &Env, db: &str, url: &str) {
    e.model.route(
        "parked-operation",
        vec![
            ledger("l1", "upgraded"),
            Canned::openai_text("Appended after the upgrade."),
        ],
    );
    e.model.route(
        "running-operation",
        vec![
            // Held: the server is killed while this call is under way.
            calc("c0", "17*23").after(Duration::from_secs(30)),
            calc("c1", "17*23"),
            Canned::openai_text("17 × 23 = 391."),
        ],
    );
    let alice = e
        .token_on(db, &["token", "create", "--user", "alice"])
        .await;
    let mut old = e.start_on(db, &["--lease-secs", "2"], &[]).await;
    e.create_agents(
        &old,
        &alice,
        &[
            ("parked", json!({"system_role": "parked-operation"})),
            ("running", json!({"system_role": "running-operation"})),
        ],
    )
    .await;
    let parked = e
        .create_operation(
            &old,
            &alice,
            json!({"input": "Append.", "approval": "allow-list", "agent": "parked"}),
        )
        .await;
    wait_status(e, &old, &parked, &alice, "waiting_for_human").await;
    let running = e
        .create_operation(
            &old,
            &alice,
            json!({"input": "What is 17*23?", "agent": "running"}),
        )
        .await;
    eventually("the running operation's model call", || async {
        (e.model.requests().len() == 2).then_some(())
    })
    .await;
    old.child.kill().await.unwrap();
    let _ = old.child.wait().await;
    to_previous_release(url).await;
    // The new servers take the running operation up in their first sweep, at start: wait until
    // the dead server's 2 s lease has run out, as the database records it.
    eventually("the dead server's lease running out", || async {
        let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
        let until: Option<i64> =
            sqlx::query_scalar("SELECT lease_until FROM operations WHERE id = $1")
                .bind(running.as_str())
                .fetch_one(&mut conn)
                .await
                .unwrap();
        conn.close().await.unwrap();
        until
            .is_none_or(|us| us < chrono::Utc::now().timestamp_micros())
            .then_some(())
    })
    .await;

    // Two new servers start together on the old schema.
    let (a, b) = tokio::join!(e.start_on(db, &[], &[]), e.start_on(db, &[], &[]));
    let (version, known, recorded) = migrations(e, db).await;
    assert_eq!((version, recorded as i64), (known, known));
    // The parked operation is approved on one and finishes; the running one is taken over.
    let detail = wait_status(e, &a, &parked, &alice, "waiting_for_human").await;
    approve_all(e, &b, &parked, &alice, &detail).await;
    wait_status(e, &a, &parked, &alice, "done").await;
    let done = wait_status(e, &b, &running, &alice, "done").await;
    assert_eq!(done["operation"]["finish_reason"], "completed", "{done}");
    assert_eq!(e.ledger_lines(), 1, "the approved call ran once");
    // 2 before the upgrade (one per operation), 1 for the approved one after it, 2 for the
    // one taken over (its interrupted call asked again, then its answer).
    assert_eq!(e.model.requests().len(), 5);
}

#[tokio::test]
async fn an_upgrade_on_sqlite_migrates_once_and_continues_a_parked_and_a_running_operation() {
    let e = env(vec![]).await;
    let db = e.dir.join("upgrade.db");
    let db = db.to_str().unwrap();
    an_upgrade_with_operations_in_flight(&e, db, &format!("sqlite://{db}")).await;
}

#[tokio::test]
async fn an_upgrade_on_postgres_migrates_once_and_continues_a_parked_and_a_running_operation() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "an_upgrade_on_postgres_migrates_once_and_continues_a_parked_and_a_running_operation",
        "rein_upgrade_e2e",
    )
    .await
    else {
        return;
    };
    let e = env(vec![]).await;
    an_upgrade_with_operations_in_flight(&e, &scratch.url, &scratch.url).await;
    scratch.drop().await;
}

#[tokio::test]
async fn an_older_rein_refuses_a_newer_schema_naming_both_versions_and_writes_nothing() {
    let e = env(vec![]).await;
    let db = e.dir.join("newer.db");
    let db = db.to_str().unwrap();
    let (_, known, _) = migrations(&e, db).await;
    // A newer release migrated it (a migration this build does not know, which older builds
    // do not survive).
    let url = format!("sqlite://{db}");
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO rein_schema (version, description, applied_at, checksum, oldest_binary) \
         VALUES ($1, 'a newer release', '2027-01-01T00:00:00Z', 'x', $1)",
    )
    .bind(known + 1)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let before = std::fs::read(db).unwrap();
    for args in [vec!["op", "list"], vec!["migrate"]] {
        let out = e.command_on(db, &args).output().await.unwrap();
        assert!(!out.status.success(), "{args:?} ran on a newer schema");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!("schema is at version {}", known + 1))
                && said.contains(&format!("newer than this rein knows ({known})")),
            "{said}"
        );
    }
    let out = e
        .command_on(db, &["serve", "--addr", "127.0.0.1:0"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("newer than this rein knows"));
    assert_eq!(std::fs::read(db).unwrap(), before, "nothing was written");
}

/// SIGTERM `rein` while its operation's model call is under way; `continue_on` (another
/// server already running, or one started after the stop) finishes it. Returns how long after
/// the stopped server exited the operation was done.
async fn sigterm_hands_over(e: &Env, db: &str, second_first: bool) -> Duration {
    e.model.route(
        "hand-over",
        vec![
            ledger("l1", "once").after(Duration::from_millis(1500)),
            Canned::openai_text("Appended once."),
        ],
    );
    let alice = e
        .token_on(db, &["token", "create", "--user", "alice"])
        .await;
    // Leases long enough that nothing is taken over by one running out.
    let mut first = e.start_on(db, &["--lease-secs", "60"], &[]).await;
    let second = if second_first {
        Some(e.start_on(db, &["--lease-secs", "60"], &[]).await)
    } else {
        None
    };
    e.create_agents(
        &first,
        &alice,
        &[("hand-over", json!({"system_role": "hand-over"}))],
    )
    .await;
    let op = e
        .create_operation(
            &first,
            &alice,
            json!({"input": "Append.", "approval": "auto-run", "agent": "hand-over"}),
        )
        .await;
    // A balancer's health check: no token, the schema's version.
    let (status, health) = e.call(&first, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], "ok");
    assert!(health["schema_version"].as_i64().unwrap() >= 21, "{health}");
    eventually("the model call under way", || async {
        (!e.model.requests().is_empty()).then_some(())
    })
    .await;
    let mut stream = e.events(&first, &op, &alice, None).await;
    let pid = first.child.id().unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::time::timeout(Duration::from_secs(30), first.child.wait())
        .await
        .expect("the server exits within its grace period")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let exited = tokio::time::Instant::now();
    // The stream ended with a reconnect hint (clients come back with Last-Event-ID).
    let mut seen = Vec::new();
    stream.rest(&mut seen).await;
    assert_eq!(stream.retry, Some(1000), "a retry hint before the end");
    first
        .wait_for("rein: stopped; 1 operation(s) handed over, 0 left to their lease")
        .await;
    let second = match second {
        Some(s) => s,
        None => e.start_on(db, &["--lease-secs", "60"], &[]).await,
    };
    let done = wait_status(e, &second, &op, &alice, "done").await;
    let took = exited.elapsed();
    assert_eq!(done["operation"]["finish_reason"], "completed", "{done}");
    // The step under way when the signal came committed once; the tool ran once; the model
    // was asked once more by the server that took over.
    assert_eq!(e.ledger_lines(), 1, "the ledger call ran once");
    assert_eq!(e.model.requests().len(), 2);
    took
}

#[tokio::test]
async fn sigterm_on_postgres_hands_a_running_operation_to_another_server_at_once() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "sigterm_on_postgres_hands_a_running_operation_to_another_server_at_once",
        "rein_hand_over",
    )
    .await
    else {
        return;
    };
    let e = env(vec![]).await;
    let took = sigterm_hands_over(&e, &scratch.url, true).await;
    eprintln!("hand-over on PostgreSQL: done {took:?} after the stopped server exited");
    // Well before the 60 s lease could have run out: the other server heard of the hand-over.
    assert!(took < Duration::from_secs(20), "{took:?}");
    scratch.drop().await;
}

#[tokio::test]
async fn sigterm_on_sqlite_lets_the_restarted_server_continue_at_once() {
    let e = env(vec![]).await;
    let db = e.dir.join("hand-over.db");
    let took = sigterm_hands_over(&e, db.to_str().unwrap(), false).await;
    eprintln!("hand-over on SQLite: done {took:?} after the stopped server exited");
    assert!(took < Duration::from_secs(20), "{took:?}");
}
