//! `rein serve` as a client sees it: a real server process on a random loopback port, a
//! scripted OpenAI-protocol model server, a SQLite file, tokens made with `rein token create`,
//! SSE read off the wire, and a SIGKILL in the middle of an operation.

use rein_core::OperationId;
use rein_model::testing::{Canned, Server, serve};
use rein_testkit::eventually;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

#[path = "serve/a2a_client.rs"]
mod a2a_client;
#[path = "serve/a2a_server.rs"]
mod a2a_server;
#[path = "serve/acp.rs"]
mod acp;
#[path = "serve/agent_archive.rs"]
mod agent_archive;
#[path = "serve/evals.rs"]
mod evals;
#[path = "serve/fork.rs"]
mod fork;
#[path = "serve/front_ends.rs"]
mod front_ends;
#[path = "serve/goals.rs"]
mod goals;
#[path = "serve/login.rs"]
mod login;
#[path = "serve/mcp_server.rs"]
mod mcp_server;
#[path = "serve/own_mcp.rs"]
mod own_mcp;
#[path = "serve/own_providers.rs"]
mod own_providers;
#[path = "serve/portable.rs"]
mod portable;
#[path = "serve/queue.rs"]
mod queue;
#[path = "serve/remote.rs"]
mod remote;
#[path = "serve/replay.rs"]
mod replay;
#[path = "serve/replicas.rs"]
mod replicas;
#[path = "serve/task_approvals.rs"]
mod task_approvals;
#[path = "serve/users.rs"]
mod users;
#[path = "serve/workdir.rs"]
mod workdir;

struct Env {
    dir: PathBuf,
    model: Server,
    http: reqwest::Client,
    /// The database the test's `rein` processes share (SQLite, or PostgreSQL in the matrix).
    db: rein_testkit::E2eDatabase,
}

/// A finished process as the tests read it: its exit code, stdout and stderr.
fn shaped(out: std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A running `rein serve`.
struct Rein {
    child: Child,
    base: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

/// A server the test did not stop itself ends with SIGTERM, as in production, so it shuts down
/// cleanly and an instrumented build writes its coverage (a SIGKILL would lose it); one still
/// running after 2 s is killed.
impl Drop for Rein {
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else {
            return;
        };
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.start_kill();
    }
}

impl Rein {
    fn saw(&self, needle: &str) -> bool {
        self.stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
    }

    async fn wait_for(&self, needle: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !self.saw(needle) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "`{needle}` did not appear within 20 s in:\n{}",
                self.stderr.lock().unwrap().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn env(responses: Vec<Canned>) -> Env {
    let dir = std::env::temp_dir().join(format!("rein-serve-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = rein_testkit::E2eDatabase::new(&dir).await;
    Env {
        db,
        dir,
        model: serve(responses, 3).await,
        // No pooled connections: a server that refused an oversized body closes that
        // connection, and a request must not be sent on it afterwards.
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap(),
    }
}

impl Env {
    fn db(&self) -> String {
        self.db.url.clone()
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_on(&self.db(), args)
    }

    /// `rein` on database `db` (a SQLite path or a postgres:// URL).
    fn command_on(&self, db: &str, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(["--db", db]).args(args);
        c.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", &self.dir)
            .env("OPENAI_BASE_URL", format!("{}/v1", self.model.base))
            .env("OPENAI_API_KEY", "sk-test")
            .env("REIN_TEST_TOOLS", "1")
            .env("REIN_TEST_LEDGER", self.dir.join("ledger.txt"));
        c
    }

    async fn token(&self, user: &str) -> String {
        self.token_with(&["token", "create", "--user", user]).await
    }

    /// `rein --server URL ARGS` with `REIN_TOKEN=token` (none when `None`): the CLI on another
    /// machine, with no database of its own and no provider key.
    fn remote(&self, rein: &Rein, token: Option<&str>, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(["--server", &rein.base]).args(args);
        c.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", self.dir.join("elsewhere"));
        if let Some(t) = token {
            c.env("REIN_TOKEN", t);
        }
        c
    }

    /// [`Env::remote`] run to its end: the exit code, stdout and stderr.
    async fn on_server(&self, rein: &Rein, token: &str, args: &[&str]) -> (i32, String, String) {
        shaped(self.remote(rein, Some(token), args).output().await.unwrap())
    }

    /// `rein connect` as device `laptop` working in `dir`, with device token `token` and
    /// `extra` arguments; quiet, and stopped with the test.
    fn laptop(&self, rein: &Rein, dir: &std::path::Path, token: &str, extra: &[&str]) -> Command {
        let dir = dir.display().to_string();
        let mut c = self.command(&[
            "--server",
            &rein.base,
            "connect",
            "--name",
            "laptop",
            "--workdir",
            &dir,
        ]);
        c.args(extra)
            .env("REIN_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        c
    }

    /// A device token of `user` for device `device`.
    async fn device_token(&self, user: &str, device: &str) -> String {
        self.token_with(&["token", "create", "--user", user, "--device", device])
            .await
    }

    async fn token_with(&self, args: &[&str]) -> String {
        self.token_on(&self.db(), args).await
    }

    /// `rein token create …` (`args`) on database `db`; the token printed.
    async fn token_on(&self, db: &str, args: &[&str]) -> String {
        let out = self.command_on(db, args).output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    async fn start(&self, extra: &[(&str, &str)]) -> Rein {
        self.start_with(&[], extra).await
    }

    /// `rein serve` with extra flags (`--no-auth`, ...) and environment.
    async fn start_with(&self, flags: &[&str], extra: &[(&str, &str)]) -> Rein {
        self.start_on(&self.db(), flags, extra).await
    }

    /// `rein serve` on database `db` (a SQLite path or a postgres:// URL).
    async fn start_on(&self, db: &str, flags: &[&str], extra: &[(&str, &str)]) -> Rein {
        let mut c = self.command_on(
            db,
            &["serve", "--addr", "127.0.0.1:0", "--heartbeat-secs", "1"],
        );
        c.args(flags);
        for (k, v) in extra {
            c.env(k, v);
        }
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        let served = rein_testkit::listening(&mut c).await;
        Rein {
            child: served.child,
            base: served.base,
            stderr: served.stderr,
        }
    }

    /// `rein settings rotate-key` into `rotated.key` in the test's directory, expecting
    /// `resealed` stored secrets to move: the new key's file and what the command said.
    async fn rotate_key(&self, resealed: usize) -> (PathBuf, String) {
        let new_key = self.dir.join("rotated.key");
        let out = self
            .command(&[
                "settings",
                "rotate-key",
                "--new-key-file",
                &new_key.display().to_string(),
            ])
            .output()
            .await
            .unwrap();
        let (code, out, err) = shaped(out);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains(&format!("resealed {resealed} stored keys")),
            "{err}"
        );
        (new_key, out + &err)
    }

    /// `secret` is in none of what the processes wrote: the server's `log`, the commands'
    /// output (`said`), the database's files (SQLite).
    fn assert_nowhere(&self, secret: &str, log: &str, said: &str) {
        assert!(!log.contains(secret), "the server's log holds the secret");
        assert!(
            !said.contains(secret),
            "a command's output holds the secret"
        );
        if !self.db().starts_with("postgres") {
            for file in [self.db(), format!("{}-wal", self.db())] {
                if let Ok(bytes) = std::fs::read(&file) {
                    assert!(
                        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                        "{file} holds the secret"
                    );
                }
            }
        }
    }

    fn ledger_lines(&self) -> usize {
        std::fs::read_to_string(self.dir.join("ledger.txt"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    async fn call(
        &self,
        rein: &Rein,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{}{path}", rein.base),
        );
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.unwrap();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                panic!("not JSON ({status}): {}", String::from_utf8_lossy(&bytes))
            })
        };
        (status, value)
    }

    /// `POST /v1/operations` with `body`, expecting `202`; the new operation's id.
    async fn create_operation(&self, rein: &Rein, token: &str, body: Value) -> String {
        let (status, created) = self
            .call(rein, "POST", "/v1/operations", Some(token), Some(body))
            .await;
        assert_eq!(status, 202, "{created}");
        created["operation_id"].as_str().unwrap().to_owned()
    }

    /// `POST /v1/agents` for each `(name, config)`, expecting `201`.
    async fn create_agents(&self, rein: &Rein, token: &str, agents: &[(&str, Value)]) {
        for (name, config) in agents {
            let (status, body) = self
                .call(
                    rein,
                    "POST",
                    "/v1/agents",
                    Some(token),
                    Some(json!({"name": name, "config": config})),
                )
                .await;
            assert_eq!(status, 201, "{body}");
        }
    }

    async fn events(&self, rein: &Rein, op: &str, token: &str, last: Option<u64>) -> Sse {
        self.sse(rein, &format!("/v1/operations/{op}/events"), token, last)
            .await
    }

    /// `GET path` as Server-Sent Events, resumed after `last` when given.
    async fn sse(&self, rein: &Rein, path: &str, token: &str, last: Option<u64>) -> Sse {
        let mut req = self
            .http
            .get(format!("{}{path}", rein.base))
            .header("authorization", format!("Bearer {token}"));
        if let Some(l) = last {
            req = req.header("last-event-id", l.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Sse {
            resp,
            buf: String::new(),
            retry: None,
        }
    }
}

/// One SSE message.
#[derive(Debug)]
struct Message {
    id: Option<u64>,
    event: Option<String>,
    data: Value,
}

struct Sse {
    resp: reqwest::Response,
    buf: String,
    /// The last `retry:` the server sent (a reconnect hint), in milliseconds.
    retry: Option<u64>,
}

impl Sse {
    /// The next message (heartbeat comments skipped); `None` when the server ended the stream.
    async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                let (mut id, mut event, mut data) = (None, None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("retry: ") {
                        self.retry = v.trim().parse().ok();
                    }
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.parse().unwrap());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if data.is_empty() {
                    continue; // a heartbeat comment
                }
                return Some(Message {
                    id,
                    event,
                    data: serde_json::from_str(&data).unwrap(),
                });
            }
            match tokio::time::timeout(Duration::from_secs(30), self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(Ok(None)) | Ok(Err(_)) => return None,
                Err(_) => panic!("no SSE data for 30 s"),
            }
        }
    }

    /// Committed events until one of type `until` (included), skipping live previews.
    async fn until(&mut self, until: &str, seen: &mut Vec<Message>) {
        while let Some(m) = self.next().await {
            if m.id.is_none() {
                assert_eq!(m.event.as_deref(), Some("live"));
                continue;
            }
            let done = m.data["type"] == until;
            seen.push(m);
            if done {
                return;
            }
        }
        let types: Vec<String> = seen.iter().map(|m| m.data["type"].to_string()).collect();
        panic!("the stream ended before a `{until}` event: {types:?}");
    }

    /// Committed events until the server ends the stream.
    async fn rest(&mut self, seen: &mut Vec<Message>) {
        while let Some(m) = self.next().await {
            if m.id.is_some() {
                seen.push(m);
            }
        }
    }
}

fn ledger(id: &str, entry: &str) -> Canned {
    Canned::openai_tools(&[(id, "ledger__append", &json!({"entry": entry}).to_string())])
}

/// How a protocol SDK spawns `rein --db DB ARGS` on `e`'s database (`command`, `args` and
/// `env`: the scripted model's address and key, the test's home, coverage's profile).
fn spawned(e: &Env, args: &[&str]) -> Value {
    let mut env_vars: serde_json::Map<String, Value> = rein_testkit::coverage_env()
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect();
    for (k, v) in [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("REIN_HOME", e.dir.display().to_string()),
        ("OPENAI_BASE_URL", format!("{}/v1", e.model.base)),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
    ] {
        env_vars.insert(k.to_owned(), json!(v));
    }
    let mut all = vec![json!("--db"), json!(e.db())];
    all.extend(args.iter().map(|a| json!(a)));
    json!({"command": env!("CARGO_BIN_EXE_rein"), "args": all, "env": env_vars})
}

/// Run `script` (in tests/clients) with node; its last line is its report, which must not
/// name an error.
async fn node_report(script: &str, args: &[&str], envs: &[(&str, &str)]) -> Value {
    let run = Command::new("node")
        .arg(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/clients")
                .join(script),
        )
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
            panic!(
                "no report from {script}:\n{stdout}\n{}",
                String::from_utf8_lossy(&run.stderr)
            )
        });
    assert!(
        report.get("error").is_none(),
        "{script} failed: {}",
        report["error"]
    );
    report
}

fn calc(id: &str, expr: &str) -> Canned {
    Canned::openai_tools(&[(
        id,
        "calculator__evaluate",
        &json!({"expression": expr}).to_string(),
    )])
}

/// Every event exactly once, in order, none missing, the end included.
fn assert_gapless(seen: &[Message]) {
    let ids: Vec<u64> = seen.iter().map(|m| m.id.unwrap()).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>(), "{ids:?}");
    for (m, id) in seen.iter().zip(&ids) {
        assert_eq!(m.data["seq"].as_u64(), Some(*id));
    }
    assert!(seen.iter().any(|m| m.data["type"] == "done"));
}

#[tokio::test]
async fn create_stream_approve_and_resume_the_stream_with_last_event_id() {
    let e = env(vec![ledger("l1", "paid"), Canned::openai_text("Appended.")]).await;
    let alice = e.token("alice").await;
    let rein = e.start(&[]).await;
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            // Allow-list mode with an empty list: every call asks first.
            Some(json!({"input": "Append `paid` to the ledger.", "approval": "allow-list"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    assert_eq!(created["topic_id"], format!("topic_{op}"));

    // Watch until the approval is requested, then go away mid-operation.
    let mut seen = Vec::new();
    let mut first = e.events(&rein, &op, &alice, None).await;
    first.until("human_approve_required", &mut seen).await;
    drop(first);
    let (_, detail) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(detail["operation"]["status"], "waiting_for_human");
    assert_eq!(detail["pending"][0]["call"]["id"], "l1");
    assert!(!detail["steps"].as_array().unwrap().is_empty());
    assert_eq!(e.ledger_lines(), 0, "nothing ran before the approval");

    let decision = json!({"decisions": [{"tool_call_id": "l1", "decision": "approve"}]});
    let (status, body) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            Some(decision.clone()),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    // Once the decision is recorded, a second one is refused for that reason (not because the
    // operation happens to be running by then).
    eventually("the approval recorded", || async {
        let (_, list) = e
            .call(
                &rein,
                "GET",
                &format!("/v1/operations/{op}/interventions"),
                Some(&alice),
                None,
            )
            .await;
        (list[0]["status"] != "pending").then_some(())
    })
    .await;
    let (status, body) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            Some(decision),
        )
        .await;
    assert_eq!(status, 409, "decisions are single-use: {body}");
    assert_eq!(body["error"]["code"], "conflict");
    assert_eq!(body["error"]["message"], "tool call l1 was already decided");

    // Reconnect from the last event seen: the rest, once each, then the stream ends.
    let last = seen.last().unwrap().id;
    let mut second = e.events(&rein, &op, &alice, last).await;
    second.rest(&mut seen).await;
    assert_gapless(&seen);
    assert_eq!(e.ledger_lines(), 1);
    let (_, detail) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(detail["operation"]["status"], "done");
    let (_, interventions) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(interventions[0]["status"], "approved");

    // A finished operation's stream replays everything and ends; `?after=` works as well.
    let mut replay = e.events(&rein, &op, &alice, None).await;
    let mut all = Vec::new();
    replay.rest(&mut all).await;
    assert_gapless(&all);
    let (_, messages) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/topics/topic_{op}/messages"),
            Some(&alice),
            None,
        )
        .await;
    let texts: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"][0]["text"].as_str())
        .collect();
    assert!(texts.contains(&"Appended."), "{texts:?}");
}

/// A decision the server answered `202` survives the server: killed right after the answer,
/// before the step the approval allows, the restarted server carries the approval out (the
/// soak found one lost this way: acknowledged, then never recorded).
#[tokio::test]
async fn an_approval_answered_202_is_carried_out_after_a_crash_before_its_step() {
    let e = env(vec![ledger("l1", "paid"), Canned::openai_text("Appended.")]).await;
    let alice = e.token("alice").await;
    let rein = e
        .start(&[
            ("REIN_TEST_PAUSE_AT", "decide:l1"),
            ("REIN_LEASE_SECS", "2"),
        ])
        .await;
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "Append `paid` to the ledger.", "approval": "allow-list"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    wait_status(&e, &rein, &op, &alice, "waiting_for_human").await;
    let (status, body) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            Some(json!({"decisions": [{"tool_call_id": "l1", "decision": "approve"}]})),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    // Recorded by the time it was answered, not by the run that carries it out.
    let (_, list) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}/interventions"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(list[0]["status"], "approved", "{list}");
    rein.wait_for("REIN_TEST_PAUSED decide:l1").await;
    let mut rein = rein;
    rein.child.kill().await.unwrap();
    assert_eq!(e.ledger_lines(), 0, "killed before the approved call ran");

    let restarted = e.start(&[("REIN_LEASE_SECS", "2")]).await;
    let done = wait_status(&e, &restarted, &op, &alice, "done").await;
    assert_eq!(done["operation"]["finish_reason"], "completed");
    assert_eq!(e.ledger_lines(), 1, "the approved call ran once");
}

#[tokio::test]
async fn a_server_killed_mid_operation_resumes_it_on_restart_and_the_stream_continues() {
    // Answers by turn: the answer's model call may run beside the commit the kill stops
    // (pipelined durability), and the resumed step asks again.
    let e = env(Vec::new()).await;
    e.model.by_turn(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
    ]);
    let alice = e.token("alice").await;
    // A short lease, so the restarted server may take the dead one's operation over soon.
    let rein = e
        .start(&[("REIN_TEST_PAUSE_AT", "commit:2"), ("REIN_LEASE_SECS", "2")])
        .await;
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "What is 17*23?"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    let mut seen = Vec::new();
    let mut stream = e.events(&rein, &op, &alice, None).await;
    // Two steps are committed (the model's tool call, the tool's result); the process then
    // stops dead before the third.
    stream.until("tool_result", &mut seen).await;
    rein.wait_for("REIN_TEST_PAUSED commit:2").await;
    let mut rein = rein;
    rein.child.kill().await.unwrap();
    // The client sees the connection drop.
    stream.rest(&mut seen).await;
    let last = seen.last().unwrap().id;

    let restarted = e.start(&[("REIN_LEASE_SECS", "2")]).await;
    let mut resumed = e.events(&restarted, &op, &alice, last).await;
    resumed.rest(&mut seen).await;
    assert_gapless(&seen);
    let answer = seen
        .iter()
        .rev()
        .find(|m| m.data["type"] == "llm_result")
        .unwrap();
    assert!(answer.data.to_string().contains("391"), "{}", answer.data);
    restarted.wait_for("resumed operations").await;
    // The restart did not repeat the committed first step: one request without a tool
    // result. The answer was asked once or, when its call ran beside the commit the kill
    // stopped, twice.
    let requests = e.model.requests();
    let first = requests
        .iter()
        .filter(|r| {
            r.body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().all(|m| m["role"] != "tool"))
        })
        .count();
    assert_eq!(first, 1, "the committed model call was not repeated");
    assert!(
        (2..=3).contains(&requests.len()),
        "{} calls",
        requests.len()
    );
}

/// `video.generate` on Gemini's Veo: the server is killed while it polls the render (the
/// job recorded with the call), the restarted server takes the operation over and waits for
/// the same job (submitted once, never twice), downloads the video once, keeps it as an
/// artifact of the conversation and charges the catalog's price per second.
#[tokio::test]
async fn a_video_render_survives_a_restart_and_is_submitted_and_downloaded_once() {
    const MP4: &[u8] = b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom a paper boat, rendered";
    const JOB: &str = "models/veo-3.1-generate-preview/operations/render-1";
    let e = env(vec![
        Canned::openai_tools(&[(
            "v1",
            "video__generate",
            &json!({"prompt": "A paper boat on a pond", "seconds": 4, "aspect_ratio": "9:16"})
                .to_string(),
        )]),
        Canned::json(200, &json!({ "name": JOB })),
        Canned::json(
            200,
            &json!({"name": JOB, "done": false, "metadata": {"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningMetadata"}}),
        ),
    ])
    .await;
    let download = format!("{}/v1beta/files/render-1:download?alt=media", e.model.base);
    e.model.push(Canned::json(
        200,
        &json!({"name": JOB, "done": true, "response": {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
            "generateVideoResponse": {"generatedSamples": [{"video": {"uri": download}}]}
        }}),
    ));
    e.model.push(Canned {
        status: 200,
        headers: vec![("content-type".into(), "video/mp4".into())],
        body: MP4.to_vec(),
        max_piece: 16,
        stall_after: None,
        delay: None,
    });
    e.model.push(Canned::openai_text("Here is the paper boat."));
    let config = e.dir.join("video.toml");
    std::fs::write(
        &config,
        "video_model = \"gemini/veo-3.1-generate-preview\"\nvideo_poll_secs = 0.05\n",
    )
    .unwrap();
    let gemini = format!("{}/v1beta", e.model.base);
    let settings = [
        ("REIN_CONFIG", config.to_str().unwrap()),
        ("GEMINI_BASE_URL", gemini.as_str()),
        ("GEMINI_API_KEY", "g-test"),
        ("REIN_LEASE_SECS", "2"),
    ];
    let alice = e.token("alice").await;
    let mut paused = settings.to_vec();
    paused.push(("REIN_TEST_PAUSE_AT", "job:v1"));
    let mut rein = e.start(&paused).await;
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "Film a paper boat."})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    // The job is recorded; the process dies before its first poll.
    rein.wait_for("REIN_TEST_PAUSED job:v1").await;
    rein.child.kill().await.unwrap();
    let restarted = e.start(&settings).await;
    let done = wait_status(&e, &restarted, &op, &alice, "done").await;
    let requests = e.model.requests();
    let submitted: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with(":predictLongRunning"))
        .collect();
    assert_eq!(submitted.len(), 1, "the render was submitted once");
    assert!(submitted[0].refused.is_none(), "{:?}", submitted[0].refused);
    assert_eq!(
        submitted[0].path,
        "/v1beta/models/veo-3.1-generate-preview:predictLongRunning"
    );
    assert_eq!(
        submitted[0].body,
        json!({"instances": [{"prompt": "A paper boat on a pond"}], "parameters": {"aspectRatio": "9:16", "durationSeconds": 4}})
    );
    assert_eq!(submitted[0].header("x-goog-api-key"), "g-test");
    let polls = requests
        .iter()
        .filter(|r| r.method == "GET" && r.path == format!("/v1beta/{JOB}"))
        .count();
    assert_eq!(polls, 2, "polled after the restart until done");
    let downloads: Vec<_> = requests
        .iter()
        .filter(|r| r.path.starts_with("/v1beta/files/render-1:download"))
        .collect();
    assert_eq!(downloads.len(), 1, "downloaded once");
    assert_eq!(downloads[0].header("x-goog-api-key"), "g-test");
    // The video is the conversation's, with the bytes the provider sent.
    let (status, listed) = e
        .call(&restarted, "GET", "/v1/artifacts", Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{listed}");
    let artifacts = listed["data"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{listed}");
    assert_eq!(artifacts[0]["name"], "video-1.mp4");
    assert_eq!(artifacts[0]["media_type"], "video/mp4");
    assert_eq!(artifacts[0]["size"], MP4.len());
    let result = requests
        .iter()
        .rfind(|r| r.path.ends_with("/chat/completions"))
        .unwrap()
        .body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .map(rein_model::testing::data_text)
        .unwrap();
    assert!(
        result.starts_with("Rendered 1 video of 4 s with gemini/veo-3.1-generate-preview."),
        "{result}"
    );
    // Four seconds at the catalog's $0.40 a second, besides the model's two calls.
    let cost = done["operation"]["cost"].as_f64().unwrap();
    assert!((1.6..1.7).contains(&cost), "{cost}");
}

#[tokio::test]
async fn the_cli_drives_a_server_with_server_and_rein_token() {
    let e = env(vec![
        ledger("l1", "remote"),
        Canned::openai_text("Done remotely."),
        Canned::openai_text("Ran on the server."),
    ])
    .await;
    let alice = e.token("alice").await;
    let rein = e.start(&[]).await;
    let (_, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "Append remote.", "approval": "allow-list"})),
        )
        .await;
    let op = created["operation_id"].as_str().unwrap().to_owned();
    wait_status(&e, &rein, &op, &alice, "waiting_for_human").await;
    let remote = |args: &[&str], token: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(["--server", &rein.base]).args(args);
        c.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", &e.dir);
        if let Some(t) = token {
            c.env("REIN_TOKEN", t);
        }
        c
    };
    let out = remote(&["op", "list"], None).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("set REIN_TOKEN"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = remote(&["op", "show", &op], Some(&alice))
        .output()
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("waiting_for_human") && shown.contains("pending    l1 ledger/append"),
        "the same table as on this machine: {shown}"
    );
    // Approving follows the operation on the server to where it stops, printed as a local
    // run prints it, and ends with the same summary and exit code.
    let out = remote(&["approve", &op], Some(&alice))
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("Done remotely."),
        "the answer: {stdout} {stderr}"
    );
    assert!(
        stderr.contains("← succeeded: appended remote")
            && stderr.contains("done (completed)")
            && stderr.contains("· 4 steps ·"),
        "{stderr}"
    );
    let out = remote(&["op", "events", &op, "--follow"], Some(&alice))
        .output()
        .await
        .unwrap();
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = events.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert!(
        events.iter().any(|v| v["type"] == "done"),
        "followed to the end"
    );
    let out = remote(&["op", "events", &op, "--after", "3"], Some(&alice))
        .output()
        .await
        .unwrap();
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], 4);
    assert_eq!(e.ledger_lines(), 1);
    let out = remote(&["--json", "op", "list"], Some(&alice))
        .output()
        .await
        .unwrap();
    let listed: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(listed["id"], op);
    assert_eq!(listed["status"], "done");
    assert_eq!(listed["prompt"], "Append remote.", "what it was asked");
    // The table reads the server's records with the same types the local one does.
    let out = remote(&["op", "list"], Some(&alice))
        .output()
        .await
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.starts_with("operation "), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with(op.as_str())
            && l.contains(" done ")
            && l.ends_with("  Append remote.")),
        "{table}"
    );
    let out = remote(
        &[
            "agent",
            "create",
            "remote-helper",
            "--model",
            "openai/gpt-4o",
        ],
        Some(&alice),
    )
    .output()
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, agent) = e
        .call(&rein, "GET", "/v1/agents/remote-helper", Some(&alice), None)
        .await;
    assert_eq!(
        (status, agent["config"]["model"].as_str()),
        (200, Some("openai/gpt-4o"))
    );
    // `run` starts the operation on the server as the agent named, with the flags over it,
    // and prints it as a local run does.
    let out = remote(
        &[
            "run",
            "--agent",
            "remote-helper",
            "--max-steps",
            "7",
            "Say it.",
        ],
        Some(&alice),
    )
    .output()
    .await
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Ran on the server."), "{stdout} {stderr}");
    assert!(stderr.contains("done (completed)"), "{stderr}");
    let (_, ops) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    let ran = &ops[0];
    assert_eq!(ran["prompt"], "Say it.");
    let (_, detail) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{}", ran["id"].as_str().unwrap()),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(detail["spec"]["agent"]["name"], "remote-helper");
    assert_eq!(detail["spec"]["model"]["model"], "gpt-4o", "{detail}");
    assert_eq!(detail["spec"]["max_steps"], 7, "{detail}");
    let sent = &e.model.requests()[2].body;
    assert_eq!(sent["model"], "gpt-4o", "the agent's model: {sent}");
    // A file to attach is read on this machine: one that is not there is refused before
    // anything is uploaded or starts on the server.
    let out = remote(
        &["run", "--attach", "/nonexistent/rein/nope.txt", "x"],
        Some(&alice),
    )
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot read attachment /nonexistent/rein/nope.txt"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, after) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    assert_eq!(
        after.as_array().unwrap().len(),
        ops.as_array().unwrap().len()
    );
    let (_, files) = e.call(&rein, "GET", "/v1/files", Some(&alice), None).await;
    assert_eq!(files["data"], json!([]));
    let (_, after) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    assert_eq!(
        after.as_array().unwrap().len(),
        2,
        "nothing started: {after}"
    );
    let out = remote(&["worker"], Some(&alice)).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("drop --server"));
}

#[tokio::test]
async fn answer_reject_grants_agents_and_models_run_against_a_server_as_they_run_here() {
    let question = json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    let e = env(vec![
        Canned::openai_tools(&[("q1", "ask_user__ask", &question.to_string())]),
        Canned::openai_text("Deploying."),
        ledger("l2", "refused"),
        Canned::openai_text("Understood, not now."),
        ledger("l3", "granted"),
        Canned::openai_text("Appended."),
    ])
    .await;
    let alice = e.token("alice").await;
    let rein = e.start(&[]).await;
    let remote = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(["--server", &rein.base]).args(args);
        c.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", &e.dir)
            .env("REIN_TOKEN", &alice)
            .stdin(Stdio::null());
        c
    };
    let run = |args: &'static [&'static str]| {
        let mut c = remote(args);
        async move {
            let out = c.output().await.unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };
    let start = |input: &'static str, approval: &'static str| {
        let (e, rein, alice) = (&e, &rein, &alice);
        async move {
            let (status, created) = e
                .call(
                    rein,
                    "POST",
                    "/v1/operations",
                    Some(alice),
                    Some(json!({"input": input, "approval": approval})),
                )
                .await;
            assert_eq!(status, 202, "{created}");
            let op = created["operation_id"].as_str().unwrap().to_owned();
            wait_status(e, rein, &op, alice, "waiting_for_human").await;
            op
        }
    };

    // A question, answered from the command line: it was refused with --server before.
    let op = start("Ship it if I agree.", "auto-run").await;
    let mut c = remote(&["answer", &op, "--option", "yes"]);
    let out = c.output().await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Deploying."), "{stdout}");
    assert!(stderr.contains("done (completed)"), "{stderr}");

    // A rejection with a reason: nothing runs, the model reads why.
    let op = start("Append refused.", "allow-list").await;
    let mut c = remote(&["reject", &op, "--reason", "not now"]);
    let out = c.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Understood, not now."));
    assert_eq!(e.ledger_lines(), 0, "a rejected call never runs");

    // Approved "always for this operation": the grant is the server's, listed and revoked
    // from here.
    let op = start("Append granted.", "allow-list").await;
    let mut c = remote(&["approve", &op, "--call", "l3", "--grant", "operation"]);
    let out = c.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("granted ledger"), "{stderr}");
    assert_eq!(e.ledger_lines(), 1);
    let (code, listed, _) = run(&["--json", "grant", "list"]).await;
    assert_eq!(code, Some(0));
    let grant: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(
        (grant["scope"].as_str(), grant["target"].as_str()),
        (Some("operation"), Some(op.as_str()))
    );
    let id = grant["id"].as_str().unwrap().to_owned();
    let mut c = remote(&["grant", "revoke", &id]);
    let out = c.output().await.unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("revoked {id}")));
    let (_, listed, stderr) = run(&["grant", "list"]).await;
    assert!(
        listed.is_empty() && stderr.contains("no grants"),
        "{listed}"
    );

    // Agents: made, changed (its version counts up), listed, deleted; a missing one is the
    // server's 404 message.
    let (code, _, stderr) = run(&["agent", "create", "helper", "--model", "openai/gpt-4o"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let (code, edited, _) = run(&["--json", "agent", "edit", "helper", "--max-steps", "5"]).await;
    assert_eq!(code, Some(0));
    let edited: Value = serde_json::from_str(edited.trim()).unwrap();
    assert_eq!(
        (
            edited["version"].as_u64(),
            edited["config"]["max_steps"].as_u64(),
            edited["config"]["model"].as_str()
        ),
        (Some(2), Some(5), Some("openai/gpt-4o"))
    );
    let (_, listed, _) = run(&["agent", "list"]).await;
    assert!(
        listed.starts_with("helper ") && listed.contains("openai/gpt-4o"),
        "{listed}"
    );
    let (code, _, _) = run(&["agent", "delete", "helper"]).await;
    assert_eq!(code, Some(0));
    let (code, _, stderr) = run(&["agent", "show", "helper"]).await;
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("no agent `helper`") && stderr.contains("404"),
        "{stderr}"
    );

    // The server's catalog, its default marked.
    let (code, models, _) = run(&["models"]).await;
    assert_eq!(code, Some(0));
    assert!(
        models.lines().any(|l| l == "* openai/gpt-4o-mini"),
        "{models}"
    );
    let (code, devices, _) = run(&["device", "list"]).await;
    assert_eq!((code, devices.as_str()), (Some(0), ""));
}

#[tokio::test]
async fn sigterm_shuts_down_promptly_with_a_stream_open() {
    let e = env(vec![ledger("l1", "x")]).await;
    let alice = e.token("alice").await;
    let mut rein = e.start(&[]).await;
    let (_, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "Append.", "approval": "allow-list"})),
        )
        .await;
    let op = created["operation_id"].as_str().unwrap().to_owned();
    let mut stream = e.events(&rein, &op, &alice, None).await;
    let mut seen = Vec::new();
    stream.until("human_approve_required", &mut seen).await;
    let pid = rein.child.id().unwrap();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = tokio::time::timeout(Duration::from_secs(10), rein.child.wait())
        .await
        .expect("the server exits within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    // The parked operation is left as it was, ready for the next process.
    let restarted = e.start(&[]).await;
    let (_, d) = e
        .call(
            &restarted,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(d["operation"]["status"], "waiting_for_human");
}

#[tokio::test]
async fn the_readme_main_command_serves_the_shipped_cassette_offline() {
    let dir = std::env::temp_dir().join(format!("rein-readme-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let cassette = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cassettes/demo.jsonl");
    // As in the README, with a random port and a throwaway home instead of ~/.rein.
    let mut child = Command::new(env!("CARGO_BIN_EXE_rein"))
        .arg("--replay")
        .arg(&cassette)
        .args(["serve", "--no-auth", "--addr", "127.0.0.1:0", "--workdir"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cassettes/demo"))
        .env_clear()
        .envs(rein_testkit::coverage_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("server exited");
        if let Some(a) = line.strip_prefix("rein: listening on ") {
            break a.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert!(page.text().await.unwrap().contains("<title>rein</title>"));
    // An operation started with `body`, and its whole log once it ended.
    let start = |body: Value| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let created: Value = serde_json::from_slice(
                &http
                    .post(format!("{base}/v1/operations"))
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap(),
            )
            .unwrap();
            let op = created["operation_id"].as_str().unwrap().to_owned();
            // The log of an ended operation, whole (the stream ends with the operation).
            let log = http
                .get(format!("{base}/v1/operations/{op}/events?live=false"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            (op, log)
        }
    };
    let ask = |input: &'static str| start(json!({ "input": input }));
    // The demo answers its question every time it is asked, not only the first.
    for _ in 0..3 {
        let (_, body) = ask("What is 17 * 23?").await;
        assert!(body.contains("\"type\":\"done\""), "{body}");
        assert!(body.contains("391"), "{body}");
    }
    // A file read in the working directory.
    let (_, body) = ask("What does notes.txt say?").await;
    assert!(body.contains("files__read"), "{body}");
    assert!(body.contains("replayed from a cassette"), "{body}");
    // A shell command waits for approval, then runs, as often as it is asked.
    for _ in 0..2 {
        let created: Value = serde_json::from_slice(
            &http
                .post(format!("{base}/v1/operations"))
                .header("content-type", "application/json")
                .body(json!({"input": "Say hello from the shell."}).to_string())
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap(),
        )
        .unwrap();
        let op = created["operation_id"].as_str().unwrap().to_owned();
        let get = || async {
            serde_json::from_slice::<Value>(
                &http
                    .get(format!("{base}/v1/operations/{op}"))
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap(),
            )
            .unwrap()
        };
        let detail = eventually("the shell call asking for approval", || async {
            let d = get().await;
            (d["operation"]["status"] == "waiting_for_human").then_some(d)
        })
        .await;
        assert_eq!(detail["pending"][0]["call"]["api"], "run", "{detail:#}");
        let decided = http
            .post(format!("{base}/v1/operations/{op}/interventions"))
            .header("content-type", "application/json")
            .body(
                json!({"decisions": [{"tool_call_id": detail["pending"][0]["call"]["id"], "decision": "approve"}]})
                    .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(decided.status().as_u16(), 202);
        let log = http
            .get(format!("{base}/v1/operations/{op}/events?live=false"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(log.contains("\"type\":\"done\""), "{log}");
        assert!(log.contains("The shell says: hello from rein"), "{log}");
    }
    // A question it does not hold gets the demo's note, naming the ones it does.
    let (first, body) = ask("What is 2 + 2?").await;
    assert!(
        body.contains("This demo replays recorded answers"),
        "{body}"
    );
    assert!(!body.contains("is not in the cassette"), "{body}");
    // A request no recording matches (a second question in that conversation) fails
    // visibly, saying why.
    let detail = |op: String| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let body = http
                .get(format!("{base}/v1/operations/{op}"))
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            serde_json::from_slice::<Value>(&body).unwrap()
        }
    };
    let first = detail(first).await;
    let topic = first["operation"]["topic_id"].as_str().unwrap();
    let (op, body) = start(json!({"input": "And 3 + 3?", "topic": topic})).await;
    assert!(body.contains("is not in the cassette"), "{body}");
    let detail = detail(op).await;
    assert_eq!(detail["operation"]["status"], "error", "{detail}");
    assert!(dir.join("rein.db").exists(), "the embedded SQLite file");
}

/// `rein serve --max-running 4` on `db`: 50 concurrent requests of one user give exactly 4
/// operations (the rest 429 with Retry-After, nothing written), and another user still gets
/// one.
async fn running_limit_holds_under_concurrency(db: &str) {
    // The model never finishes its answers, so accepted operations keep running.
    let stalled = || {
        let mut c = Canned::openai_text("thinking very hard about it");
        c.stall_after = Some(60);
        c
    };
    let e = env((0..6).map(|_| stalled()).collect()).await;
    let token = |user: &'static str| {
        let mut c = e.command_on(db, &["token", "create", "--user", user]);
        async move {
            let out = c.output().await.unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        }
    };
    let (alice, bob) = (token("alice").await, token("bob").await);
    let mut c = e.command_on(
        db,
        &["serve", "--addr", "127.0.0.1:0", "--max-running", "4"],
    );
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = c.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("server exited");
        if let Some(a) = line.strip_prefix("rein: listening on ") {
            break a.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let rein = Rein {
        child,
        base,
        stderr: Arc::default(),
    };
    let mut requests = Vec::new();
    for _ in 0..50 {
        let (http, url, token) = (
            e.http.clone(),
            format!("{}/v1/operations", rein.base),
            alice.clone(),
        );
        requests.push(tokio::spawn(async move {
            let resp = http
                .post(url)
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .body(json!({"input": "think"}).to_string())
                .send()
                .await
                .unwrap();
            let retry = resp.headers().get("retry-after").cloned();
            let status = resp.status().as_u16();
            let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
            (status, retry, body)
        }));
    }
    let (mut accepted, mut refused) = (0, 0);
    for r in requests {
        let (status, retry, body) = r.await.unwrap();
        match status {
            202 => accepted += 1,
            429 => {
                refused += 1;
                assert_eq!(body["error"]["code"], "too_many_running", "{body}");
                assert!(retry.is_some(), "429 without Retry-After");
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!((accepted, refused), (4, 46), "on {db}");
    let (_, listed) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    assert_eq!(
        listed.as_array().unwrap().len(),
        4,
        "a refused request writes nothing"
    );
    // The limit is per user.
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "think"})),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn the_running_limit_holds_under_concurrency_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("rein-admit-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    running_limit_holds_under_concurrency(dir.join("rein.db").to_str().unwrap()).await;
}

#[tokio::test]
async fn the_running_limit_holds_under_concurrency_on_postgres() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "the_running_limit_holds_under_concurrency_on_postgres",
        "rein_admit",
    )
    .await
    else {
        return;
    };
    let scoped = scratch.url.clone();
    running_limit_holds_under_concurrency(&scoped).await;
    scratch.drop().await;
}

/// One request a hook receiver got: its `X-Rein-Signature` header, its body, and the status
/// it was answered with.
#[derive(Clone, Debug)]
struct HookHit {
    signature: String,
    body: serde_json::Value,
    status: u16,
}

/// A local HTTP receiver for brief hooks: it answers the first request 500 and the rest 200,
/// keeping every request.
async fn hook_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<HookHit>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(std::sync::Mutex::new(Vec::<HookHit>::new()));
    let kept = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Headers, then as many body bytes as Content-Length says.
            let (head, body) = loop {
                let n = sock.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..i]).to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse().ok())?
                        })
                        .unwrap_or(0);
                    let mut body = buf[i + 4..].to_vec();
                    while body.len() < len {
                        let n = sock.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        body.extend_from_slice(&chunk[..n]);
                    }
                    break (head, body);
                }
            };
            if head.is_empty() {
                continue;
            }
            let signature = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("x-rein-signature")
                        .then(|| v.trim().to_owned())
                })
                .unwrap_or_default();
            let status = {
                let mut h = kept.lock().unwrap();
                let status = if h.is_empty() { 500 } else { 200 };
                h.push(HookHit {
                    signature,
                    body: serde_json::from_slice(&body).unwrap_or_default(),
                    status,
                });
                status
            };
            let reply =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (url, hits)
}

#[tokio::test]
async fn a_failed_heartbeat_run_raises_an_urgent_brief_posted_once_to_the_hook_and_retry_runs_it() {
    let refused = json!({"error": {"message": "model refused", "type": "invalid_request_error"}});
    let e = env(vec![
        Canned::json(400, &refused),
        Canned::json(400, &refused),
    ])
    .await;
    let alice = e.token("alice").await;
    let rein = e.start_with(&["--allow-private-hooks"], &[]).await;
    let (url, hits) = hook_receiver().await;
    let secret = "a-secret-of-24-characters";
    let (status, body) = e
        .call(
            &rein,
            "PUT",
            "/v1/brief-hook",
            Some(&alice),
            Some(json!({"url": url, "secret": "short"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("invalid_hook")),
        "{body}"
    );
    let (status, body) = e
        .call(
            &rein,
            "PUT",
            "/v1/brief-hook",
            Some(&alice),
            Some(json!({"url": url, "secret": secret})),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let (status, task) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "Queue watch", "instruction": "Check the queue.", "every": "1s", "max_executions": 1})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let list = eventually("an urgent error brief", || async {
        let (_, l) = e
            .call(
                &rein,
                "GET",
                "/v1/briefs?unresolved=true",
                Some(&alice),
                None,
            )
            .await;
        (l["briefs"].as_array().is_some_and(|b| !b.is_empty())).then_some(l)
    })
    .await;
    assert_eq!(list["unread"], 1, "{list:#}");
    let brief = &list["briefs"][0];
    assert_eq!(brief["kind"], "error");
    assert_eq!(brief["priority"], "urgent");
    assert_eq!(brief["task_id"], task_id);
    assert_eq!(brief["title"], "Queue watch failed (error)");
    let id = brief["id"].as_str().unwrap().to_owned();

    // The hook: refused once (500), delivered on the retry, signed over the exact body.
    let delivered = eventually("the brief delivered to the hook", || async {
        let h = hits.lock().unwrap().clone();
        h.iter().any(|x| x.status == 200).then_some(h)
    })
    .await;
    assert_eq!(delivered[0].status, 500);
    assert_eq!(delivered[1].body["brief"]["id"], id.as_str());
    let body = serde_json::to_vec(&delivered[1].body).unwrap();
    assert_eq!(
        delivered[1].signature,
        rein_server::brief_hooks::signature(secret, &body)
    );

    // Opening reads it; resolving takes an offered action, once, and retry runs the task.
    let (_, opened) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/briefs/{id}"),
            Some(&alice),
            None,
        )
        .await;
    assert!(opened["read_at"].is_string(), "{opened}");
    let bob = e.token("bob").await;
    let (status, _) = e
        .call(&rein, "GET", &format!("/v1/briefs/{id}"), Some(&bob), None)
        .await;
    assert_eq!(status, 404, "another user's brief is not there");
    let resolve = format!("/v1/briefs/{id}/resolve");
    let (status, body) = e
        .call(
            &rein,
            "POST",
            &resolve,
            Some(&alice),
            Some(json!({"action": "approve"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("invalid_resolution")),
        "{body}"
    );
    let (status, done) = e
        .call(
            &rein,
            "POST",
            &resolve,
            Some(&alice),
            Some(json!({"action": "retry", "comment": "once more"})),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["brief"]["resolution"]["action"], "retry");
    let retried = done["operation_id"]
        .as_str()
        .expect("retry started a run")
        .to_owned();
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &resolve,
            Some(&alice),
            Some(json!({"action": "retry"})),
        )
        .await;
    assert_eq!(status, 409, "resolved once");

    // The retried run failed too: its own urgent brief, delivered once as well; the first
    // was not delivered again meanwhile.
    let second = format!("brief-{retried}");
    eventually("the retried run's brief delivered", || async {
        let h = hits.lock().unwrap().clone();
        h.iter()
            .any(|x| x.status == 200 && x.body["brief"]["id"] == second.as_str())
            .then_some(())
    })
    .await;
    let h = hits.lock().unwrap().clone();
    let times = |b: &str| {
        h.iter()
            .filter(|x| x.status == 200 && x.body["brief"]["id"] == b)
            .count()
    };
    assert_eq!((times(&id), times(&second)), (1, 1), "{h:?}");
    let (_, list) = e
        .call(
            &rein,
            "GET",
            "/v1/briefs?unresolved=true",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(list["briefs"].as_array().unwrap().len(), 1);
    assert_eq!(list["unread"], 1);
}

#[tokio::test]
async fn a_heartbeat_task_runs_on_its_own_up_to_its_cap_and_keeps_its_history() {
    let e = env(vec![
        Canned::openai_text("First check: all quiet."),
        Canned::openai_text("Second check: still quiet."),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let rein = e.start(&[]).await;
    let (status, bad) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "x", "instruction": "y", "cron": "0 9 * * *", "tz": "Mars/Olympus"})),
        )
        .await;
    // Well-formed per the document; a zone the scheduler cannot read is a 422.
    assert_eq!(
        (status, bad["error"]["code"].as_str()),
        (422, Some("invalid_task"))
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown time zone `Mars/Olympus`")
    );
    let (status, task) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "watch", "instruction": "Check the queue.", "every": "1s", "max_executions": 2})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let (status, _) = e
        .call(&rein, "GET", &format!("/v1/tasks/{id}"), Some(&bob), None)
        .await;
    assert_eq!(status, 404, "another user's task is not there");
    let done = eventually("the task completing after two finished runs", || async {
        let (_, d) = e
            .call(&rein, "GET", &format!("/v1/tasks/{id}"), Some(&alice), None)
            .await;
        let finished = d["runs"].as_array().map_or(0, |r| {
            r.iter().filter(|r| r["finished_at"].is_string()).count()
        });
        (d["task"]["status"] == "completed" && finished == 2).then_some(d)
    })
    .await;
    assert_eq!(done["task"]["executions"], 2, "{done:#}");
    let (_, history) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/tasks/{id}/history"),
            Some(&alice),
            None,
        )
        .await;
    let briefs: Vec<&str> = history["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["brief"].as_str())
        .collect();
    assert_eq!(briefs.len(), 2, "{history:#}");
    assert!(
        history["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["cost"].as_f64().is_some_and(|c| c > 0.0)),
        "each run's cost is kept: {history:#}"
    );
    assert!(
        briefs.contains(&"First check: all quiet.")
            && briefs.contains(&"Second check: still quiet.")
    );
    // Each run is an operation of its own, in a topic of its own, owned by the task's owner.
    let (_, ops) = e
        .call(&rein, "GET", "/v1/operations", Some(&alice), None)
        .await;
    let heartbeat_ops = ops
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["trigger"] == "heartbeat")
        .count();
    assert_eq!(heartbeat_ops, 2);
    let (status, next) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/tasks/{id}/next?count=2"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        (status, next["next"].as_array().map(Vec::len)),
        (200, Some(2))
    );
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/tasks/{id}/pause"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = e
        .call(
            &rein,
            "DELETE",
            &format!("/v1/tasks/{id}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 204);
}

#[tokio::test]
async fn rein_worker_dispatches_due_tasks_without_the_http_api() {
    let e = env(vec![Canned::openai_text("Worker ran it.")]).await;
    let task = once_a_second_task(&e, &e.db(), "beat", "Say something.").await;
    let id = task["id"].as_str().unwrap().to_owned();
    let mut worker = e
        .command(&["worker"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(worker.stderr.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap_or_default();
    assert!(first.contains("rein: worker"), "{first}");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let history = eventually("the worker's run in the task history", || async {
        let out = e.command(&["task", "history", &id]).output().await.unwrap();
        let history = String::from_utf8_lossy(&out.stdout).into_owned();
        history.contains("completed").then_some(history)
    })
    .await;
    assert!(
        history.contains("heartbeat") && history.contains("Worker ran it."),
        "{history}"
    );
    let out = e
        .command(&["--json", "task", "show", &id])
        .output()
        .await
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (shown["executions"].as_u64(), shown["status"].as_str()),
        (Some(1), Some("completed"))
    );
    let pid = worker.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), worker.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

/// A raw request with chosen headers (a browser's, a rebinding page's).
async fn raw(
    e: &Env,
    rein: &Rein,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut req = e.http.request(
        reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
        format!("{}{path}", rein.base),
    );
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    let resp = req.send().await.unwrap();
    let (status, h) = (resp.status().as_u16(), resp.headers().clone());
    let bytes = resp.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        h,
    )
}

#[tokio::test]
async fn without_tokens_only_requests_naming_this_server_from_its_own_pages_are_served() {
    let e = env(vec![Canned::openai_text("hi"), Canned::openai_text("hi")]).await;
    let rein = e.start_with(&["--no-auth"], &[]).await;
    let port = rein.base.rsplit(':').next().unwrap().to_owned();
    let me = format!("127.0.0.1:{port}");
    let create = json!({"input": "hi", "approval": "auto-run"});
    // A DNS-rebinding page: the browser sends the attacker's name as Host.
    for host in [
        format!("attacker.example:{port}"),
        format!("localhost.attacker.example:{port}"),
        "127.0.0.1:1".to_owned(),
    ] {
        let (status, body, _) = raw(
            &e,
            &rein,
            "POST",
            "/v1/operations",
            &[("host", &host)],
            Some(create.clone()),
        )
        .await;
        assert_eq!(status, 421, "{host}: {body}");
        assert_eq!(body["error"]["code"], "misdirected_request");
        let (status, _, _) =
            raw(&e, &rein, "GET", "/v1/operations", &[("host", &host)], None).await;
        assert_eq!(status, 421, "reads are refused too: {host}");
    }
    // Another site posting to the server by its own address.
    for origin in ["https://attacker.example", "null", "http://127.0.0.1:1"] {
        let (status, body, _) = raw(
            &e,
            &rein,
            "POST",
            "/v1/operations",
            &[("host", &me), ("origin", origin)],
            Some(create.clone()),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {body}");
        assert_eq!(body["error"]["code"], "forbidden_origin");
    }
    let (status, _, _) = raw(
        &e,
        &rein,
        "POST",
        "/v1/operations",
        &[("host", &me), ("sec-fetch-site", "cross-site")],
        Some(create.clone()),
    )
    .await;
    assert_eq!(status, 403);
    // Nothing was started by any of them.
    let (status, list, _) = raw(&e, &rein, "GET", "/v1/operations", &[("host", &me)], None).await;
    assert_eq!(status, 200);
    assert_eq!(list.as_array().unwrap().len(), 0, "{list}");
    // The server's own page (the web UI), and clients that are not browsers, still work.
    let (status, body, _) = raw(
        &e,
        &rein,
        "POST",
        "/v1/operations",
        &[("host", &me), ("origin", &format!("http://{me}"))],
        Some(json!({"input": "hi"})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let (status, body, _) = raw(
        &e,
        &rein,
        "POST",
        "/v1/operations",
        &[("host", &format!("localhost:{port}"))],
        Some(json!({"input": "hi"})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn bearer_is_case_insensitive_401_names_the_scheme_and_revocation_ends_streams() {
    let e = env(vec![ledger("l1", "x")]).await;
    let alice = e.token("alice").await;
    let rein = e.start(&[]).await;
    let (status, _, headers) = raw(&e, &rein, "GET", "/v1/operations", &[], None).await;
    assert_eq!(status, 401);
    assert_eq!(headers["www-authenticate"], "Bearer realm=\"rein\"");
    let lower = format!("bearer {alice}");
    let (status, body, _) = raw(
        &e,
        &rein,
        "GET",
        "/v1/operations",
        &[("authorization", &lower)],
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // An operation that parks for approval keeps its stream open.
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "pay", "approval": "allow-list"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    let mut stream = e.events(&rein, &op, &alice, None).await;
    let mut seen = Vec::new();
    stream.until("human_approve_required", &mut seen).await;
    // Revoke the token from another process.
    let out = e
        .command(&["token", "list", "--user", "alice"])
        .output()
        .await
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    let id = listing
        .split_whitespace()
        .next()
        .expect("a token id")
        .to_owned();
    let out = e
        .command(&["token", "revoke", "--user", "alice", &id])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The stream ends within a heartbeat (1 s here) and a poll.
    let started = std::time::Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while stream.next().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the stream stayed open after its token was revoked"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (status, _, _) = raw(
        &e,
        &rein,
        "GET",
        "/v1/operations",
        &[("authorization", &lower)],
        None,
    )
    .await;
    assert_eq!(status, 401);
}

/// The model delegates one task to `agent` (call `d1`).
fn delegate(title: &str, task: &str, agent: &str) -> Canned {
    Canned::openai_tools(&[(
        "d1",
        "agents__delegate",
        &json!({"title": title, "task": task, "agent": agent}).to_string(),
    )])
}

fn shell_call(id: &str) -> Canned {
    Canned::openai_tools(&[(id, "shell__run", &json!({"command": "echo hi"}).to_string())])
}

/// Wait until the operation's status is `status`.
async fn wait_status(e: &Env, rein: &Rein, op: &str, token: &str, status: &str) -> Value {
    eventually(&format!("operation {op} reaching {status}"), || async {
        let (_, detail) = e
            .call(
                rein,
                "GET",
                &format!("/v1/operations/{op}"),
                Some(token),
                None,
            )
            .await;
        (detail["operation"]["status"] == status).then_some(detail)
    })
    .await
}

/// Run the fake Claude Code (its `run.jsonl` fixture) on `surface`: it ends done after its three
/// model turns, and its log shows it ran in `dir`.
async fn fake_claude_ran(
    e: &Env,
    rein: &Rein,
    token: &str,
    surface: &str,
    dir: &std::path::Path,
    log: &std::path::Path,
) {
    let op = e
        .create_operation(
            rein,
            token,
            json!({"input": "What files are here?", "surface": surface}),
        )
        .await;
    let detail = wait_status(e, rein, &op, token, "done").await;
    assert_eq!(detail["spec"]["surface"], surface);
    assert_eq!(detail["operation"]["step_count"], 3);
    let logged = std::fs::read_to_string(log).unwrap();
    assert!(
        logged.contains(&format!("cwd: {}", dir.canonicalize().unwrap().display())),
        "it ran in {}: {logged}",
        dir.display()
    );
}

/// Wait until the caller's first device is connected (or, with `connected` false, is not).
async fn device_connected(e: &Env, rein: &Rein, token: &str, connected: bool) {
    eventually(&format!("the device connected: {connected}"), || async {
        let (_, v) = e.call(rein, "GET", "/v1/devices", Some(token), None).await;
        (v["devices"][0]["connected"] == connected).then_some(())
    })
    .await;
}

async fn approve_all(e: &Env, rein: &Rein, op: &str, token: &str, detail: &Value) {
    let decisions: Vec<Value> = detail["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| json!({"tool_call_id": p["call"]["id"], "decision": "approve"}))
        .collect();
    let (status, body) = e
        .call(
            rein,
            "POST",
            &format!("/v1/operations/{op}/interventions"),
            Some(token),
            Some(json!({ "decisions": decisions })),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

#[tokio::test]
async fn a_second_server_and_a_restarted_one_continue_operations_with_the_scope_they_started_with()
{
    // In the order the model is asked: both operations park first, then each is approved.
    let e = env(vec![
        shell_call("s1"),
        shell_call("s2"),
        Canned::openai_text("first done"),
        Canned::openai_text("second done"),
    ])
    .await;
    let alice = e.token("alice").await;
    let a = e.start(&[("REIN_LEASE_SECS", "2")]).await;
    let scoped = json!({"tools": ["calculator", "shell"], "system_role": "Be scoped.", "approval": "manual"});
    let (status, body) = e
        .call(
            &a,
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "scoped", "config": scoped})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let mut ops = Vec::new();
    for _ in 0..2 {
        let (status, created) = e
            .call(
                &a,
                "POST",
                "/v1/operations",
                Some(&alice),
                Some(json!({"input": "say hi", "agent": "scoped"})),
            )
            .await;
        assert_eq!(status, 202, "{created}");
        let op = created["operation_id"].as_str().unwrap().to_owned();
        wait_status(&e, &a, &op, &alice, "waiting_for_human").await;
        ops.push(op);
    }
    // The agent changes while both wait.
    let (status, body) = e
        .call(
            &a,
            "PUT",
            "/v1/agents/scoped",
            Some(&alice),
            Some(json!({"tools": ["files"], "system_role": "Changed."})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["version"], 2);
    // A second server on the same database approves the first.
    let b = e.start(&[("REIN_LEASE_SECS", "2")]).await;
    let detail = wait_status(&e, &b, &ops[0], &alice, "waiting_for_human").await;
    assert_eq!(
        detail["spec"]["allowed_tools"],
        json!(["calculator", "shell"])
    );
    assert_eq!(
        detail["spec"]["agent"],
        json!({"name": "scoped", "version": 1})
    );
    approve_all(&e, &b, &ops[0], &alice, &detail).await;
    wait_status(&e, &b, &ops[0], &alice, "done").await;
    // The first server dies; restarted, it approves the second.
    let mut a = a;
    a.child.kill().await.unwrap();
    let restarted = e.start(&[("REIN_LEASE_SECS", "2")]).await;
    let detail = wait_status(&e, &restarted, &ops[1], &alice, "waiting_for_human").await;
    approve_all(&e, &restarted, &ops[1], &alice, &detail).await;
    wait_status(&e, &restarted, &ops[1], &alice, "done").await;
    // Every model request of both offered what they started with.
    assert_eq!(e.model.requests().len(), 4);
    for (i, r) in e.model.requests().iter().enumerate() {
        let (tools, system) = (r.offered_tools(), r.system_text());
        assert_eq!(tools, ["calculator__evaluate", "shell__run"], "request {i}");
        assert!(
            system.contains("Be scoped.") && !system.contains("Changed."),
            "request {i}: {system}"
        );
    }
}

#[tokio::test]
async fn task_runs_take_their_agent_at_start_and_a_deleted_agent_is_agent_missing() {
    let e = env(vec![shell_call("s1"), Canned::openai_text("task done")]).await;
    let alice = e.token("alice").await;
    let rein = e.start(&[]).await;
    // A task for an agent that never existed is refused.
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "t", "instruction": "say hi", "agent": "ghost"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("agent_missing")),
        "{body}"
    );
    assert!(
        body["error"]["message"].as_str().unwrap().contains("ghost"),
        "{body}"
    );
    let v1 = json!({"tools": ["calculator"], "system_role": "First."});
    let (status, _) = e
        .call(
            &rein,
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "worker", "config": v1})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, task) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "t", "instruction": "say hi", "agent": "worker"})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    let task = task["id"].as_str().unwrap().to_owned();
    // Edited before the run: the run starts with the edited agent...
    let v2 = json!({"tools": ["calculator", "shell"], "system_role": "Be scoped.", "approval": "manual"});
    let (status, _) = e
        .call(&rein, "PUT", "/v1/agents/worker", Some(&alice), Some(v2))
        .await;
    assert_eq!(status, 200);
    let (status, run) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/tasks/{task}/run"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let op = run["operation_id"].as_str().unwrap().to_owned();
    let detail = wait_status(&e, &rein, &op, &alice, "waiting_for_human").await;
    assert_eq!(detail["spec"]["agent"]["version"], 2);
    // ...and keeps it when the agent changes again, or goes.
    let v3 = json!({"tools": ["files"], "system_role": "Changed."});
    let (status, _) = e
        .call(&rein, "PUT", "/v1/agents/worker", Some(&alice), Some(v3))
        .await;
    assert_eq!(status, 200);
    let (status, _) = e
        .call(&rein, "DELETE", "/v1/agents/worker", Some(&alice), None)
        .await;
    assert_eq!(status, 204);
    approve_all(&e, &rein, &op, &alice, &detail).await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    for (i, r) in e.model.requests().iter().enumerate() {
        let (tools, system) = (r.offered_tools(), r.system_text());
        assert_eq!(tools, ["calculator__evaluate", "shell__run"], "request {i}");
        assert!(
            system.contains("Be scoped.") && !system.contains("Changed."),
            "request {i}: {system}"
        );
    }
    // With the agent gone, a new run is refused as agent_missing.
    let (status, body) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/tasks/{task}/run"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "agent_missing");
}

/// Wait until `check` holds for the operation's detail.
async fn wait_detail(
    e: &Env,
    rein: &Rein,
    op: &str,
    token: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(&format!("operation {op} getting {what}"), || async {
        let (_, detail) = e
            .call(
                rein,
                "GET",
                &format!("/v1/operations/{op}"),
                Some(token),
                None,
            )
            .await;
        check(&detail).then_some(detail)
    })
    .await
}

#[tokio::test]
async fn a_restart_without_some_keys_serves_at_once_and_resumes_what_it_can() {
    let stalled = || {
        let mut c = Canned::openai_text("thinking");
        c.stall_after = Some(40);
        c
    };
    let e = env(vec![
        stalled(),
        stalled(),
        stalled(),
        Canned::openai_text("openai finished"),
        Canned::openai_text("finished later"),
        Canned::openai_text("finished later"),
    ])
    .await;
    let alice = e.token("alice").await;
    let base = format!("{}/v1", e.model.base);
    let all_keys = [
        ("DEEPSEEK_BASE_URL", base.as_str()),
        ("GROQ_BASE_URL", base.as_str()),
        ("DEEPSEEK_API_KEY", "sk-deepseek"),
        ("GROQ_API_KEY", "sk-groq"),
        ("REIN_LEASE_SECS", "2"),
    ];
    let first = e.start(&all_keys).await;
    let mut ops = Vec::new();
    for model in [
        "openai/gpt-4o-mini",
        "deepseek/deepseek-chat",
        "groq/llama-3.1-8b-instant",
    ] {
        let (status, created) = e
            .call(
                &first,
                "POST",
                "/v1/operations",
                Some(&alice),
                Some(json!({"input": "go", "model": model})),
            )
            .await;
        assert_eq!(status, 202, "{created}");
        ops.push(created["operation_id"].as_str().unwrap().to_owned());
    }
    // All three are in flight, each in the middle of its model call.
    eventually("the three model calls reaching the model", || async {
        (e.model.requests().len() == 3).then_some(())
    })
    .await;
    let mut first = first;
    first.child.kill().await.unwrap();

    // Restarted with only OpenAI's key: it serves at once.
    let only_openai = [
        ("DEEPSEEK_BASE_URL", base.as_str()),
        ("GROQ_BASE_URL", base.as_str()),
        ("DEEPSEEK_API_KEY", ""),
        ("GROQ_API_KEY", ""),
        ("REIN_LEASE_SECS", "2"),
    ];
    let started = std::time::Instant::now();
    let second = e.start(&only_openai).await;
    let (status, _) = e
        .call(&second, "GET", "/v1/models", Some(&alice), None)
        .await;
    assert_eq!(status, 200);
    // Serving does not wait for the operations it resumes or for the first process's leases to
    // lapse. The bound is wide because CI runs this beside other suites on two cores.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    // OpenAI's operation completes; the others are left resumable with the reason.
    wait_detail(&e, &second, &ops[0], &alice, "done", |d| {
        d["operation"]["status"] == "done"
    })
    .await;
    for op in &ops[1..] {
        let d = wait_detail(&e, &second, op, &alice, "a recovery note", |d| {
            d["operation"]["recovery"]["reason"].is_string()
        })
        .await;
        let reason = d["operation"]["recovery"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("API key") || reason.contains("api key"),
            "{reason}"
        );
        assert_eq!(d["operation"]["status"], "running", "left resumable");
    }
    assert!(second.saw("cannot be resumed here"), "the reason is logged");
    let mut second = second;
    second.child.kill().await.unwrap();

    // With the keys back, the rest complete.
    let third = e.start(&all_keys).await;
    for op in &ops[1..] {
        // The note is cleared once the run has ended (just after its last commit).
        wait_detail(&e, &third, op, &alice, "done, with its note cleared", |d| {
            d["operation"]["status"] == "done" && d["operation"]["recovery"].is_null()
        })
        .await;
    }
    assert_eq!(e.model.requests().len(), 6);
}

#[tokio::test]
async fn a_stream_on_one_server_follows_an_operation_another_server_runs_on_postgres() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "a_stream_on_one_server_follows_an_operation_another_server_runs_on_postgres",
        "rein_notices_e2e",
    )
    .await
    else {
        return;
    };
    let db = scratch.url.clone();
    let e = env(vec![
        shell_call("s1"),
        Canned::openai_text("done elsewhere"),
    ])
    .await;
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
    // A only serves the stream, and re-reads the log on its own only once an hour: whatever it
    // shows of B's commits reached it as commit notices.
    let a = e.start_on(&db, &["--stream-poll-secs", "3600"], &[]).await;
    let b = e.start_on(&db, &[], &[]).await;
    let (status, body) = e
        .call(
            &b,
            "POST",
            "/v1/agents",
            Some(&alice),
            Some(json!({"name": "gated", "config": {"tools": ["shell"], "approval": "manual"}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let op = e
        .create_operation(&b, &alice, json!({"input": "say hi", "agent": "gated"}))
        .await;
    let detail = wait_status(&e, &b, &op, &alice, "waiting_for_human").await;
    let mut stream = e.events(&a, &op, &alice, None).await;
    let mut seen = Vec::new();
    stream.until("human_approve_required", &mut seen).await;
    approve_all(&e, &b, &op, &alice, &detail).await;
    tokio::time::timeout(Duration::from_secs(60), stream.until("done", &mut seen))
        .await
        .expect("the stream on A followed what B committed");
    assert_gapless(&seen);
    drop((a, b));
    scratch.drop().await;
}

/// A sub-agent's approval is listed on the root operation (naming the sub-agent), decided
/// there through the API, and the sub-agent then the parent complete; the sub-agent's thread
/// is served with the topic.
#[tokio::test]
async fn a_sub_agents_approval_is_decided_on_the_root_and_the_tree_completes() {
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("book it", "Append paid.", "helper"),
            Canned::openai_text("Boss: the ledger is updated."),
        ],
    );
    e.model.route(
        "ROLE-HELPER",
        vec![ledger("l1", "paid"), Canned::openai_text("appended")],
    );
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    e.create_agents(
        &rein,
        &token,
        &[
        (
            "boss",
            json!({"system_role": "ROLE-BOSS: you delegate.", "approval": "auto-run"}),
        ),
        (
            "helper",
            json!({"system_role": "ROLE-HELPER: you keep the ledger.", "tools": ["ledger"], "approval": "allow-list"}),
        ),
        ],
    )
    .await;
    let root = e
        .create_operation(
            &rein,
            &token,
            json!({"input": "Book the payment.", "agent": "boss"}),
        )
        .await;
    wait_status(&e, &rein, &root, &token, "waiting_for_sub_agents").await;
    let detail = eventually("the sub-agent's approval showing on the root", || async {
        let (_, d) = e
            .call(
                &rein,
                "GET",
                &format!("/v1/operations/{root}"),
                Some(&token),
                None,
            )
            .await;
        d["pending"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
            .then_some(d)
    })
    .await;
    let pending = detail["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{detail:#}");
    let child = pending[0]["operation_id"].as_str().unwrap().to_owned();
    assert_ne!(child, root);
    assert_eq!(pending[0]["call"]["id"], "l1");
    let subs = detail["sub_agents"].as_array().unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0]["id"], child);
    assert_eq!(subs[0]["agent"], "helper");
    assert_eq!(subs[0]["status"], "waiting_for_human");
    assert_eq!(subs[0]["parent_operation"], root);
    assert_eq!(e.ledger_lines(), 0);

    approve_all(&e, &rein, &root, &token, &detail).await;
    let done = wait_status(&e, &rein, &root, &token, "done").await;
    assert_eq!(done["operation"]["finish_reason"], "completed");
    assert_eq!(done["sub_agents"][0]["status"], "done");
    assert_eq!(e.ledger_lines(), 1, "approved once, ran once");
    // The parent's cost includes the sub-agent's.
    let parent_cost = done["operation"]["cost"].as_f64().unwrap();
    let child_cost = done["sub_agents"][0]["cost"].as_f64().unwrap();
    assert!(child_cost > 0.0 && parent_cost > child_cost, "{done:#}");

    let topic = done["operation"]["topic_id"].as_str().unwrap();
    let (status, threads) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/topics/{topic}/threads"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{threads}");
    let threads = threads.as_array().unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0]["thread"]["title"], "book it");
    assert_eq!(threads[0]["operation"]["status"], "done");
    assert!(threads[0]["messages"].to_string().contains("appended"));
    let (_, main) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/topics/{topic}/messages"),
            Some(&token),
            None,
        )
        .await;
    assert!(
        !main.to_string().contains("ROLE-HELPER"),
        "threads stay out of the topic"
    );
    // Another user sees neither the tree nor its threads.
    let bob = e.token("bob").await;
    let (status, _) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/topics/{topic}/threads"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404);
}

/// `/v1/groups` and a group run through the API: members must be the caller's agents, a run
/// names an agent or a group, and its turns come back authored.
/// A server killed while a sub-agent works: the restarted server finds the tree (its root
/// parked on a sub-agent nobody runs), runs the sub-agent on from its last commit and then
/// the root, without a second sub-agent.
#[tokio::test]
async fn a_server_killed_mid_delegation_resumes_the_tree_on_restart() {
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-BOSS",
        vec![
            delegate("sum", "What is 17*23?", "helper"),
            Canned::openai_text("The helper says 391."),
        ],
    );
    e.model.route(
        "ROLE-HELPER",
        vec![calc("h1", "17*23"), Canned::openai_text("391")],
    );
    let alice = e.token("alice").await;
    // Commits 1-3 are the root's (its call, the delegation's result, parking with the
    // sub-agent created); commit 4 is the sub-agent's first step.
    let rein = e
        .start(&[("REIN_TEST_PAUSE_AT", "commit:4"), ("REIN_LEASE_SECS", "2")])
        .await;
    e.create_agents(
        &rein,
        &alice,
        &[
            (
                "boss",
                json!({"system_role": "ROLE-BOSS: you delegate.", "approval": "auto-run"}),
            ),
            (
                "helper",
                json!({"system_role": "ROLE-HELPER: you calculate.", "tools": ["calculator"]}),
            ),
        ],
    )
    .await;
    let root = e
        .create_operation(&rein, &alice, json!({"input": "Sum it.", "agent": "boss"}))
        .await;
    rein.wait_for("REIN_TEST_PAUSED commit:4").await;
    let mut rein = rein;
    rein.child.kill().await.unwrap();

    let restarted = e.start(&[("REIN_LEASE_SECS", "2")]).await;
    let done = wait_status(&e, &restarted, &root, &alice, "done").await;
    assert_eq!(done["operation"]["finish_reason"], "completed");
    let subs = done["sub_agents"].as_array().unwrap();
    assert_eq!(subs.len(), 1, "one sub-agent");
    assert_eq!(subs[0]["status"], "done");
    assert_eq!(
        e.model.requests().len(),
        4,
        "no model call was repeated: root, sub-agent twice, root"
    );
}

/// The official `openai` SDK drives the Responses API: a response from an agent that used a
/// tool (an `mcp_call` item and the answer), one with an uploaded image (a PNG named `.txt`)
/// that reaches the model as an image, one chained by `previous_response_id` (the model sees
/// the first exchange), a background one polled to completion, one cancelled while its model
/// stalls, one parked on an approval (`incomplete`, naming the call and how to decide it).
#[tokio::test]
async fn the_openai_sdk_drives_the_responses_api() {
    let Some(python) = rein_testkit::python_with("the Responses API SDK test", "openai") else {
        return;
    };
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-CALC",
        vec![
            calc("c1", "17*23"),
            Canned::openai_text("17 × 23 = 391."),
            Canned::openai_text("Twice that is 782."),
            calc("c2", "17*23"),
            Canned::openai_text("Streamed: 391."),
        ],
    );
    e.model
        .route("IMAGE-TURN", vec![Canned::openai_text("A tiny chart.")]);
    e.model.route(
        "BACKGROUND-TURN",
        vec![Canned::openai_text("Done in the background.").after(Duration::from_millis(300))],
    );
    e.model.route(
        "STALL-TURN",
        vec![Canned::openai_text_then_stall("I am thinking")],
    );
    e.model.route("ROLE-CAREFUL", vec![calc("k1", "2+2")]);
    e.model.route(
        "REASON-TURN",
        vec![rein_model::testing::streams::responses(
            Some("Adding two and two."),
            "Reasoned: 4.",
            &[],
        )],
    );
    let responses_base = format!("{}/v1", e.model.base);
    let rein = e
        .start(&[("OPENAI_RESPONSES_BASE_URL", &responses_base)])
        .await;
    let token = e.token("alice").await;
    e.create_agents(
        &rein,
        &token,
        &[
            (
                "calc",
                json!({"system_role": "ROLE-CALC: you calculate.", "tools": ["calculator"], "approval": "auto-run"}),
            ),
            (
                "careful",
                json!({"system_role": "ROLE-CAREFUL: you calculate.", "tools": ["calculator"], "approval": "allow-list"}),
            ),
        ],
    )
    .await;
    let run = Command::new(&python)
        .arg(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/clients/openai_responses.py"),
        )
        .arg(&rein.base)
        .arg(&token)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
            panic!(
                "no report from the SDK script:\n{stdout}\n{}",
                String::from_utf8_lossy(&run.stderr)
            )
        });
    let plain = &report["plain"];
    assert_eq!(plain["status"], "completed", "{report:#}");
    assert_eq!(plain["text"], "17 × 23 = 391.", "{report:#}");
    assert_eq!(plain["types"], json!(["mcp_call", "message"]), "{report:#}");
    assert_eq!(plain["usage"]["total_tokens"], 240, "{report:#}");
    assert!(plain["id"].as_str().unwrap().starts_with("resp_"));

    assert_eq!(report["upload"]["filename"], "chart.txt", "{report:#}");
    assert_eq!(report["image"]["status"], "completed", "{report:#}");
    assert_eq!(report["image"]["text"], "A tiny chart.");
    let image_turn = e
        .model
        .requests()
        .into_iter()
        .find(|r| r.system_text().contains("IMAGE-TURN"))
        .unwrap();
    assert!(
        image_turn
            .body
            .to_string()
            .contains("data:image/png;base64,"),
        "the upload reached the model as an image: {}",
        image_turn.body
    );

    let chained = &report["chained"];
    assert_eq!(chained["status"], "completed", "{report:#}");
    assert_eq!(chained["text"], "Twice that is 782.");
    assert_eq!(chained["previous"], plain["id"]);
    let second = e
        .model
        .requests()
        .into_iter()
        .find(|r| r.carries("And twice that?"))
        .unwrap();
    assert!(
        second.carries("What is 17 * 23?") && second.carries("17 × 23 = 391."),
        "the chained response continues the first's conversation"
    );
    assert!(second.system_text().contains("Answer briefly."));

    assert!(
        ["queued", "in_progress"].contains(&report["background_started"].as_str().unwrap()),
        "{report:#}"
    );
    assert_eq!(report["background"]["status"], "completed", "{report:#}");
    assert_eq!(report["background"]["text"], "Done in the background.");
    assert_eq!(report["cancelled"]["status"], "cancelled", "{report:#}");

    let parked = &report["parked"];
    assert_eq!(parked["status"], "incomplete", "{report:#}");
    assert_eq!(parked["incomplete"]["reason"], "approval_required");
    let said = serde_json::to_string(&parked["incomplete"]).unwrap();
    assert!(
        said.contains("calculator/evaluate (k1)") && said.contains("/interventions"),
        "{said}"
    );
    assert_eq!(report["missing"], 404, "{report:#}");

    // Streamed: typed events in order, numbered from 0 without a gap, the text as deltas,
    // the items as the stored response names them.
    let streamed = &report["streamed"];
    let seqs: Vec<u64> = streamed["seqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "{report:#}"
    );
    let types: Vec<&str> = streamed["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        types[..2],
        ["response.created", "response.in_progress"],
        "{types:?}"
    );
    assert_eq!(types.last(), Some(&"response.completed"), "{types:?}");
    for kind in [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ] {
        assert!(types.contains(&kind), "{kind}: {types:?}");
    }
    assert_eq!(streamed["deltas"], "Streamed: 391.", "{report:#}");
    assert_eq!(streamed["final"]["status"], "completed");
    assert_eq!(streamed["final"]["text"], "Streamed: 391.");
    let items: Vec<&Value> = streamed["items"].as_array().unwrap().iter().collect();
    assert_eq!(items.len(), 2, "{report:#}");
    assert_eq!(items[0]["type"], "mcp_call");
    assert_eq!(items[1]["type"], "message");
    assert_eq!(
        items.iter().map(|i| i["id"].clone()).collect::<Vec<_>>(),
        streamed["final_ids"].as_array().unwrap().clone(),
        "the streamed items are the stored response's"
    );

    // A model that reasons: its summary streams as a reasoning item before the answer, and the
    // stored response keeps it.
    let reasoned = &report["reasoned"];
    let types: Vec<&str> = reasoned["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let at = |kind: &str| types.iter().position(|t| *t == kind);
    assert!(
        at("response.reasoning_summary_text.delta") < at("response.output_text.delta")
            && at("response.reasoning_summary_text.delta").is_some(),
        "{types:?}"
    );
    assert_eq!(reasoned["summary"], "Adding two and two.", "{report:#}");
    assert_eq!(reasoned["final"]["types"], json!(["reasoning", "message"]));
    assert_eq!(reasoned["final_summary"], "Adding two and two.");
    assert_eq!(reasoned["final"]["text"], "Reasoned: 4.");
}

/// The official `openai` Python SDK (installed by `scripts/test` into `.pyclients/`) against
/// `/v1/chat/completions` with a bearer token: a completion and a streamed one from an agent
/// that used a tool (usage of the whole operation, tool activity as reasoning), the model
/// list, and an operation stopped by its budget coming back as an error naming why.
#[tokio::test]
async fn the_openai_sdk_talks_to_a_rein_agent() {
    let Some(python) = rein_testkit::python_with("the OpenAI SDK test", "openai") else {
        return;
    };
    let e = env(Vec::new()).await;
    let answer = || Canned::openai_text("17 × 23 = 391.");
    e.model.route(
        "ROLE-CALC",
        vec![calc("c1", "17*23"), answer(), calc("c2", "17*23"), answer()],
    );
    e.model
        .route("ROLE-TIGHT", vec![calc("t1", "1+1"), calc("t2", "1+1")]);
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    e.create_agents(
        &rein,
        &token,
        &[
            (
                "calc",
                json!({"system_role": "ROLE-CALC: you calculate.", "tools": ["calculator"]}),
            ),
            (
                "tight",
                json!({"system_role": "ROLE-TIGHT: you calculate.", "cost_limit": 0.000001}),
            ),
        ],
    )
    .await;
    let run = Command::new(&python)
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/openai_sdk.py"))
        .arg(&rein.base)
        .arg(&token)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: Value =
        serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
            panic!(
                "no report from the SDK script:\n{stdout}\n{}",
                String::from_utf8_lossy(&run.stderr)
            )
        });
    let whole = &report["whole"];
    assert!(
        whole["content"].as_str().unwrap().contains("391"),
        "{report:#}"
    );
    assert_eq!(whole["finish_reason"], "stop");
    // Two model calls (the tool call, the answer), 120 tokens each.
    assert_eq!(whole["usage"]["total_tokens"], 240, "{report:#}");
    assert!(whole["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let streamed = &report["streamed"];
    assert!(
        streamed["content"].as_str().unwrap().contains("391"),
        "{report:#}"
    );
    assert!(
        streamed["reasoning"]
            .as_str()
            .unwrap()
            .contains("calculator/evaluate"),
        "{report:#}"
    );
    assert_eq!(streamed["usage"]["total_tokens"], 240, "{report:#}");
    assert_eq!(streamed["finish_reason"], "stop");
    assert!(
        report["models"]
            .as_array()
            .unwrap()
            .contains(&json!("agent/calc")),
        "{report:#}"
    );
    assert_eq!(report["budget"]["status"], 409, "{report:#}");
    assert!(
        report["budget"]["message"]
            .as_str()
            .unwrap()
            .contains("cost_limit_exceeded"),
        "{report:#}"
    );
    assert!(
        report["budget_streamed"]["message"]
            .as_str()
            .unwrap()
            .contains("cost_limit_exceeded"),
        "{report:#}"
    );
    // The client's system message joined the agent's role; each request was an operation.
    let requests = e.model.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.system_text().contains("ROLE-CALC")
                && r.system_text().contains("Answer briefly.")),
        "the client's instructions reach the model"
    );
    let ops = e
        .call(&rein, "GET", "/v1/operations", Some(&token), None)
        .await
        .1;
    assert_eq!(ops.as_array().unwrap().len(), 4, "{ops:#}");
}

/// Traces from the server: a task run's trace starts at a `task_run` span (task id, trigger)
/// and its operation's spans nest in it, exported while the server runs.
#[tokio::test]
async fn a_task_runs_trace_starts_at_the_task() {
    let e = env(vec![Canned::openai_text("hi")]).await;
    let receiver = serve((0..50).map(|_| Canned::json(200, &json!({}))).collect(), 7).await;
    let rein = e
        .start(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ])
        .await;
    let alice = e.token("alice").await;
    let (status, task) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "greet", "instruction": "say hi"})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    let task = task["id"].as_str().unwrap().to_owned();
    let (status, run) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/tasks/{task}/run"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let op = run["operation_id"].as_str().unwrap().to_owned();
    wait_status(&e, &rein, &op, &alice, "done").await;
    // Spans are exported in batches: wait for both to arrive.
    let spans = |receiver: &Server| -> Vec<Value> {
        receiver
            .requests()
            .iter()
            .flat_map(|r| {
                r.body["resourceSpans"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .flat_map(|rs| rs["scopeSpans"].as_array().cloned().unwrap_or_default())
            .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let found = eventually("the task_run and invoke_agent spans exported", || async {
        let found = spans(&receiver);
        let names: Vec<&str> = found.iter().filter_map(|s| s["name"].as_str()).collect();
        (names.contains(&"task_run greet") && names.contains(&"invoke_agent rein")).then_some(found)
    })
    .await;
    let by_name = |n: &str| found.iter().find(|s| s["name"] == n).cloned();
    let task_span = by_name("task_run greet").expect("a task_run span");
    let agent_span = by_name("invoke_agent rein").expect("an invoke_agent span");
    assert_eq!(
        agent_span["parentSpanId"], task_span["spanId"],
        "{found:#?}"
    );
    assert_eq!(agent_span["traceId"], task_span["traceId"]);
    assert!(
        task_span["attributes"].to_string().contains(&task),
        "{task_span:#}"
    );
}

#[tokio::test]
async fn skills_disclosure_and_context_reports_through_the_api() {
    let e = env(vec![
        Canned::openai_text("From the request."),
        Canned::openai_text("From the agent."),
    ])
    .await;
    let skills = e.dir.join("skills");
    std::fs::create_dir_all(skills.join("pdf-tools")).unwrap();
    std::fs::write(
        skills.join("pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Read PDFs.\nallowed-tools: files/read\n---\nSKILL-BODY: use -layout.\n",
    )
    .unwrap();
    std::fs::write(skills.join("pdf-tools/notes.md"), "n").unwrap();
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(skills.join("broken/SKILL.md"), "no front matter\n").unwrap();
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    let (status, list) = e.call(&rein, "GET", "/v1/skills", Some(&token), None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["skills"][0]["name"], "pdf-tools");
    assert_eq!(list["skills"][0]["allowed_tools"], json!(["files/read"]));
    assert_eq!(list["skills"][0]["resources"], json!(["notes.md"]));
    assert_eq!(list["problems"][0]["line"], 1);
    assert!(
        list["problems"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with("broken/SKILL.md")
    );
    let (status, one) = e
        .call(&rein, "GET", "/v1/skills/pdf-tools", Some(&token), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(one["body"], "SKILL-BODY: use -layout.");
    let (status, _) = e
        .call(&rein, "GET", "/v1/skills/nope", Some(&token), None)
        .await;
    assert_eq!(status, 404);
    let (status, _) = e
        .call(&rein, "GET", "/v1/skills/Not_A_Name", Some(&token), None)
        .await;
    assert_eq!(status, 400);
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&token),
            Some(json!({"input": "x", "skills": ["nope"]})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "skill_missing", "{body}");
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&token),
            Some(json!({"input": "x", "tools_disclosure": "sometimes"})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let op = e
        .create_operation(
            &rein,
            &token,
            json!({"input": "Read it", "skills": ["pdf-tools"], "tools_disclosure": "progressive"}),
        )
        .await;
    wait_status(&e, &rein, &op, &token, "done").await;
    let first = &e.model.requests()[0];
    assert!(first.system_text().contains("SKILL-BODY: use -layout."));
    assert_eq!(
        first.offered_tools(),
        ["skills__activate", "tools__activate_tools"]
    );
    let (status, calls) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}/context?step=1"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{calls}");
    let report = &calls[0]["report"];
    let items: Vec<&str> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item"].as_str().unwrap())
        .collect();
    assert!(
        items.contains(&"skills") && items.contains(&"tool_list"),
        "{items:?}"
    );
    // Another user sees neither the operation nor its report.
    let bob = e.token("bob").await;
    let (status, _) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}/context"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404);
    // An agent's skills and disclosure.
    e.create_agents(
        &rein,
        &token,
        &[(
            "reader",
            json!({"skills": ["pdf-tools"], "tools_disclosure": "all"}),
        )],
    )
    .await;
    let op = e
        .create_operation(&rein, &token, json!({"input": "Again", "agent": "reader"}))
        .await;
    wait_status(&e, &rein, &op, &token, "done").await;
    let second = e.model.requests().pop().unwrap();
    assert!(second.system_text().contains("SKILL-BODY"));
    assert!(second.offered_tools().contains(&"files__read".to_owned()));
}

#[tokio::test]
async fn rein_serve_with_an_mcp_server_offers_its_tools_to_api_operations() {
    let Some(script) = rein_testkit::mcp_server("rein serve --mcp", "server-everything") else {
        return;
    };
    let e = env(vec![
        Canned::openai_tools(&[("m1", "everything__echo", r#"{"message":"from the server"}"#)]),
        Canned::openai_text("Echoed."),
    ])
    .await;
    let mcp = format!("everything=node {script}");
    let rein = e.start_with(&["--mcp", &mcp], &[]).await;
    let alice = e.token("alice").await;
    let op = e
        .create_operation(
            &rein,
            &alice,
            json!({"input": "Echo.", "approval": "auto-run"}),
        )
        .await;
    let detail = wait_status(&e, &rein, &op, &alice, "done").await;
    // The spec records the server: a process without it would refuse to continue.
    let recorded = detail["spec"]["mcp_servers"].as_array().unwrap();
    assert!(recorded.contains(&json!("everything")), "{recorded:?}");
    let requests = e.model.requests();
    assert!(
        requests[0]
            .offered_tools()
            .contains(&"everything__echo".to_owned())
    );
    let result = requests[1].tool_result("m1");
    assert!(result.contains("from the server"), "{result}");
}

/// A task created with `rein task create` on `db`: due every second, run once.
async fn once_a_second_task(e: &Env, db: &str, title: &str, instruction: &str) -> Value {
    let out = e
        .command_on(
            db,
            &[
                "--json",
                "task",
                "create",
                "--title",
                title,
                "--instruction",
                instruction,
                "--every",
                "1s",
                "--max-executions",
                "1",
            ],
        )
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `rein worker` on `db` with leases of `lease_secs` and `extra` environment; its stderr lines go to `lines` as they come.
fn worker_on(
    e: &Env,
    db: &str,
    lease_secs: u64,
    extra: &[(&str, &str)],
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) {
    let lease = lease_secs.to_string();
    let mut c = e.command_on(db, &["worker", "--lease-secs", &lease]);
    for (k, v) in extra {
        c.env(k, v);
    }
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    (child, lines)
}

#[tokio::test]
async fn a_killed_workers_operation_is_taken_over_once_by_another_process_on_postgres() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "a_killed_workers_operation_is_taken_over_once_by_another_process_on_postgres",
        "rein_takeover",
    )
    .await
    else {
        return;
    };
    let db = scratch.url.clone();
    // Answers by turn: the answer's model call may run beside the commit the kill stops
    // (pipelined durability), and the process taking over asks again.
    let e = env(Vec::new()).await;
    e.model.by_turn(vec![
        ledger("l1", "appended once"),
        Canned::openai_text("Appended once."),
    ]);
    once_a_second_task(&e, &db, "once", "Append to the ledger.").await;
    // The first worker runs the task's operation and is killed right after the commit that
    // recorded the ledger call's result (its second commit), holding a 2 s lease.
    let (mut first, mut lines) = worker_on(&e, &db, 2, &[("REIN_TEST_PAUSE_AT", "commit:2")]);
    let paused = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.starts_with("REIN_TEST_PAUSED") {
                return;
            }
        }
        panic!("the first worker exited before pausing");
    };
    tokio::time::timeout(Duration::from_secs(60), paused)
        .await
        .expect("the first worker reached its second commit");
    first.kill().await.unwrap();
    assert_eq!(e.ledger_lines(), 1);
    let before = e.model.requests().len();
    assert!((1..=2).contains(&before), "{before} calls before the kill");
    use rein_store::Store;
    let store = rein_store::SqlStore::open(&db, rein_store::Synchronous::Normal)
        .await
        .unwrap();
    let id = store
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap()[0]
        .id;
    // Another worker and a server share the database; one of them takes the operation over
    // once the dead worker's lease has run out, and finishes it.
    // Their own leases are long enough that a loaded machine never lets the winner's lapse
    // mid-run (which would hand the operation over once more: a 10 s lease was seen to lapse
    // on a two-core machine busy compiling beside the suite).
    // The dead worker's lease runs out within 2 s; the processes below take the operation up
    // in their first sweep, at start, so they start once it has: a probe claim that expires
    // at once succeeds only then.
    eventually("the dead worker's lease running out", || async {
        let now = chrono::Utc::now();
        let probe = rein_store::Admission {
            node: "lease-probe".into(),
            now,
            until: now,
            limits: Default::default(),
        };
        let claimed = store.claim_operation(id, &probe).await.unwrap();
        store.release_operation(id, "lease-probe").await.unwrap();
        (claimed == rein_store::Claim::Claimed).then_some(())
    })
    .await;
    let (_second, mut second_lines) = worker_on(&e, &db, 60, &[]);
    tokio::spawn(async move { while let Ok(Some(_)) = second_lines.next_line().await {} });
    let _server = e.start_on(&db, &["--lease-secs", "60"], &[]).await;
    eventually("the operation finishing in another process", || async {
        let status = store.operation_status(id).await.unwrap();
        status.is_some_and(|s| s.is_terminal()).then_some(())
    })
    .await;
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.record.status, rein_core::state::Status::Done);
    assert_eq!(
        op.state.messages.last().unwrap().text_content(),
        "Appended once."
    );
    // Exactly once: the effect happened once, the model was asked once more (the answer's
    // call, again if it ran beside the commit the kill stopped), and the log has every commit
    // once.
    assert_eq!(e.ledger_lines(), 1, "the ledger call never ran twice");
    assert_eq!(e.model.requests().len(), before + 1);
    let seqs: Vec<u64> = store
        .events(id, None)
        .await
        .unwrap()
        .iter()
        .map(|ev| ev.seq)
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    drop(store);
    scratch.drop().await;
}

#[tokio::test]
async fn the_running_limit_holds_across_two_servers_on_postgres() {
    let Some(scratch) = rein_testkit::postgres_scratch(
        "the_running_limit_holds_across_two_servers_on_postgres",
        "rein_admit_two",
    )
    .await
    else {
        return;
    };
    let db = scratch.url.clone();
    // The model never finishes its answers, so accepted operations keep running.
    let stalled = || {
        let mut c = Canned::openai_text("thinking very hard about it");
        c.stall_after = Some(60);
        c
    };
    let e = env((0..6).map(|_| stalled()).collect()).await;
    let out = e
        .command_on(&db, &["token", "create", "--user", "alice"])
        .output()
        .await
        .unwrap();
    let alice = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let a = e.start_on(&db, &["--max-running", "4"], &[]).await;
    let b = e.start_on(&db, &["--max-running", "4"], &[]).await;
    let mut requests = Vec::new();
    for i in 0..40 {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let (http, url, token) = (
            e.http.clone(),
            format!("{base}/v1/operations"),
            alice.clone(),
        );
        requests.push(tokio::spawn(async move {
            http.post(url)
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .body(json!({"input": "think"}).to_string())
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for r in requests {
        statuses.push(r.await.unwrap());
    }
    let accepted = statuses.iter().filter(|s| **s == 202).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((accepted, refused), (4, 36), "{statuses:?}");
    let (_, listed) = e
        .call(&b, "GET", "/v1/operations", Some(&alice), None)
        .await;
    assert_eq!(
        listed.as_array().unwrap().len(),
        4,
        "a refused request writes nothing"
    );
    drop((a, b));
    scratch.drop().await;
}

#[tokio::test]
async fn a_live_preview_carries_the_streamed_text_before_the_step_commits() {
    // The model streams its text, then stalls before finishing: the step cannot commit.
    let e = env(vec![Canned::openai_text_then_stall(
        "Previewed before any commit",
    )])
    .await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let op = e
        .create_operation(&rein, &alice, json!({"input": "say it"}))
        .await;
    let mut stream = e.events(&rein, &op, &alice, None).await;
    let mut committed = Vec::new();
    let preview = loop {
        let m = stream
            .next()
            .await
            .expect("the stream stays open while the step runs");
        if m.id.is_some() {
            committed.push(m);
            continue;
        }
        assert_eq!(m.event.as_deref(), Some("live"));
        if m.data["type"] == "llm_stream" {
            break m;
        }
    };
    assert_eq!(
        preview.data["chunk"]["text"], "Previewed before any commit",
        "{:?}",
        preview.data
    );
    // Nothing of the step is committed: its model call has not ended.
    assert!(
        committed
            .iter()
            .all(|m| m.data["type"] != "llm_result" && m.data["type"] != "llm_stream"),
        "{committed:?}"
    );
    let (_, steps) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    assert!(
        steps["steps"].as_array().unwrap().is_empty(),
        "no step committed yet: {steps:#}"
    );
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/operations/{op}/cancel"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 202);
}

/// With a system model, a run is read when it ends (one request with a JSON schema): its handoff
/// is the model's, and the model judges a heartbeat run's output: here an urgent decision, which
/// holds the next fires (`human_waiting`) until feedback resolves it; the next run's prompt has
/// the model's handoff and the feedback; a run the model finds routine gives no brief.
#[tokio::test]
async fn the_system_model_writes_handoffs_and_judges_what_a_run_needs() {
    let reading = |attention: Value| {
        Canned::openai_text(
            &json!({
                "handoff": {
                    "title": "Queue: job 7 stuck",
                    "summary": "Job 7 has been stuck for an hour; the rest is moving.",
                    "key_findings": ["job 7 stuck since 09:00"],
                    "next_action": "Check job 7 first"
                },
                "attention": attention
            })
            .to_string(),
        )
    };
    let e = env(vec![
        Canned::openai_text("Job 7 is stuck. Everything else moves."),
        reading(json!({"needed": true, "kind": "decision", "priority": "urgent",
            "title": "Restart job 7?", "summary": "It has been stuck for an hour; restarting loses its progress."})),
        Canned::openai_text("Restarted job 7; the queue is moving."),
        reading(json!({"needed": false, "kind": "result", "priority": "info", "title": "-", "summary": "-"})),
    ])
    .await;
    let alice = e.token("alice").await;
    let rein = e
        .start(&[("REIN_SYSTEM_MODEL", "openai/gpt-4o-mini")])
        .await;
    let (status, task) = e
        .call(
            &rein,
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "Queue watch", "instruction": "Check the queue.", "every": "1s", "max_executions": 2, "questions": "brief"})),
        )
        .await;
    assert_eq!(status, 201, "{task}");
    assert_eq!(task["questions"], "brief", "{task}");
    let task_id = task["id"].as_str().unwrap().to_owned();
    let brief = eventually("the model's decision brief", || async {
        let (_, l) = e
            .call(
                &rein,
                "GET",
                "/v1/briefs?unresolved=true",
                Some(&alice),
                None,
            )
            .await;
        l["briefs"].as_array().and_then(|b| b.first().cloned())
    })
    .await;
    assert_eq!(
        (
            brief["kind"].as_str(),
            brief["priority"].as_str(),
            brief["title"].as_str()
        ),
        (Some("decision"), Some("urgent"), Some("Restart job 7?")),
        "{brief:#}"
    );
    let asked = &e.model.requests()[1].body;
    assert_eq!(asked["response_format"]["type"], "json_schema", "{asked:#}");
    assert_eq!(
        asked["response_format"]["json_schema"]["name"],
        "run_reading"
    );
    assert!(asked["messages"].to_string().contains("Job 7 is stuck."));

    // The urgent decision holds the heartbeat.
    let history_path = format!("/v1/tasks/{task_id}/history");
    eventually("a fire skipped while the decision waits", || async {
        let (_, h) = e
            .call(&rein, "GET", &history_path, Some(&alice), None)
            .await;
        h.to_string().contains("human_waiting").then_some(())
    })
    .await;
    assert_eq!(e.model.requests().len(), 2, "no run while it waits");
    let (_, history) = e
        .call(&rein, "GET", &history_path, Some(&alice), None)
        .await;
    let handoff = &history["runs"][0]["handoff"];
    assert_eq!(
        (handoff["written_by"].as_str(), handoff["title"].as_str()),
        (Some("model"), Some("Queue: job 7 stuck")),
        "{history:#}"
    );

    let id = brief["id"].as_str().unwrap();
    let (status, body) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/briefs/{id}/resolve"),
            Some(&alice),
            Some(json!({"action": "feedback", "comment": "Restart it."})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let done = eventually("the second run recorded and read", || async {
        let (_, d) = e
            .call(
                &rein,
                "GET",
                &format!("/v1/tasks/{task_id}"),
                Some(&alice),
                None,
            )
            .await;
        let finished = d["runs"].as_array().map_or(0, |r| {
            r.iter().filter(|r| r["finished_at"].is_string()).count()
        });
        (d["task"]["status"] == "completed" && finished == 2).then_some(d)
    })
    .await;
    assert_eq!(done["task"]["executions"], 2, "{done:#}");
    let second = e.model.requests()[2].body["messages"].to_string();
    assert!(
        second.contains("Queue: job 7 stuck")
            && second.contains("Check job 7 first")
            && second.contains("Restart it."),
        "the next run builds on the handoff and the feedback: {second}"
    );
    // Read again (4 requests), and found routine: no brief for it.
    let (_, history) = e
        .call(&rein, "GET", &history_path, Some(&alice), None)
        .await;
    assert_eq!(e.model.requests().len(), 4);
    let briefs: Vec<&Value> = history["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["brief"].is_string())
        .collect();
    assert_eq!(
        briefs.len(),
        2,
        "both runs' short accounts are kept: {history:#}"
    );
    let (_, all) = e.call(&rein, "GET", "/v1/briefs", Some(&alice), None).await;
    assert_eq!(all["briefs"].as_array().unwrap().len(), 1, "{all:#}");
}

#[tokio::test]
async fn a_server_runs_only_the_external_agents_it_enables() {
    let e = env(Vec::new()).await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../operation/tests/fixtures/external");
    let (agent, fixture) = (
        fixtures.join("fake-agent").display().to_string(),
        fixtures.join("claude-code/run.jsonl").display().to_string(),
    );
    let log = e.dir.join("agent.log").display().to_string();
    let rein = e
        .start_with(
            &["--workdir", &work.display().to_string()],
            &[
                ("REIN_EXTERNAL_CLAUDE_CODE", &agent),
                ("FAKE_AGENT_LOG", &log),
                ("FAKE_AGENT_FIXTURE", &fixture),
            ],
        )
        .await;
    let token = e.token("alice").await;
    fake_claude_ran(
        &e,
        &rein,
        &token,
        "external:claude-code",
        &work,
        std::path::Path::new(&log),
    )
    .await;
    // Not enabled on this server (Codex would be found on a person's PATH by `rein run`, not
    // here), and a device nobody connected: well-formed requests the server cannot honour.
    for (surface, code) in [
        ("external:codex", "surface_unavailable"),
        ("device:laptop", "device_missing"),
    ] {
        let (status, body) = e
            .call(
                &rein,
                "POST",
                "/v1/operations",
                Some(&token),
                Some(json!({"input": "hi", "surface": surface})),
            )
            .await;
        assert_eq!(status, 422, "{surface}: {body}");
        assert_eq!(body["error"]["code"], code, "{body}");
    }
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&token),
            Some(json!({"input": "hi", "surface": "moon"})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn an_operation_on_a_device_runs_its_tools_there_and_a_dropped_connection_repeats_nothing() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "c1",
            "shell__run",
            &json!({"command": "echo ran >> count.txt && pwd"}).to_string(),
        )]),
        Canned::openai_tools(&[(
            "c2",
            "files__write",
            &json!({"path": "note.txt", "content": "written on the device"}).to_string(),
        )]),
        Canned::openai_tools(&[(
            "c3",
            "files__read",
            &json!({"path": "note.txt"}).to_string(),
        )]),
        Canned::openai_text("Done on the laptop."),
    ])
    .await;
    let (server_dir, laptop) = (e.dir.join("server"), e.dir.join("laptop"));
    std::fs::create_dir_all(&server_dir).unwrap();
    std::fs::create_dir_all(&laptop).unwrap();
    let rein = e
        .start_with(
            &[
                "--sandbox",
                "off",
                "--workdir",
                &server_dir.display().to_string(),
            ],
            &[],
        )
        .await;
    let token = e.token("alice").await;
    // An operation on a device nobody connected is refused before anything runs.
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&token),
            Some(json!({"input": "hi", "surface": "device:laptop"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "device_missing");

    let device_token = e.device_token("alice", "laptop").await;
    // A device token is no API token.
    let (status, _) = e
        .call(&rein, "GET", "/v1/operations", Some(&device_token), None)
        .await;
    assert_eq!(status, 401);

    let mut device = e
        .laptop(&rein, &laptop, &device_token, &["--sandbox", "off"])
        .env("REIN_TEST_DEVICE_DROP", "1")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let device_log = Arc::new(Mutex::new(Vec::new()));
    {
        let mut lines = BufReader::new(device.stderr.take().unwrap()).lines();
        let sink = Arc::clone(&device_log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
    }
    device_connected(&e, &rein, &token, true).await;
    let (_, v) = e
        .call(&rein, "GET", "/v1/devices", Some(&token), None)
        .await;
    assert_eq!(v["devices"][0]["name"], "laptop");
    assert_eq!(v["devices"][0]["tools"], json!(["files", "shell"]));
    // Another user sees no device.
    let bob = e.token("bob").await;
    let (_, v) = e.call(&rein, "GET", "/v1/devices", Some(&bob), None).await;
    assert_eq!(v["devices"], json!([]), "{v}");
    let (status, _) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "hi", "surface": "device:laptop"})),
        )
        .await;
    assert_eq!(status, 422);

    let op = e
        .create_operation(
            &rein,
            &token,
            json!({"input": "Leave a note.", "surface": "device:laptop", "approval": "auto-run"}),
        )
        .await;
    let detail = wait_status(&e, &rein, &op, &token, "done").await;
    assert_eq!(detail["spec"]["surface"], "device:laptop");
    let log = device_log.lock().unwrap().join("\n");
    assert!(
        log.contains("reconnecting"),
        "the connection dropped mid-call: {log}"
    );
    // The command ran once, on the device, in its directory; the server's is untouched.
    assert_eq!(
        std::fs::read_to_string(laptop.join("count.txt")).unwrap(),
        "ran\n",
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(laptop.join("note.txt")).unwrap(),
        "written on the device"
    );
    assert!(std::fs::read_dir(&server_dir).unwrap().next().is_none());
    let shell = e.model.requests()[1].tool_result("c1");
    assert!(
        shell.contains(&laptop.canonicalize().unwrap().display().to_string()),
        "{shell}"
    );
    let read = e.model.requests()[3].tool_result("c3");
    assert!(read.contains("written on the device"), "{read}");

    // Revoked: its connection closes and the device stops.
    let (status, _) = e
        .call(&rein, "DELETE", "/v1/devices/laptop", Some(&token), None)
        .await;
    assert_eq!(status, 204);
    let exit = tokio::time::timeout(Duration::from_secs(20), device.wait())
        .await
        .expect("a revoked device stops")
        .unwrap();
    assert!(!exit.success());
    let (_, v) = e
        .call(&rein, "GET", "/v1/devices", Some(&token), None)
        .await;
    assert_eq!(v["devices"], json!([]));
}

#[tokio::test]
async fn a_call_for_a_device_that_stays_away_fails_visibly_after_the_device_timeout() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "c1",
            "shell__run",
            &json!({"command": "echo should not run > ran.txt"}).to_string(),
        )]),
        Canned::openai_text("The laptop is away."),
    ])
    .await;
    let laptop = e.dir.join("laptop");
    std::fs::create_dir_all(&laptop).unwrap();
    let rein = e
        .start_with(&["--sandbox", "off", "--device-timeout", "1"], &[])
        .await;
    let token = e.token("alice").await;
    let device_token = e.device_token("alice", "laptop").await;
    // Joined in the background: it detaches, writes its pid and logs to a file.
    let log = e.dir.join("laptop.log");
    let out = e
        .laptop(
            &rein,
            &laptop,
            &device_token,
            &["--daemon", "--log", &log.display().to_string()],
        )
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: u32 = std::fs::read_to_string(e.dir.join("devices/laptop.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    device_connected(&e, &rein, &token, true).await;
    // The server sees the connection before the daemon has written it to its log: the kill
    // waits for the line, or it would cut the write short.
    eventually("the daemon's log saying it connected", || async {
        std::fs::read_to_string(&log)
            .is_ok_and(|l| l.contains("device laptop connected"))
            .then_some(())
    })
    .await;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    device_connected(&e, &rein, &token, false).await;
    let op = e
        .create_operation(
            &rein,
            &token,
            json!({"input": "Run it.", "surface": "device:laptop", "approval": "auto-run"}),
        )
        .await;
    wait_status(&e, &rein, &op, &token, "done").await;
    let result = e.model.requests()[1].tool_result("c1");
    assert!(
        result.contains("Device `laptop` is offline: the call was not run"),
        "{result}"
    );
    assert!(!laptop.join("ran.txt").exists());
}

#[tokio::test]
async fn an_external_agent_runs_on_a_device_that_enables_it() {
    let e = env(Vec::new()).await;
    let laptop = e.dir.join("laptop");
    std::fs::create_dir_all(&laptop).unwrap();
    let rein = e.start(&[]).await;
    let token = e.token("alice").await;
    let device_token = e.device_token("alice", "laptop").await;
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../operation/tests/fixtures/external");
    let log = e.dir.join("agent.log");
    let quiet_log = e.dir.join("quiet.log");
    // The laptop runs Claude Code (here the fake one, from its environment) and a generic
    // agent that says nothing and waits (from its configuration file); its Codex is missing.
    let config = e.dir.join("device.toml");
    std::fs::write(
        &config,
        format!(
            "[external.jsonl]\ncommand = {:?}\nargs = [\"--fake-log\", {:?}, \"--fake-fixture\", {:?}]\n",
            fixtures.join("fake-agent").display().to_string(),
            quiet_log.display().to_string(),
            fixtures.join("jsonl/quiet.jsonl").display().to_string(),
        ),
    )
    .unwrap();
    let _device = e
        .laptop(&rein, &laptop, &device_token, &[])
        .env("REIN_CONFIG", &config)
        .env("REIN_EXTERNAL_CLAUDE_CODE", fixtures.join("fake-agent"))
        .env("REIN_EXTERNAL_CODEX", "/nonexistent/codex")
        .env("FAKE_AGENT_LOG", &log)
        .env("FAKE_AGENT_FIXTURE", fixtures.join("claude-code/run.jsonl"))
        .spawn()
        .unwrap();
    device_connected(&e, &rein, &token, true).await;
    fake_claude_ran(
        &e,
        &rein,
        &token,
        "external:claude-code@laptop",
        &laptop,
        &log,
    )
    .await;
    // Its limits reach the device: the agent's processes there are stopped.
    let slow = e
        .create_operation(
            &rein,
            &token,
            json!({"input": "Wait.", "surface": "external:jsonl@laptop", "time_limit_secs": 1}),
        )
        .await;
    let detail = wait_status(&e, &rein, &slow, &token, "done").await;
    assert_eq!(
        detail["operation"]["finish_reason"], "timeout",
        "{detail:#}"
    );
    let sleeper: u32 = std::fs::read_to_string(format!("{}.sleeper", quiet_log.display()))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually("the agent's child on the device stopped", || async {
        let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).ok();
        stat.is_none_or(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
        .then_some(())
    })
    .await;
    // What the device cannot start fails visibly, naming why.
    let missing = e
        .create_operation(
            &rein,
            &token,
            json!({"input": "hi", "surface": "external:codex@laptop"}),
        )
        .await;
    let detail = wait_status(&e, &rein, &missing, &token, "error").await;
    let said = detail["operation"]["error"].to_string();
    assert!(
        said.contains("on device `laptop`") && said.contains("`/nonexistent/codex` was not found"),
        "{detail:#}"
    );
}

/// A raw device connection: what `rein connect` would open, driven frame by frame.
async fn raw_device(
    rein: &Rein,
    token: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let url = format!(
        "{}/v1/devices/connect",
        rein.base.replace("http://", "ws://")
    );
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

/// The next text frame as JSON (`None` when the connection ends).
async fn frame(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Option<Value> {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .ok()??
        {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

async fn say(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    v: Value,
) {
    use futures::SinkExt;
    ws.send(tokio_tungstenite::tungstenite::Message::text(v.to_string()))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_device_gateway_refuses_what_a_device_may_not_do() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "c1",
            "shell__run",
            &json!({"command": "echo hi"}).to_string(),
        )]),
        Canned::openai_text("Done."),
    ])
    .await;
    let rein = e.start_with(&["--sandbox", "off"], &[]).await;
    let alice = e.token("alice").await;
    let laptop = e.device_token("alice", "laptop").await;
    let mallory = e.device_token("mallory", "laptop").await;
    // An API token connects no device.
    let refused = raw_device(&rein, &alice).await.unwrap_err().to_string();
    assert!(refused.contains("401"), "{refused}");
    // A device token connects its own name only, and must say hello first.
    let mut ws = raw_device(&rein, &laptop).await.unwrap();
    say(
        &mut ws,
        json!({"type": "hello", "name": "desktop", "tools": []}),
    )
    .await;
    let f = frame(&mut ws).await.unwrap();
    assert_eq!(f["type"], "refused");
    assert!(
        f["reason"]
            .as_str()
            .unwrap()
            .contains("`laptop`, not `desktop`"),
        "{f}"
    );
    let mut ws = raw_device(&rein, &laptop).await.unwrap();
    say(&mut ws, json!({"type": "ack", "call_id": "x"})).await;
    assert_eq!(frame(&mut ws).await.unwrap()["type"], "refused");

    // Alice's laptop connects, offering the shell; an operation calls it.
    let shell = json!([{"identifier": "shell", "apis": [{"name": "run"}]}]);
    let mut ws = raw_device(&rein, &laptop).await.unwrap();
    say(
        &mut ws,
        json!({"type": "hello", "name": "laptop", "tools": shell}),
    )
    .await;
    assert_eq!(frame(&mut ws).await.unwrap()["type"], "welcome");
    let op = e
        .create_operation(
            &rein,
            &alice,
            json!({"input": "Say hi.", "surface": "device:laptop", "approval": "auto-run"}),
        )
        .await;
    let call = frame(&mut ws).await.unwrap();
    assert_eq!(
        (call["type"].as_str(), call["call_id"].as_str()),
        (Some("call"), Some("c1"))
    );
    assert_eq!(call["operation_id"], op.as_str());
    assert_eq!(call["approved"], false);

    // Mallory's device (same name, another user) cannot answer Alice's call.
    let mut other = raw_device(&rein, &mallory).await.unwrap();
    say(
        &mut other,
        json!({"type": "hello", "name": "laptop", "tools": []}),
    )
    .await;
    assert_eq!(frame(&mut other).await.unwrap()["type"], "welcome");
    say(
        &mut other,
        json!({"type": "result", "operation_id": op, "call_id": "c1", "success": true, "content": "forged"}),
    )
    .await;
    let f = frame(&mut other).await.unwrap();
    assert_eq!(
        (f["type"].as_str(), f["call_id"].as_str()),
        (Some("settled"), Some("c1"))
    );
    // Noise is skipped; the connection stays.
    use futures::SinkExt;
    ws.send(tokio_tungstenite::tungstenite::Message::text("not json"))
        .await
        .unwrap();
    let (_, detail) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/operations/{op}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        detail["operation"]["status"], "waiting_for_async_tool",
        "{detail:#}"
    );

    // Alice's own answer completes it (and is settled once recorded).
    say(&mut ws, json!({"type": "ack", "call_id": "c1"})).await;
    say(
        &mut ws,
        json!({"type": "result", "operation_id": op, "call_id": "c1", "success": true, "content": "hi from the laptop"}),
    )
    .await;
    let f = frame(&mut ws).await.unwrap();
    assert_eq!(
        (f["type"].as_str(), f["call_id"].as_str()),
        (Some("settled"), Some("c1"))
    );
    wait_status(&e, &rein, &op, &alice, "done").await;
    assert_eq!(
        e.model.requests()[1].tool_result("c1"),
        "hi from the laptop"
    );
}

/// A multipart/form-data body of `files` (`name`, bytes): its content type and bytes.
fn multipart(files: &[(&str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "rein-test-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, bytes) in files {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// `POST /v1/knowledge` of a base named `name` as `token`, expecting `201`; the answer.
async fn create_base(e: &Env, rein: &Rein, token: &str, name: &str) -> Value {
    let (status, body) = e
        .call(
            rein,
            "POST",
            "/v1/knowledge",
            Some(token),
            Some(json!({ "name": name })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body
}

/// `POST /v1/knowledge/{base}/files` with `files` as `token`: the status and the answer.
async fn upload(
    e: &Env,
    rein: &Rein,
    base: &str,
    token: &str,
    files: &[(&str, &[u8])],
) -> (u16, Value) {
    let (content_type, body) = multipart(files);
    let resp = e
        .http
        .post(format!("{}/v1/knowledge/{base}/files", rein.base))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_server_killed_mid_ingestion_finishes_the_job_on_restart_without_duplicates() {
    let e = env(Vec::new()).await;
    let alice = e.token("alice").await;
    // Stopped dead right after the second of four files was committed.
    let rein = e.start(&[("REIN_TEST_PAUSE_AT", "ingest:file:2")]).await;
    create_base(&e, &rein, &alice, "manuals").await;
    let files: Vec<(String, Vec<u8>)> = (0..4)
        .map(|i| {
            (
                format!("f{i}.md"),
                format!("# Part {i}\n\nThe marker word{i} is only here.\n").into_bytes(),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let (status, job) = upload(&e, &rein, "manuals", &alice, &borrowed).await;
    assert_eq!(status, 202, "{job}");
    let id = job["id"].as_str().unwrap().to_owned();
    rein.wait_for("REIN_TEST_PAUSED ingest:file:2").await;
    let mut rein = rein;
    rein.child.kill().await.unwrap();

    let restarted = e.start(&[]).await;
    let job_url = format!("/v1/knowledge-jobs/{id}");
    let done = eventually("the restarted server finishing the job", || async {
        let (_, j) = e
            .call(&restarted, "GET", &job_url, Some(&alice), None)
            .await;
        (j["state"] == "done").then_some(j)
    })
    .await;
    assert_eq!(done["files_done"], 4, "{done}");
    let (_, base) = e
        .call(
            &restarted,
            "GET",
            "/v1/knowledge/manuals",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        (base["files"].as_u64(), base["chunks"].as_u64()),
        (Some(4), Some(4)),
        "{base}"
    );
    for i in 0..4 {
        let (_, found) = e
            .call(
                &restarted,
                "POST",
                "/v1/knowledge/manuals/search",
                Some(&alice),
                Some(json!({"query": format!("word{i}")})),
            )
            .await;
        let hits = found["hits"].as_array().unwrap();
        assert_eq!(hits.len(), 1, "word{i}, each chunk once: {found}");
        assert_eq!(hits[0]["citation"], format!("f{i}.md:1-3"));
    }
}

#[tokio::test]
async fn knowledge_bases_are_uploaded_ingested_in_the_background_and_searched() {
    let e = env(vec![
        Canned::openai_text("with the chunks"),
        Canned::openai_text("without them"),
    ])
    .await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let body = create_base(&e, &rein, &alice, "manuals").await;
    assert_eq!(body["embed_model"], Value::Null);
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge",
            Some(&alice),
            Some(json!({"name": "manuals"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{body}"
    );
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge",
            Some(&alice),
            Some(json!({"name": "x", "embed_model": "nowhere/model"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nowhere/model"),
        "{body}"
    );

    let guide =
        b"# Guide\n\nIntro.\n\n## Install\n\nRun cargo install rein-cli to get the binary.\n"
            .to_vec();
    let pdf = rein_testkit::pdf(&["Backups run nightly to the cold bucket."]);
    let (status, job) = upload(
        &e,
        &rein,
        "manuals",
        &alice,
        &[
            ("docs/guide.md", &guide),
            ("ops.pdf", &pdf),
            ("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0"),
        ],
    )
    .await;
    assert_eq!(status, 202, "{job}");
    assert_eq!(job["files"], 3);
    let id = job["id"].as_str().unwrap().to_owned();
    let done = eventually("the ingestion job ending", || async {
        let (_, j) = e
            .call(
                &rein,
                "GET",
                &format!("/v1/knowledge-jobs/{id}"),
                Some(&alice),
                None,
            )
            .await;
        (j["state"] == "done").then_some(j)
    })
    .await;
    assert_eq!(done["files_done"], 3, "{done}");
    let (status, base) = e
        .call(&rein, "GET", "/v1/knowledge/manuals", Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{base}");
    assert_eq!(
        (base["files"].as_u64(), base["chunks"].as_u64()),
        (Some(3), Some(3)),
        "{base}"
    );
    let skipped: Vec<&Value> = base["file_list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["skipped"].is_null())
        .collect();
    assert_eq!(skipped.len(), 1, "{base}");
    assert_eq!(
        (skipped[0]["path"].as_str(), skipped[0]["skipped"].as_str()),
        (Some("logo.png"), Some("a binary file"))
    );

    // A file over 10 MiB refuses the whole upload; nothing is recorded.
    let huge = vec![b'a'; 10 * 1024 * 1024 + 1];
    let (status, body) = upload(
        &e,
        &rein,
        "manuals",
        &alice,
        &[("small.md", b"# Small\n\nfine\n"), ("huge.txt", &huge)],
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`huge.txt` is larger than 10 MiB"),
        "{body}"
    );
    let (content_type, form) = multipart(&[("x.md", b"# X\n\nx\n")]);
    let resp = e
        .http
        .post(format!(
            "{}/v1/knowledge/manuals/files?chunk_tokens=0&overlap_tokens=10",
            rein.base
        ))
        .header("authorization", format!("Bearer {alice}"))
        .header("content-type", content_type)
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body = resp.text().await.unwrap();
    assert!(body.contains("chunk_tokens: 1 to 8000"), "{body}");
    for (name, want) in [("../escape.md", 400), ("", 400)] {
        let (status, body) = upload(&e, &rein, "manuals", &alice, &[(name, b"x")]).await;
        assert_eq!(status, want, "{name:?}: {body}");
    }
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge/manuals/files",
            Some(&alice),
            Some(json!({"path": "x"})),
        )
        .await;
    assert_eq!(status, 415, "{body}");
    let (_, base) = e
        .call(&rein, "GET", "/v1/knowledge/manuals", Some(&alice), None)
        .await;
    assert_eq!(base["files"], 3, "nothing was added: {base}");
    assert!(base["jobs"].as_array().unwrap().is_empty(), "{base}");

    // Search by words (no embedding model: it says so), with citations.
    let (status, found) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge/manuals/search",
            Some(&alice),
            Some(json!({"query": "how do I install it", "top_k": 3})),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["hits"][0]["citation"], "docs/guide.md:5-7", "{found}");
    assert_eq!(found["hits"][0]["headings"], json!(["Guide", "Install"]));
    assert_eq!(found["full_text_only"], "it has no embedding model");
    let (_, found) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge/manuals/search",
            Some(&alice),
            Some(json!({"query": "nightly backups"})),
        )
        .await;
    assert_eq!(found["hits"][0]["citation"], "ops.pdf:1-3", "{found}");
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/knowledge/manuals/search",
            Some(&alice),
            Some(json!({"query": "  "})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["message"],
        "the query is empty: give the words to look for"
    );

    // An operation with the base carries its best chunks, unless its budget for them is 0;
    // a budget past the bound is refused before anything runs.
    let ask =
        json!({"input": "how do I install it", "knowledge": ["manuals"], "approval": "headless"});
    let op = e.create_operation(&rein, &alice, ask.clone()).await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    let mut none = ask.clone();
    none["knowledge_tokens"] = json!(0);
    let op = e.create_operation(&rein, &alice, none).await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    let requests = e.model.requests();
    let (with, without) = (requests[0].body.to_string(), requests[1].body.to_string());
    assert!(
        with.contains("docs/guide.md:5-7") && with.contains("Reference material"),
        "{with}"
    );
    assert!(!without.contains("Reference material"), "{without}");
    assert!(
        without.contains("knowledge__search"),
        "the tool stays: {without}"
    );
    let mut too_much = ask.clone();
    too_much["knowledge_tokens"] = json!(32_001);
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(too_much),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("knowledge_tokens"),
        "{body}"
    );
    assert_eq!(e.model.requests().len(), 2);

    // Another user sees none of it.
    let (status, _) = e
        .call(&rein, "GET", "/v1/knowledge/manuals", Some(&bob), None)
        .await;
    assert_eq!(status, 404);
    let (status, _) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/knowledge-jobs/{id}"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (_, list) = e
        .call(&rein, "GET", "/v1/knowledge", Some(&bob), None)
        .await;
    assert_eq!(list["bases"], json!([]));
    let (status, _) = e
        .call(&rein, "DELETE", "/v1/knowledge/manuals", Some(&alice), None)
        .await;
    assert_eq!(status, 204);
    let (_, list) = e
        .call(&rein, "GET", "/v1/knowledge", Some(&alice), None)
        .await;
    assert_eq!(list["bases"], json!([]));
}

#[tokio::test]
async fn the_server_learns_memories_from_conversations_and_users_manage_them() {
    let e = env(vec![Canned::openai_text("Noted.")]).await;
    e.model.route(
        "You name conversations",
        (0..4).map(|_| Canned::openai_text("A title")).collect(),
    );
    e.model.route(
        "You keep a memory of durable facts",
        vec![
            Canned::openai_text(
                &json!({"memories": [
                    {"category": "project", "subject": "current project", "text": "The user is writing a compiler.", "message_id": "x"}
                ]})
                .to_string(),
            ),
            Canned::openai_text(
                &json!({"memories": [
                    {"category": "fact", "subject": "mood", "text": "The user felt tired today.", "message_id": "x"}
                ]})
                .to_string(),
            ),
        ],
    );
    let rein = e
        .start(&[("REIN_SYSTEM_MODEL", "openai/gpt-4o-mini")])
        .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let op = e
        .create_operation(
            &rein,
            &alice,
            json!({"input": "I am writing a compiler in Rust."}),
        )
        .await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    let list = eventually("the memory being learnt", || async {
        let (_, list) = e
            .call(&rein, "GET", "/v1/memories", Some(&alice), None)
            .await;
        (list["memories"].as_array().is_some_and(|m| !m.is_empty())).then_some(list)
    })
    .await;
    assert_eq!(list["extraction"], true);
    let memory = &list["memories"][0];
    assert_eq!(memory["text"], "The user is writing a compiler.", "{list}");
    assert_eq!(memory["category"], "project");
    assert_eq!(memory["source_operation"], op.as_str());
    assert_eq!(memory["private_to"], Value::Null);
    let id = memory["id"].as_str().unwrap().to_owned();

    // An agent that keeps its own memories: what it learns is private to it.
    e.create_agents(&rein, &alice, &[("journal", json!({"memory": "agent"}))])
        .await;
    e.model.push(Canned::openai_text("Rest well."));
    let op = e
        .create_operation(
            &rein,
            &alice,
            json!({"input": "I felt tired today.", "agent": "journal"}),
        )
        .await;
    wait_status(&e, &rein, &op, &alice, "done").await;
    let own = eventually("journal's memory being learnt", || async {
        let (_, list) = e
            .call(
                &rein,
                "GET",
                "/v1/memories?agent=journal",
                Some(&alice),
                None,
            )
            .await;
        (list["memories"].as_array().is_some_and(|m| !m.is_empty())).then_some(list)
    })
    .await;
    assert_eq!(own["memories"][0]["text"], "The user felt tired today.");
    assert_eq!(own["memories"][0]["private_to"], "journal");
    let (_, shared) = e
        .call(&rein, "GET", "/v1/memories?shared=true", Some(&alice), None)
        .await;
    let texts: Vec<&str> = shared["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(texts, ["The user is writing a compiler."]);
    let (_, all) = e
        .call(&rein, "GET", "/v1/memories", Some(&alice), None)
        .await;
    assert_eq!(all["memories"].as_array().unwrap().len(), 2, "{all}");
    let (status, both) = e
        .call(
            &rein,
            "GET",
            "/v1/memories?agent=journal&shared=true",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 200, "{both}");
    assert_eq!(both["memories"].as_array().unwrap().len(), 2, "{both}");
    let (_, other) = e
        .call(&rein, "GET", "/v1/memories?agent=other", Some(&alice), None)
        .await;
    assert_eq!(other["memories"], json!([]));
    let (status, body) = e
        .call(
            &rein,
            "GET",
            "/v1/memories?agent=no.such",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let own_id = own["memories"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = e
        .call(
            &rein,
            "DELETE",
            &format!("/v1/memories/{own_id}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 204);

    // Per user: bob sees nothing, and cannot touch it.
    let (_, theirs) = e.call(&rein, "GET", "/v1/memories", Some(&bob), None).await;
    assert_eq!(theirs["memories"], json!([]));
    let (status, _) = e
        .call(
            &rein,
            "DELETE",
            &format!("/v1/memories/{id}"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (status, edited) = e
        .call(
            &rein,
            "PATCH",
            &format!("/v1/memories/{id}"),
            Some(&alice),
            Some(json!({"text": "The user is writing a Rust compiler."})),
        )
        .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(
        edited["memory"]["text"],
        "The user is writing a Rust compiler."
    );
    let (status, body) = e
        .call(
            &rein,
            "PATCH",
            &format!("/v1/memories/{id}"),
            Some(&alice),
            Some(json!({"text": " "})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = e
        .call(&rein, "GET", "/v1/memories/not-an-id", Some(&alice), None)
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, off) = e
        .call(
            &rein,
            "PUT",
            "/v1/memories/settings",
            Some(&alice),
            Some(json!({"extraction": false})),
        )
        .await;
    assert_eq!((status, &off["extraction"]), (200, &json!(false)), "{off}");
    let (status, _) = e
        .call(
            &rein,
            "DELETE",
            &format!("/v1/memories/{id}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let (_, list) = e
        .call(
            &rein,
            "GET",
            "/v1/memories?history=true",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        (list["memories"].clone(), list["extraction"].clone()),
        (json!([]), json!(false))
    );
}
