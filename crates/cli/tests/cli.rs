//! `rein` as a user runs it: a child process against a scripted OpenAI-protocol server on
//! loopback, a SQLite file, real exit codes, and crashes by SIGKILL at each boundary.
//!
//! The parity run (`REIN_E2E_CLI=remote`, which `scripts/test` runs after the local one)
//! sends every command that can go to a server through a `rein serve` on the same database
//! (`--server URL`), with the same flags, and expects the same output; a test about what only
//! this machine can do (kill its process at a crash point, a cassette, an MCP server it
//! starts) says so with [`local_only`] and runs in the local pass only.

use rein_core::OperationId;
use rein_model::testing::{Canned, Server, serve};
use rein_store::{Knowledge, SqlStore, Store, Synchronous};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[path = "cli/agent_archive.rs"]
mod agent_archive;
#[path = "cli/allow_list.rs"]
mod allow_list;
#[path = "cli/archive.rs"]
mod archive;
#[path = "cli/budgets.rs"]
mod budgets;
#[path = "cli/evals.rs"]
mod evals;
#[path = "cli/fork.rs"]
mod fork;
#[path = "cli/goals.rs"]
/// The goal walk's script is shared with the server's kill test.
pub(crate) mod goals;
#[path = "cli/images.rs"]
mod images;
#[path = "cli/injection.rs"]
mod injection;
#[path = "cli/interpreter.rs"]
mod interpreter;
#[path = "cli/prompt.rs"]
mod prompt;
#[path = "cli/prompt_cache.rs"]
mod prompt_cache;
#[path = "cli/replay.rs"]
mod replay;
#[path = "cli/retention.rs"]
mod retention;
#[path = "cli/speech.rs"]
mod speech;
#[path = "cli/usage.rs"]
mod usage;
#[path = "cli/videos.rs"]
mod videos;
#[path = "cli/web_search.rs"]
mod web_search;

struct Env {
    dir: PathBuf,
    server: Server,
    /// The database the test's `rein` processes share (SQLite, or PostgreSQL in the matrix).
    db: rein_testkit::E2eDatabase,
    /// The parity run's `rein serve` on that database (`REIN_E2E_CLI=remote`).
    served: Option<Served>,
}

/// A `rein serve --no-auth` the parity run's commands go through (stopped with the test).
struct Served {
    _child: tokio::process::Child,
    base: String,
}

/// Whether this is the parity run: commands go through a server.
fn parity() -> bool {
    std::env::var("REIN_E2E_CLI").as_deref() == Ok("remote")
}

/// In the parity run, say that this test is about what only this machine does, and that it
/// runs in the local pass: then the caller returns.
fn local_only(test: &str, why: &str) -> bool {
    if parity() {
        eprintln!("LOCAL ONLY {test}: {why}");
    }
    parity()
}

/// The text of the last tool message of the model request `i` a test's server received, out
/// of its data block.
fn last_tool_result(e: &Env, i: usize) -> String {
    e.server.requests()[i].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| rein_model::testing::data_text(m["content"].as_str().unwrap_or_default()))
        .unwrap_or_default()
}

/// The configuration file every `rein` of a test reads (absent unless the test writes it with
/// [`env_with_config`]).
const CONFIG_FILE: &str = "rein.toml";

/// Subcommands that run where the database is whatever `--server` says.
const HERE_ONLY: &[&str] = &[
    "skill", "config", "migrate", "gc", "backup", "export", "import", "serve", "worker", "sandbox",
    "eval", "pin",
];

async fn env(responses: Vec<Canned>) -> Env {
    env_with_config(responses, None).await
}

/// A test's environment whose `rein` processes (the parity run's server too) read `config`
/// as their configuration file.
async fn env_with_config(responses: Vec<Canned>, config: Option<&str>) -> Env {
    let dir = std::env::temp_dir().join(format!("rein-cli-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(text) = config {
        std::fs::write(dir.join(CONFIG_FILE), text).unwrap();
    }
    let mut e = Env {
        db: rein_testkit::E2eDatabase::new(&dir).await,
        dir,
        server: serve(responses, 3).await,
        served: None,
    };
    if parity() {
        e.served = Some(e.serve().await);
    }
    e
}

impl Env {
    fn db(&self) -> String {
        self.db.url.clone()
    }

    fn ledger(&self) -> PathBuf {
        self.dir.join("ledger.txt")
    }

    /// `rein` with this test's environment: on its database, or in the parity run through its
    /// server when the command can go there.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args(self.target(args)).args(args);
        self.environment(&mut c);
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Where `rein ARGS` goes: `--db` this test's database, or in the parity run `--server`
    /// its server when the command can go there (none when `args` name a database).
    fn target(&self, args: &[&str]) -> Vec<String> {
        // The command is the first word that is not a flag (`op export` is an `op` command,
        // which a server answers; `export` alone is not).
        let command = args.iter().find(|a| !a.starts_with('-'));
        let here = args
            .iter()
            .any(|a| ["--db", "--replay", "--record", "--mcp"].contains(a))
            || command.is_some_and(|c| HERE_ONLY.contains(c));
        match &self.served {
            Some(s) if !here => vec!["--server".into(), s.base.clone()],
            _ if !args.contains(&"--db") => vec!["--db".into(), self.db()],
            _ => Vec::new(),
        }
    }

    /// The parity run's server: `rein serve --no-auth` on this test's database, its operations
    /// working in this test's directory, with this test's environment.
    async fn serve(&self) -> Served {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
        c.args([
            "--db",
            &self.db(),
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--no-auth",
        ])
        .args([
            "--heartbeat-secs",
            "1",
            "--workdir",
            &self.dir.display().to_string(),
        ]);
        self.environment(&mut c);
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        let served = rein_testkit::listening(&mut c).await;
        Served {
            _child: served.child,
            base: served.base,
        }
    }

    /// What every `rein` of this test runs with.
    fn environment(&self, c: &mut Command) {
        c.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", &self.dir)
            .env("REIN_CONFIG", self.dir.join(CONFIG_FILE))
            .env("OPENAI_BASE_URL", format!("{}/v1", self.server.base))
            .env("OPENAI_API_KEY", "sk-test")
            .env("REIN_TEST_TOOLS", "1")
            .env("REIN_TEST_LEDGER", self.ledger());
    }

    async fn rein(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().await.unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ledger_lines(&self) -> usize {
        std::fs::read_to_string(self.ledger())
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    async fn store(&self) -> SqlStore {
        SqlStore::open(&self.db(), Synchronous::Normal)
            .await
            .unwrap()
    }
}

fn calc(id: &str, expr: &str) -> Canned {
    Canned::openai_tools(&[(
        id,
        "calculator__evaluate",
        &serde_json::json!({"expression": expr}).to_string(),
    )])
}

fn ledger(id: &str, entry: &str) -> Canned {
    Canned::openai_tools(&[(
        id,
        "ledger__append",
        &serde_json::json!({"entry": entry}).to_string(),
    )])
}

fn op_id(text: &str) -> OperationId {
    let at = text
        .find("op ")
        .map(|i| i + 3)
        .expect("an operation id in the output");
    text[at..at + 36].parse().unwrap()
}

/// The invariants every finished operation must keep, crash or not.
async fn assert_consistent(store: &SqlStore, id: OperationId) {
    let events = store.events(id, None).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "gapless event sequence"
    );
    let op = store.load_operation(id).await.unwrap().unwrap();
    let ids: std::collections::HashSet<_> = op.state.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids.len(), op.state.messages.len(), "no duplicated messages");
    assert_eq!(
        store
            .topic_messages(&op.record.topic_id)
            .await
            .unwrap()
            .len(),
        op.state.messages.len(),
        "every message stored once"
    );
    let per_message: u64 = op
        .state
        .messages
        .iter()
        .filter_map(|m| m.usage.map(|u| u.total))
        .sum();
    assert_eq!(
        op.record.total_tokens, per_message,
        "usage counted once: the total is the sum of the calls"
    );
    assert_eq!(
        op.state
            .messages
            .iter()
            .filter(|m| m.usage.is_some())
            .count() as u64,
        op.state.usage.llm.calls
    );
}

#[tokio::test]
async fn run_streams_the_answer_and_json_events_are_gapless() {
    let e = env(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
    ])
    .await;
    let (code, out, err) = e.rein(&["run", "What is 17*23?"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("17 × 23 = 391."), "{out}");
    assert!(
        err.contains("→ calculator/evaluate") && err.contains("← succeeded: 391"),
        "{err}"
    );
    assert!(err.contains("done (completed)"), "{err}");
    let id = op_id(&err);
    assert_consistent(&e.store().await, id).await;

    let e = env(vec![Canned::openai_text("hi there")]).await;
    let (code, out, _) = e.rein(&["--json", "run", "hello"]).await;
    assert_eq!(code, 0);
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = events.iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events.last().unwrap()["type"], "step_complete");
    assert!(events.iter().any(|v| v["type"] == "done"));
    let id = events[0]["operation_id"].as_str().unwrap().to_owned();
    let (code, shown, _) = e.rein(&["--json", "op", "show", &id]).await;
    assert_eq!(code, 0);
    let shown: serde_json::Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["operation"]["status"], "done");
    let (_, later, _) = e.rein(&["op", "events", &id, "--after", "3"]).await;
    let later: Vec<u64> = later
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    // Exactly the events after 3, none before and none missing.
    assert_eq!(later, (4..events.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn attached_files_reach_the_model_and_a_missing_one_is_a_clear_error() {
    let e = env(vec![Canned::openai_text("North leads.")]).await;
    let csv = e.dir.join("sales.csv");
    std::fs::write(&csv, "region,total\nnorth,30\nsouth,12\n").unwrap();
    let png = e.dir.join("chart.png");
    std::fs::write(&png, [0x89, b'P', b'N', b'G']).unwrap();
    let (code, out, err) = e
        .rein(&[
            "run",
            "Which region leads?",
            "--attach",
            csv.to_str().unwrap(),
            "--attach",
            png.to_str().unwrap(),
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("North leads."), "{out}");
    let body = &e.server.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    let parts = user["content"].as_array().unwrap();
    assert_eq!(parts[0]["text"], "Which region leads?");
    assert!(
        parts[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("<data source=\"file\">\n<file name=\"sales.csv\" type=\"text/csv\">\nregion,total\nnorth,30"),
        "{parts:?}"
    );
    // gpt-4o-mini sees images: the PNG goes as a data URL.
    assert_eq!(parts[2]["type"], "image_url");
    assert_eq!(
        parts[2]["image_url"]["url"],
        "data:image/png;base64,iVBORw=="
    );

    let (code, _, err) = e
        .rein(&["run", "x", "--attach", "/nonexistent/rein/nope.txt"])
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot read attachment /nonexistent/rein/nope.txt"),
        "{err}"
    );
    assert_eq!(e.server.requests().len(), 1, "nothing was sent");
}

#[tokio::test]
async fn rein_embed_model_embeds_memories_as_they_are_stored() {
    if local_only(
        "rein_embed_model_embeds_memories_as_they_are_stored",
        "the embedding model is set in this command's environment",
    ) {
        return;
    }
    let e = env(vec![
        Canned::openai_tools(&[("m1", "memory__remember", r#"{"fact":"Likes trains"}"#)]),
        Canned::json(
            200,
            &serde_json::json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}], "model": "text-embedding-3-small"}),
        ),
        Canned::json(
            200,
            &serde_json::json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.2]}], "model": "text-embedding-3-small"}),
        ),
        Canned::openai_text("Noted."),
    ])
    .await;
    let mut cmd = e.cmd(&["run", "Remember that I like trains."]);
    cmd.env("REIN_EMBED_MODEL", "openai/text-embedding-3-small");
    let out = cmd.output().await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let memories = e
        .store()
        .await
        .list_documents(
            rein_core::document::DocumentKind::Memory,
            "user:local/agent:default",
            10,
        )
        .await
        .unwrap();
    let embedding = memories[0].embedding.as_ref().unwrap();
    assert_eq!(
        (embedding.model.as_str(), embedding.vector.as_slice()),
        ("openai/text-embedding-3-small", [0.5, 0.25].as_slice())
    );

    let mut bad = e.cmd(&["run", "x"]);
    bad.env("REIN_EMBED_MODEL", "no-slash");
    let out = bad.output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("REIN_EMBED_MODEL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn without_a_terminal_an_approval_parks_and_rein_approve_resumes() {
    let e = env(vec![calc("c1", "2+2"), Canned::openai_text("4.")]).await;
    let (code, _, err) = e.rein(&["run", "--approval", "allow-list", "2+2?"]).await;
    assert_eq!(code, 3, "waiting-for-human exit code: {err}");
    assert!(err.contains("pending c1 calculator/evaluate"), "{err}");
    let id = op_id(&err);
    let (code, out, err) = e.rein(&["approve", &id.to_string()]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("4."), "{out}");
    let (code, _, err) = e.rein(&["approve", &id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("not waiting for a decision"), "{err}");
    assert_consistent(&e.store().await, id).await;
}

#[tokio::test]
async fn a_rejection_reason_reaches_the_model() {
    let e = env(vec![
        calc("c1", "2+2"),
        Canned::openai_text("Fine, I will not compute it."),
    ])
    .await;
    let (code, _, err) = e.rein(&["run", "--approval", "allow-list", "2+2?"]).await;
    assert_eq!(code, 3);
    let id = op_id(&err);
    let (code, _, err) = e
        .rein(&["reject", &id.to_string(), "--reason", "do it by hand"])
        .await;
    assert_eq!(code, 0, "{err}");
    let body = &e.server.requests()[1].body;
    assert!(body.to_string().contains("do it by hand"));
}

#[tokio::test]
async fn bad_input_is_one_clear_line_and_writes_nothing() {
    let e = env(vec![]).await;
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--model", "nowhere/x", "hi"],
            "unknown provider `nowhere`: set NOWHERE_BASE_URL",
        ),
        (
            vec!["--db", "/nonexistent-dir/rein.db", "run", "hi"],
            "cannot open the database /nonexistent-dir/rein.db",
        ),
        (
            vec!["--db", "postgres://rein@127.0.0.1:1/rein", "run", "hi"],
            "cannot open the database postgres://rein@127.0.0.1:1/rein",
        ),
        (
            vec!["run", "--model", "gpt-4o", "hi"],
            "must be addressed as provider/model",
        ),
        (
            vec!["op", "show", "not-an-id"],
            "`not-an-id` is not an operation id",
        ),
    ];
    for (args, want) in cases {
        let (code, _, err) = e.rein(&args).await;
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{args:?}: one line, got {err}"
        );
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let corrupt = e.dir.join("bad.jsonl");
    std::fs::write(&corrupt, "this is not a cassette\n").unwrap();
    let (code, _, err) = e
        .rein(&["--replay", corrupt.to_str().unwrap(), "run", "hi"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("cassette line 1"), "{err}");
    if parity() {
        // The server's key serves a command without one.
        return;
    }
    let mut no_key = e.cmd(&["run", "hi"]);
    no_key.env_remove("OPENAI_API_KEY");
    let out = no_key.output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("missing API key for provider `openai`: set OPENAI_API_KEY"),
        "{err}"
    );
    // Nothing half-written: no operation was created by any of these.
    assert!(
        e.store()
            .await
            .list_operations(&rein_store::OperationFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Start `rein run` paused at `point`, kill it there with SIGKILL, return the operation id.
async fn run_and_kill_at(e: &Env, point: &str, prompt: &str) -> OperationId {
    kill_at(e, &["run", "--approval", "auto-run", prompt], point).await;
    let store = e.store().await;
    let ops = store
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap();
    assert_eq!(ops.len(), 1);
    ops[0].id
}

/// Run `rein ARGS` until it pauses at `point` (`REIN_TEST_PAUSE_AT`), and kill it there with
/// SIGKILL.
async fn kill_at(e: &Env, args: &[&str], point: &str) {
    assert!(
        kill_if_paused(e, args, point).await,
        "the child exited before pausing at {point}"
    );
}

/// Run `rein ARGS` with `REIN_TEST_PAUSE_AT=point`: `true` once it paused there and was killed
/// with SIGKILL, `false` when it ended first (its run has fewer such points).
async fn kill_if_paused(e: &Env, args: &[&str], point: &str) -> bool {
    let mut cmd = e.cmd(args);
    cmd.env("REIN_TEST_PAUSE_AT", point);
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let paused = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.starts_with("REIN_TEST_PAUSED") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the run pauses or ends");
    if paused {
        child.kill().await.unwrap(); // SIGKILL
    } else {
        let _ = child.wait().await;
    }
    paused
}

async fn resume_and_check(e: &Env, id: OperationId) {
    let (code, _, err) = e.rein(&["op", "resume", &id.to_string()]).await;
    assert_eq!(code, 0, "{err}");
    assert_consistent(&e.store().await, id).await;
}

#[tokio::test]
async fn killed_after_the_model_result_was_committed() {
    if local_only(
        "killed_after_the_model_result_was_committed",
        "it kills this process at crash points",
    ) {
        return;
    }
    let e = env(vec![ledger("l1", "A"), Canned::openai_text("Recorded A.")]).await;
    let id = run_and_kill_at(&e, "commit:1", "record A").await;
    assert_eq!(e.ledger_lines(), 0);
    resume_and_check(&e, id).await;
    assert_eq!(e.ledger_lines(), 1);
    assert_eq!(
        e.server.requests().len(),
        2,
        "the committed model call was not repeated"
    );
}

#[tokio::test]
async fn killed_while_an_at_most_once_tool_runs() {
    if local_only(
        "killed_while_an_at_most_once_tool_runs",
        "it kills this process at crash points",
    ) {
        return;
    }
    let e = env(vec![
        ledger("l1", "A"),
        Canned::openai_text("The ledger write may not have happened."),
    ])
    .await;
    let id = run_and_kill_at(&e, "tool:l1", "record A").await;
    resume_and_check(&e, id).await;
    assert_eq!(
        e.ledger_lines(),
        0,
        "an at-most-once call found running is settled, not repeated"
    );
    let store = e.store().await;
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert!(
        op.state
            .messages
            .iter()
            .any(|m| m.text_content().contains("was interrupted"))
    );
}

#[tokio::test]
async fn killed_after_the_tool_result_was_committed() {
    if local_only(
        "killed_after_the_tool_result_was_committed",
        "it kills this process at crash points",
    ) {
        return;
    }
    // The answer's model call runs beside the commit the kill stops (pipelined durability),
    // so the resumed run may ask again.
    let e = env(vec![
        ledger("l1", "A"),
        Canned::openai_text("Recorded A."),
        Canned::openai_text("Recorded A."),
    ])
    .await;
    let id = run_and_kill_at(&e, "commit:2", "record A").await;
    assert_eq!(e.ledger_lines(), 1);
    resume_and_check(&e, id).await;
    assert_eq!(e.ledger_lines(), 1, "never twice");
}

/// A pipelined run (the default durability: a step that leaves the operation running commits
/// while the next one runs) killed with SIGKILL at each of its commits and while its
/// at-most-once tool runs, then resumed by another process: the ledger entry is written at most
/// once (exactly once unless the kill caught the write itself, which is then settled), no
/// committed step is lost or reordered (one step row per commit, in order, events gapless) and
/// it ends with its answer. The model answers by turn, so a step run again after the kill (its
/// model call was in flight beside the commit) gets the same answer.
#[tokio::test]
async fn a_pipelined_run_killed_at_each_commit_resumes_without_doing_anything_twice() {
    if local_only(
        "a_pipelined_run_killed_at_each_commit_resumes_without_doing_anything_twice",
        "it kills this process at crash points",
    ) {
        return;
    }
    let mut points: Vec<String> = (1..=6).map(|n| format!("commit:{n}")).collect();
    points.push("tool:l1".into());
    let mut reached = 0;
    for point in &points {
        let e = env(Vec::new()).await;
        e.server.by_turn(vec![
            calc("c1", "6*7"),
            ledger("l1", "A"),
            Canned::openai_text("Recorded A."),
        ]);
        let args = ["run", "--approval", "auto-run", "record A"];
        if !kill_if_paused(&e, &args, point).await {
            // The run took fewer commits than this point.
            continue;
        }
        reached += 1;
        let store = e.store().await;
        let ops = store
            .list_operations(&rein_store::OperationFilter::default())
            .await
            .unwrap();
        assert_eq!(ops.len(), 1, "{point}");
        let id = ops[0].id;
        let before = store.steps(id).await.unwrap();
        resume_and_check(&e, id).await;
        let store = e.store().await;
        let op = store.load_operation(id).await.unwrap().unwrap();
        assert_eq!(op.record.status, rein_core::state::Status::Done, "{point}");
        assert_eq!(
            op.state.messages.last().unwrap().text_content(),
            "Recorded A.",
            "{point}"
        );
        let steps = store.steps(id).await.unwrap();
        assert_eq!(
            steps.len() as u64,
            op.record.commit_seq,
            "{point}: a row per commit"
        );
        assert_eq!(
            steps.iter().map(|s| s.step_index).collect::<Vec<_>>(),
            (1..=op.record.commit_seq).collect::<Vec<_>>(),
            "{point}: in order"
        );
        assert_eq!(
            steps[..before.len()]
                .iter()
                .map(|s| (s.step_index, s.status, s.instructions.clone()))
                .collect::<Vec<_>>(),
            before
                .iter()
                .map(|s| (s.step_index, s.status, s.instructions.clone()))
                .collect::<Vec<_>>(),
            "{point}: what was committed before the kill stays as it was"
        );
        let settled = op
            .state
            .messages
            .iter()
            .any(|m| m.text_content().contains("was interrupted"));
        match (point.as_str(), e.ledger_lines()) {
            ("tool:l1", 0) => assert!(settled, "{point}: settled, not repeated"),
            (_, 1) => assert!(!settled, "{point}"),
            (_, n) => panic!("{point}: the ledger was written {n} times"),
        }
    }
    assert!(reached >= 5, "only {reached} points reached");
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[tokio::test]
async fn killed_during_the_model_stream() {
    if local_only(
        "killed_during_the_model_stream",
        "it kills this process at crash points",
    ) {
        return;
    }
    let stalled = Canned::openai_text_then_stall("This answer will be cut off halfway through");
    let e = env(vec![stalled, Canned::openai_text("A complete answer.")]).await;
    let mut child = e.cmd(&["run", "tell me"]).spawn().unwrap();
    // Killed once the streamed part has reached the CLI (it prints the answer as it streams),
    // with the rest of the response still to come.
    let mut stdout = child.stdout.take().unwrap();
    read_until(&mut stdout, &mut String::new(), "cut off halfway", 1).await;
    child.kill().await.unwrap();
    let id = e
        .store()
        .await
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap()[0]
        .id;
    resume_and_check(&e, id).await;
    let op = e.store().await.load_operation(id).await.unwrap().unwrap();
    assert_eq!(
        op.state.messages.last().unwrap().text_content(),
        "A complete answer."
    );
    assert_eq!(op.state.messages.len(), 2, "user message and one answer");
}

#[tokio::test]
async fn the_readme_command_replays_the_shipped_cassette_offline() {
    let e = env(vec![]).await;
    // An installed skill changes nothing: a cassette's requests list none.
    write_skill(&e.dir.join("skills"), "notes", "BODY: irrelevant here.");
    let cassette = concat!(env!("CARGO_MANIFEST_DIR"), "/cassettes/demo.jsonl");
    let mut cmd = e.cmd(&["--replay", cassette, "run", "What is 17 * 23?"]);
    cmd.env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("REIN_TEST_TOOLS");
    let out = cmd.output().await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "17 × 23 = 391.\n", "the answer ends its line");
    assert!(stderr.contains("← succeeded: 391"), "{stderr}");
    assert!(e.server.requests().is_empty(), "no network");
    assert!(stderr.contains("rein: replaying"), "{stderr}");
    assert!(
        stderr.contains("· 0.000000 USD ·"),
        "a replay costs nothing: {stderr}"
    );
    assert_consistent(&e.store().await, op_id(&stderr)).await;
    // From a directory without the demo's files (not the README's): the cassette's own folder
    // is where its tools read, so the file question replays too; a question it does not hold
    // gets the demo's note.
    for (question, answer) in [
        (
            "What does notes.txt say?",
            "notes.txt says that the model turns",
        ),
        ("Why is the sky blue?", "This demo replays recorded answers"),
    ] {
        let mut cmd = e.cmd(&["--replay", cassette, "run", question]);
        cmd.env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("REIN_TEST_TOOLS")
            .current_dir(&e.dir);
        let out = cmd.output().await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.starts_with(answer), "{stdout}");
    }
}

fn anthropic_stream(blocks: &[serde_json::Value], stop: &str) -> Canned {
    let mut body = String::new();
    let mut ev = |name: &str, data: serde_json::Value| {
        body.push_str(&format!("event: {name}\ndata: {data}\n\n"))
    };
    ev(
        "message_start",
        serde_json::json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 90, "output_tokens": 1}}}),
    );
    for (i, b) in blocks.iter().enumerate() {
        if let Some(text) = b.get("text") {
            ev(
                "content_block_start",
                serde_json::json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
            );
            ev(
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": text}}),
            );
        } else {
            ev(
                "content_block_start",
                serde_json::json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}),
            );
            ev(
                "content_block_delta",
                serde_json::json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": b["input"].to_string()}}),
            );
        }
        ev(
            "content_block_stop",
            serde_json::json!({"type": "content_block_stop", "index": i}),
        );
    }
    ev(
        "message_delta",
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}}),
    );
    ev("message_stop", serde_json::json!({"type": "message_stop"}));
    Canned {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: body.into_bytes(),
        max_piece: 7,
        stall_after: None,
        delay: None,
    }
}

#[tokio::test]
async fn a_tool_round_trip_over_the_anthropic_protocol() {
    if local_only(
        "a_tool_round_trip_over_the_anthropic_protocol",
        "the provider's key is in this command's environment",
    ) {
        return;
    }
    let e = env(vec![
        anthropic_stream(&[serde_json::json!({"id": "toolu_1", "name": "calculator__evaluate", "input": {"expression": "6*7"}})], "tool_use"),
        anthropic_stream(&[serde_json::json!({"text": "6 × 7 = 42."})], "end_turn"),
    ])
    .await;
    let mut cmd = e.cmd(&["run", "--model", "anthropic/claude-sonnet-4-5", "6*7?"]);
    cmd.env("ANTHROPIC_BASE_URL", format!("{}/v1", e.server.base))
        .env("ANTHROPIC_API_KEY", "sk-ant-test");
    let out = cmd.output().await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "6 × 7 = 42.\n");
    let reqs = e.server.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    assert!(
        reqs[0]
            .headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "sk-ant-test")
    );
    let result = &reqs[1].body["messages"][2]["content"][0];
    assert_eq!(
        (
            result["type"].as_str(),
            result["tool_use_id"].as_str(),
            result["content"].as_str()
        ),
        (
            Some("tool_result"),
            Some("toolu_1"),
            Some(rein_model::testing::data_block("tool calculator.evaluate", "42").as_str())
        )
    );
    assert_consistent(&e.store().await, op_id(&stderr)).await;
}

/// The installed server-everything entry script, or `None` (with a note) when it is missing.
fn everything_server() -> Option<String> {
    rein_testkit::mcp_server("rein run with an MCP server", "server-everything")
}

/// An MCP tool's image (the reference server's tiny logo) is kept as an artifact of the
/// conversation, named where it stood in the result, and shown to the model (it can see) after
/// the call's result, byte for byte as the server sent it.
#[tokio::test]
async fn an_mcp_tools_image_is_kept_and_shown_to_the_model() {
    let Some(script) = everything_server() else {
        return;
    };
    let e = env(vec![
        Canned::openai_tools(&[("c1", "everything__get-tiny-image", "{}")]),
        Canned::openai_text("It is the MCP logo."),
    ])
    .await;
    let mcp = format!("everything=node {script} stdio");
    let (code, out, err) = e
        .rein(&[
            "--mcp",
            &mcp,
            "run",
            "--approval",
            "auto-run",
            "Show me the logo.",
        ])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let result = last_tool_result(&e, 1);
    assert!(
        result.starts_with("Here's the image you requested:\n[image: image-1.png, image/png, "),
        "{result}"
    );
    assert!(
        result.contains("The image above is the MCP logo."),
        "{result}"
    );
    assert!(result.contains("--- artifacts ---\nart-"), "{result}");
    let sent = e.server.requests()[1].body["messages"].clone();
    let shown = sent.as_array().unwrap().last().unwrap();
    assert_eq!(shown["role"], "user", "{sent:#}");
    let url = shown["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap_or_default();
    // What the server sent: its source keeps the image as one base64 string.
    let tool = std::path::Path::new(&script)
        .with_file_name("tools")
        .join("get-tiny-image.js");
    let js = std::fs::read_to_string(&tool).unwrap();
    let sent_by_server = js
        .split_once("MCP_TINY_IMAGE = \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(image, _)| image)
        .unwrap_or_else(|| panic!("no image in {}", tool.display()));
    assert_eq!(url, format!("data:image/png;base64,{sent_by_server}"));
    let (code, listed, err) = e.rein(&["--json", "artifact", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["name"], "image-1.png");
    assert_eq!(listed[0]["media_type"], "image/png");
}

#[tokio::test]
async fn run_calls_an_mcp_tool_and_a_files_tool_in_one_batch() {
    let Some(script) = everything_server() else {
        return;
    };
    let e = env(vec![
        Canned::openai_tools(&[
            ("c1", "files__read", r#"{"path":"notes.txt"}"#),
            ("c2", "everything__echo", r#"{"message":"from mcp"}"#),
        ]),
        Canned::openai_text("The notes say alpha, and the server echoed."),
    ])
    .await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "alpha\n").unwrap();
    let mcp = format!("everything=node {script} stdio");
    let out = e
        .cmd(&[
            "--mcp",
            &mcp,
            "run",
            "--approval",
            "auto-run",
            "Read the notes and ping the server.",
        ])
        .current_dir(&work)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("the server echoed"));
    // The second model request answered both calls of the batch from their results.
    let second = &e.server.requests()[1].body;
    let results: Vec<(String, String)> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                rein_model::testing::data_text(m["content"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].0 == "c1" && results[0].1.contains("alpha"),
        "{results:?}"
    );
    assert!(
        results[1].0 == "c2" && results[1].1 == "Echo: from mcp",
        "{results:?}"
    );
    // The first request offered the server's tools under its name.
    let offered = e.server.requests()[0].body["tools"].to_string();
    assert!(offered.contains("everything__echo"));
}

#[tokio::test]
async fn a_bad_mcp_server_spec_or_command_fails_with_a_clear_message() {
    let e = env(vec![]).await;
    let (code, _, stderr) = e.rein(&["--mcp", "nocommand", "run", "hi"]).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("expected NAME=COMMAND"), "{stderr}");
    let (code, _, stderr) = e
        .rein(&["--mcp", "ghost=/nonexistent/server", "run", "hi"])
        .await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("MCP server `ghost`") && stderr.contains("cannot start"),
        "{stderr}"
    );
    // A URL is reached over Streamable HTTP, not started as a program.
    let (code, _, stderr) = e
        .rein(&["--mcp", "remote=http://127.0.0.1:9/mcp", "run", "hi"])
        .await;
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("MCP server `remote`") && !stderr.contains("cannot start"),
        "{stderr}"
    );
    assert!(e.server.requests().is_empty(), "no model call was made");
}

/// `rein` with `input` piped to its stdin.
async fn piped(e: &Env, args: &[&str], input: &str) -> (i32, String, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = e.cmd(args).stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn chat_keeps_one_topic_switches_models_and_takes_decisions() {
    let e = env(vec![
        calc("c1", "17*23"),
        Canned::openai_text("391."),
        Canned::openai_text("4."),
        calc("c2", "2+2"),
        Canned::openai_text("Four."),
    ])
    .await;
    let (code, out, err) = piped(
        &e,
        &["chat"],
        "What is 17*23?\n/model openai/gpt-4o\nAnd 2+2?\n/history\n/exit\n",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("391.") && out.contains("4."), "{out}");
    assert!(err.contains("model: openai/gpt-4o"), "{err}");
    let requests = e.server.requests();
    assert_eq!(
        requests[2].body["model"], "gpt-4o",
        "the switch took effect"
    );
    let second_turn = requests[2].body["messages"].to_string();
    assert!(
        second_turn.contains("What is 17*23?") && second_turn.contains("And 2+2?"),
        "one topic: {second_turn}"
    );
    let topic = err
        .lines()
        .find_map(|l| l.strip_prefix("topic: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();

    // Continue the topic with approvals: the call waits until /approve.
    let (code, out, err) = piped(
        &e,
        &["chat", "--topic", &topic, "--approval", "allow-list"],
        "Double check 2+2.\nanother line\n/approve\n/exit\n",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("you> What is 17*23?"),
        "history shown first: {err}"
    );
    assert!(err.contains("approve calculator/evaluate"), "{err}");
    assert!(err.contains("waits for a decision"), "{err}");
    assert!(out.contains("Four."), "{out}");
}

/// `rein chat`'s `/regenerate`, `/edit` and `/branch`: each regeneration or edit is a sibling
/// branch the model sees alone, and switching back shows the earlier branch.
#[tokio::test]
async fn chat_regenerates_edits_and_switches_branches() {
    let e = env(vec![
        Canned::openai_text("one"),
        Canned::openai_text("two"),
        Canned::openai_text("two, again"),
        Canned::openai_text("three"),
    ])
    .await;
    let (code, out, err) = piped(
        &e,
        &["chat"],
        "first\nsecond\n/regenerate\n/edit second, edited\n/branch\n/branch 1\n/branch 9\n/exit\n",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("two, again") && out.contains("three"), "{out}");
    let turns = |i: usize| e.server.requests()[i].conversation_texts();
    assert_eq!(
        turns(2),
        ["first", "one", "second"],
        "the old answer is not shown again"
    );
    assert_eq!(
        turns(3),
        ["first", "one", "second, edited"],
        "nor the edited message"
    );
    assert!(
        err.contains("[2/2] second, edited"),
        "the branch point is listed: {err}"
    );
    // `/branch 1` shows the first "second" again, with the newest answer under it.
    let after = err.split("/branch N shows").nth(1).unwrap();
    assert!(after.contains("you> [1/2] second\n"), "{after}");
    assert!(out.contains("[2/2] two, again"), "{out}");
    assert!(after.contains("choose 1 to 2"), "{after}");

    // `rein topic`: found by what it says, shown with its versions, renamed, deleted.
    let topic = err
        .lines()
        .find_map(|l| l.strip_prefix("topic: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    let (code, listed, _) = e.rein(&["topic", "list", "--search", "EDITED"]).await;
    assert_eq!(code, 0);
    assert!(
        listed.contains(&topic) && listed.contains("first"),
        "{listed}"
    );
    let (_, listed, _) = e.rein(&["topic", "list", "--search", "nowhere"]).await;
    assert!(listed.trim().is_empty(), "{listed}");
    let (code, shown, shown_err) = e.rein(&["topic", "show", &topic]).await;
    assert_eq!(code, 0, "{shown_err}");
    assert!(
        shown_err.contains("you> [1/2] second") && shown.contains("[2/2] two, again"),
        "{shown}{shown_err}"
    );
    let (code, _, _) = e.rein(&["topic", "rename", &topic, "Counting"]).await;
    assert_eq!(code, 0);
    let (_, listed, _) = e.rein(&["topic", "list"]).await;
    assert!(listed.contains("Counting"), "{listed}");
    let (code, _, said) = e.rein(&["topic", "delete", &topic]).await;
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("7 messages; 4 operations' records kept"),
        "{said}"
    );
    let (code, _, said) = e.rein(&["topic", "show", &topic]).await;
    assert_eq!(code, 1);
    assert!(said.contains(&format!("no topic {topic}")), "{said}");
    let (_, ops, _) = e.rein(&["op", "list"]).await;
    assert!(ops.starts_with("operation "), "a header first: {ops}");
    assert!(
        ops.lines().next().is_some_and(|h| h.ends_with("asked")),
        "{ops}"
    );
    assert!(
        ops.lines().any(|l| l.ends_with("  second, edited")),
        "each operation with what it was asked: {ops}"
    );
    assert_eq!(
        ops.lines().skip(1).filter(|l| !l.trim().is_empty()).count(),
        4,
        "{ops}"
    );
}

#[tokio::test]
async fn agents_shape_runs_and_models_are_listed() {
    let e = env(vec![calc("c1", "6*7"), Canned::openai_text("42.")]).await;
    let (code, _, err) = e
        .rein(&[
            "agent",
            "create",
            "mathy",
            "--model",
            "openai/gpt-4o",
            "--tools",
            "calculator",
            "--approval",
            "auto-run",
            "--system",
            "Be terse.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e.rein(&["agent", "create", "mathy"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("already exists"), "{err}");
    let (code, _, err) = e.rein(&["agent", "create", "bad name!"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("agent name `bad name!`"), "{err}");
    let (_, listed, _) = e.rein(&["agent", "list"]).await;
    assert!(
        listed.contains("mathy") && listed.contains("openai/gpt-4o"),
        "{listed}"
    );
    let (code, out, err) = e.rein(&["run", "--agent", "mathy", "6*7?"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("42."), "{out}");
    let first = &e.server.requests()[0].body;
    assert_eq!(first["model"], "gpt-4o");
    assert_eq!(
        first["messages"][0]["content"]
            .as_str()
            .map(|s| s.starts_with("Be terse.")),
        Some(true)
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["calculator__evaluate"], "the agent's tools only");
    let (_, shown, _) = e
        .rein(&[
            "--json",
            "agent",
            "edit",
            "mathy",
            "--model",
            "openai/gpt-4o-mini",
        ])
        .await;
    let shown: serde_json::Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["config"]["model"], "openai/gpt-4o-mini");
    assert_eq!(
        shown["config"]["approval"], "auto-run",
        "unchanged settings kept"
    );
    let (code, _, _) = e.rein(&["agent", "delete", "mathy"]).await;
    assert_eq!(code, 0);
    let (code, _, err) = e.rein(&["run", "--agent", "mathy", "x"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no agent `mathy`"), "{err}");

    let (code, models, _) = e.rein(&["models"]).await;
    assert_eq!(code, 0);
    assert!(
        models
            .lines()
            .any(|l| l.starts_with("* openai/gpt-4o-mini")),
        "the default is marked: {models}"
    );
}

#[tokio::test]
async fn the_config_file_is_overridden_by_env_and_flags_and_shown_masked() {
    if local_only(
        "the_config_file_is_overridden_by_env_and_flags_and_shown_masked",
        "this process's configuration file",
    ) {
        return;
    }
    let e = env(vec![Canned::openai_text("from config")]).await;
    let path = e.dir.join("config.toml");
    std::fs::write(
        &path,
        r#"
default_model = "openai/gpt-4o"
[providers.openai]
api_key = "sk-config-secret-123456"
[providers.mylab]
base_url = "http://127.0.0.1:9/v1"
api_key = "lab-secret-abcdefgh"
[agents.terse]
system_role = "Be terse."
"#,
    )
    .unwrap();
    let with_config = |args: &[&str]| {
        let mut c = e.cmd(args);
        c.env("REIN_CONFIG", &path);
        c
    };
    let out = with_config(&["--json", "config", "show"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["default_model"], "openai/gpt-4o");
    assert_eq!(shown["default_model_from"], "config file");
    // The environment's key wins over the file's; both stay hidden.
    assert_eq!(
        shown["providers"]["openai"]["api_key_from"],
        "env OPENAI_API_KEY"
    );
    assert_eq!(shown["providers"]["mylab"]["api_key"], "lab…efgh");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("lab-secret") && !text.contains("sk-test"),
        "{text}"
    );
    assert_eq!(shown["agents"], serde_json::json!(["terse"]));

    // The file's default model and agent are used by `rein run`; a flag beats both.
    let out = with_config(&["run", "--agent", "terse", "hi"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = &e.server.requests()[0].body;
    assert_eq!(body["model"], "gpt-4o");
    // The file's agent brought its role.
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("Be terse."),
        "{body}"
    );
    let out = with_config(&["--json", "config", "show", "--model", "anthropic/claude-x"])
        .output()
        .await
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["default_model_from"], "flag");

    std::fs::write(&path, "defualt_model = \"x/y\"\n").unwrap();
    let out = with_config(&["run", "hi"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("configuration {}", path.display())) && err.contains("defualt_model"),
        "{err}"
    );
}

#[tokio::test]
async fn tasks_are_validated_listed_run_here_and_show_their_next_times_and_history() {
    let e = env(vec![Canned::openai_text(
        "Three new issues since yesterday.",
    )])
    .await;
    let (code, _, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "digest",
            "--instruction",
            "Summarize.",
            "--cron",
            "0 25 * * *",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("invalid cron pattern `0 25 * * *`"), "{err}");
    let (code, _, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "digest",
            "--instruction",
            "Summarize.",
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "Mars/Olympus",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("unknown time zone `Mars/Olympus`"), "{err}");
    let (code, _, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "x",
            "--instruction",
            "y",
            "--cron",
            "* * * * *",
            "--every",
            "1h",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("mutually exclusive"), "{err}");

    let (code, out, err) = e
        .rein(&[
            "--json",
            "task",
            "create",
            "--title",
            "digest",
            "--instruction",
            "Summarize the new issues.",
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "Europe/Berlin",
            "--max-executions",
            "10",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let task: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(task["automation"]["mode"], "schedule");
    let (_, next, _) = e.rein(&["task", "next", &id, "--count", "3"]).await;
    let lines: Vec<&str> = next.lines().collect();
    assert_eq!(lines.len(), 3, "{next}");
    for l in &lines {
        assert!(l.contains(" 09:00:00 CE") && l.contains("UTC)"), "{l}");
    }
    // A new pattern keeps the zone; a bad one is refused and changes nothing.
    let (code, _, err) = e.rein(&["task", "edit", &id, "--cron", "0 25 * * *"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("invalid cron pattern `0 25 * * *`"), "{err}");
    let (_, unchanged, _) = e.rein(&["--json", "task", "show", &id]).await;
    let unchanged: serde_json::Value = serde_json::from_str(unchanged.trim()).unwrap();
    assert_eq!(unchanged["automation"]["pattern"], "0 9 * * 1-5");
    let (code, out, err) = e
        .rein(&["--json", "task", "edit", &id, "--cron", "30 7 * * 1-5"])
        .await;
    assert_eq!(code, 0, "{err}");
    let edited: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(edited["automation"]["pattern"], "30 7 * * 1-5");
    assert_eq!(edited["automation"]["tz"], "Europe/Berlin");
    let (_, listed, _) = e.rein(&["task", "list"]).await;
    assert!(
        listed.contains(&id) && listed.contains("cron \"30 7 * * 1-5\" Europe/Berlin"),
        "{listed}"
    );
    let (_, next, _) = e.rein(&["task", "next", &id, "--count", "1"]).await;
    assert!(next.contains(" 07:30:00 CE"), "{next}");
    let (code, _, _) = e.rein(&["task", "pause", &id]).await;
    assert_eq!(code, 0);
    let (_, shown, _) = e.rein(&["--json", "task", "show", &id]).await;
    let shown: serde_json::Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["status"], "paused");

    // A manual run happens here and now, and is not counted towards the cap.
    let (code, out, err) = e.rein(&["task", "run", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Three new issues"), "{out}");
    let first = &e.server.requests()[0].body;
    let user = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(
        user.contains("Summarize the new issues."),
        "the instruction is the prompt: {user}"
    );
    let (_, history, _) = e.rein(&["task", "history", &id]).await;
    assert!(
        history.contains("manual")
            && history.contains("completed")
            && history.contains("Three new issues since yesterday."),
        "{history}"
    );
    let (_, shown, _) = e.rein(&["--json", "task", "show", &id]).await;
    let shown: serde_json::Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["executions"], 0);
    let (code, _, _) = e.rein(&["task", "delete", &id]).await;
    assert_eq!(code, 0);
    let (code, _, err) = e.rein(&["task", "show", &id]).await;
    assert_eq!(code, 1);
    assert!(err.contains(&format!("no task {id}")), "{err}");
}

#[tokio::test]
async fn web_fetch_ignores_proxy_variables_so_its_address_check_cannot_be_skipped() {
    // A "proxy" on loopback that counts the connections it gets.
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((_sock, _)) = proxy.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let e = env(vec![
        Canned::openai_tools(&[(
            "w1",
            "web__fetch",
            &serde_json::json!({"url": "http://internal.example.invalid/admin"}).to_string(),
        )]),
        Canned::openai_text("done"),
    ])
    .await;
    let mut c = e.cmd(&["run", "--approval", "auto-run", "fetch it"]);
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        c.env(var, &proxy_url);
    }
    // The model server on loopback is reached directly (the model client honours proxies).
    c.env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    let out = c.output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The tool resolved the name itself (and failed: there is no network), never the proxy.
    let second = &e.server.requests()[1].body;
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        result.contains("cannot resolve internal.example.invalid"),
        "{result}"
    );
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the proxy was used"
    );
}

fn shell_call(id: &str) -> Canned {
    Canned::openai_tools(&[(
        id,
        "shell__run",
        &serde_json::json!({"command": "echo hi"}).to_string(),
    )])
}

/// Every model request of the operation offered exactly the scope it started with.
fn assert_scope(server: &rein_model::testing::Server, requests: usize) {
    assert_eq!(server.requests().len(), requests);
    for (i, r) in server.requests().iter().enumerate() {
        let (tools, system) = (r.offered_tools(), r.system_text());
        assert_eq!(
            tools,
            ["calculator__evaluate", "shell__run"],
            "request {i} offered other tools"
        );
        assert!(system.contains("Be scoped."), "request {i}: {system}");
        assert!(!system.contains("Changed."), "request {i}: {system}");
    }
}

async fn scoped_agent(e: &Env) {
    let (code, _, err) = e
        .rein(&[
            "agent",
            "create",
            "scoped",
            "--tools",
            "calculator,shell",
            "--system",
            "Be scoped.",
            "--approval",
            "manual",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
}

#[tokio::test]
async fn approve_from_another_process_keeps_the_scope_even_after_the_agent_changed() {
    let e = env(vec![shell_call("s1"), Canned::openai_text("done")]).await;
    scoped_agent(&e).await;
    let (code, _, err) = e.rein(&["run", "--agent", "scoped", "say hi"]).await;
    assert_eq!(code, 3, "parked for approval: {err}");
    let id = op_id(&err);
    // The agent changes while the operation waits: the operation does not.
    let (code, _, _) = e
        .rein(&[
            "agent",
            "edit",
            "scoped",
            "--tools",
            "files,web",
            "--system",
            "Changed.",
        ])
        .await;
    assert_eq!(code, 0);
    let (code, _, err) = e.rein(&["approve", &id.to_string(), "--all"]).await;
    assert_eq!(code, 0, "{err}");
    assert_scope(&e.server, 2);
    // The spec is on the operation, with the agent's version at the start.
    let (_, shown, _) = e.rein(&["--json", "op", "show", &id.to_string()]).await;
    let shown: serde_json::Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(
        shown["spec"]["allowed_tools"],
        serde_json::json!(["calculator", "shell"])
    );
    assert_eq!(shown["spec"]["agent"]["name"], "scoped");
    assert_eq!(shown["spec"]["agent"]["version"], 1);
}

#[tokio::test]
async fn reject_from_another_process_after_the_agent_was_deleted_keeps_the_scope() {
    let e = env(vec![
        shell_call("s1"),
        Canned::openai_text("ok, not running it"),
    ])
    .await;
    scoped_agent(&e).await;
    let (code, _, err) = e.rein(&["run", "--agent", "scoped", "say hi"]).await;
    assert_eq!(code, 3, "{err}");
    let id = op_id(&err);
    let (code, _, _) = e.rein(&["agent", "delete", "scoped"]).await;
    assert_eq!(code, 0);
    let (code, _, err) = e
        .rein(&["reject", &id.to_string(), "--reason", "not now"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_scope(&e.server, 2);
}

#[tokio::test]
async fn resume_from_another_process_keeps_the_scope_and_the_budget_policy() {
    // 120 tokens per call against a limit of 100 with policy `interrupt`: each model call
    // interrupts the operation, resumably.
    let e = env(vec![
        calc("c1", "6*7"),
        calc("c2", "6*8"),
        Canned::openai_text("done"),
    ])
    .await;
    scoped_agent(&e).await;
    let (code, _, err) = e
        .rein(&[
            "run",
            "--agent",
            "scoped",
            "--token-limit",
            "100",
            "--budget-policy",
            "interrupt",
            "compute",
        ])
        .await;
    assert_eq!(code, 4, "interrupted by the budget: {err}");
    let id = op_id(&err);
    let (code, _, _) = e
        .rein(&[
            "agent", "edit", "scoped", "--tools", "files", "--system", "Changed.",
        ])
        .await;
    assert_eq!(code, 0);
    let (code, _, err) = e.rein(&["op", "resume", &id.to_string()]).await;
    assert_eq!(code, 4, "the budget interrupts again: {err}");
    assert_scope(&e.server, 2);
}

#[tokio::test]
async fn a_task_for_an_unknown_agent_is_refused_and_a_deleted_agent_stops_its_runs() {
    let e = env(vec![]).await;
    let (code, _, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "t",
            "--instruction",
            "x",
            "--agent",
            "ghost",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no agent `ghost`"), "{err}");
    let (code, _, _) = e.rein(&["agent", "create", "helper"]).await;
    assert_eq!(code, 0);
    let (code, out, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "t",
            "--instruction",
            "x",
            "--agent",
            "helper",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let task = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, _) = e.rein(&["agent", "delete", "helper"]).await;
    assert_eq!(code, 0);
    let (code, _, err) = e.rein(&["task", "run", &task]).await;
    assert_eq!(code, 1);
    assert!(err.contains("agent_missing"), "{err}");
    assert!(e.server.requests().is_empty(), "no model was asked");
}

#[tokio::test]
async fn every_step_limit_ends_with_an_answer_when_the_model_keeps_asking_for_tools() {
    for max in 1..=5u32 {
        // The model asks for a tool whenever tools are offered, and answers when they are not.
        let mut turns: Vec<Canned> = (0..max + 1)
            .map(|i| calc(&format!("c{i}"), &format!("{i}*7")))
            .collect();
        // Model calls come on steps 1, 3, 5, ... up to the limit.
        turns.truncate(max.div_ceil(2) as usize);
        turns.push(Canned::openai_text("Final answer: 42."));
        let e = env(turns).await;
        let (code, out, err) = e
            .rein(&["run", "--max-steps", &max.to_string(), "keep computing"])
            .await;
        assert_eq!(code, 0, "max {max}: {err}");
        assert!(out.contains("Final answer: 42."), "max {max}: {out}\n{err}");
        assert!(err.contains("max_steps_completed"), "max {max}: {err}");
        let requests = e.server.requests();
        assert!(
            requests.len() as u32 <= max + 1,
            "max {max}: {} calls",
            requests.len()
        );
        // The final call lets the model call no tool, the tools still defined, and no request
        // is one the provider refuses.
        let last = requests.last().unwrap();
        assert_eq!(last.body["tool_choice"], "none", "max {max}");
        assert!(!last.offered_tools().is_empty(), "max {max}");
        assert!(requests.iter().all(|r| r.refused.is_none()), "max {max}");
    }
}

/// A delegation killed with SIGKILL right after each of its commits (the parent asking, the
/// parent parking with its sub-agent created, each of the sub-agent's steps, the parent taking
/// the result, its answer) and while the sub-agent's at-most-once tool runs, then resumed from
/// the root by another process: no sub-agent created twice, the tool never run twice, usage
/// counted once.
#[tokio::test]
async fn a_delegation_killed_at_each_boundary_resumes_without_doing_anything_twice() {
    if local_only(
        "a_delegation_killed_at_each_boundary_resumes_without_doing_anything_twice",
        "it kills this process at crash points",
    ) {
        return;
    }
    let mut points: Vec<String> = (1..=12).map(|n| format!("commit:{n}")).collect();
    points.push("tool:l1".into());
    let mut reached = 0;
    for point in &points {
        let e = env(Vec::new()).await;
        // Spare answers: a step re-run after the kill asks the model again.
        e.server.route(
            "ROLE-BOSS",
            vec![
                Canned::openai_tools(&[(
                    "d1",
                    "agents__delegate",
                    &serde_json::json!({"title": "book", "task": "Append paid.", "agent": "helper"})
                        .to_string(),
                )]),
                Canned::openai_text("Booked."),
                Canned::openai_text("Booked."),
            ],
        );
        e.server.route(
            "ROLE-HELPER",
            vec![
                ledger("l1", "paid"),
                Canned::openai_text("appended"),
                Canned::openai_text("appended"),
            ],
        );
        for args in [
            [
                "agent",
                "create",
                "boss",
                "--system",
                "ROLE-BOSS: you delegate.",
                "--approval",
                "auto-run",
            ],
            [
                "agent",
                "create",
                "helper",
                "--system",
                "ROLE-HELPER: you keep the ledger.",
                "--tools",
                "ledger",
            ],
        ] {
            let (code, _, err) = e.rein(&args).await;
            assert_eq!(code, 0, "{err}");
        }
        let args = ["run", "--agent", "boss", "Book the payment."];
        if !kill_if_paused(&e, &args, point).await {
            // The whole delegation took fewer commits than this point.
            continue;
        }
        reached += 1;
        let store = e.store().await;
        let roots: Vec<_> = store
            .list_operations(&rein_store::OperationFilter::default())
            .await
            .unwrap()
            .into_iter()
            .filter(|o| o.parent_operation.is_none())
            .collect();
        assert_eq!(roots.len(), 1, "{point}");
        let root = roots[0].id;
        let (code, _, err) = e.rein(&["op", "resume", &root.to_string()]).await;
        assert_eq!(code, 0, "{point}: {err}");
        let store = e.store().await;
        let op = store.load_operation(root).await.unwrap().unwrap();
        assert_eq!(
            op.record.finish_reason,
            Some(rein_core::state::FinishReason::Completed),
            "{point}"
        );
        let kids = store
            .list_operations(&rein_store::OperationFilter {
                parent: Some(root),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(kids.len(), 1, "{point}: one sub-agent");
        assert_eq!(kids[0].status, rein_core::state::Status::Done, "{point}");
        let ran = e.ledger_lines();
        if point == "tool:l1" {
            assert_eq!(
                ran, 0,
                "an at-most-once call found running is settled, not repeated"
            );
        } else {
            assert_eq!(ran, 1, "{point}: the tool ran once");
        }
        // Usage counted once: the parent's tokens are its own calls' plus its sub-agent's.
        let own: u64 = op
            .state
            .messages
            .iter()
            .filter_map(|m| m.usage.map(|u| u.total))
            .sum();
        assert_eq!(
            op.record.total_tokens,
            own + kids[0].total_tokens,
            "{point}: usage counted once"
        );
        for id in [root, kids[0].id] {
            let seqs: Vec<u64> = store
                .events(id, None)
                .await
                .unwrap()
                .iter()
                .map(|e| e.seq)
                .collect();
            assert_eq!(
                seqs,
                (0..seqs.len() as u64).collect::<Vec<_>>(),
                "{point}: gapless events"
            );
        }
    }
    assert!(reached >= 9, "only {reached} boundaries were reached");
}

/// `rein group` and `rein run --group`: members answer in turn, each seeing the others' words
/// labelled, and the run prints each turn with its speaker.
#[tokio::test]
async fn a_group_run_from_the_cli_prints_each_members_turn() {
    let e = env(Vec::new()).await;
    e.server
        .route("ROLE-ANN", vec![Canned::openai_text("ann says hi")]);
    e.server
        .route("ROLE-BOB", vec![Canned::openai_text("bob agrees")]);
    e.server
        .route("ROLE-CY", vec![Canned::openai_text("cy concludes")]);
    let (code, _, err) = e
        .rein(&["group", "create", "trio", "--members", "ann,bob"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no agent `ann`"), "{err}");
    for name in ["ann", "bob", "cy"] {
        let role = format!("ROLE-{}: be brief.", name.to_uppercase());
        let (code, _, err) = e.rein(&["agent", "create", name, "--system", &role]).await;
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = e
        .rein(&["group", "create", "trio", "--members", "ann,ann"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("distinct"), "{err}");
    let (code, _, err) = e
        .rein(&[
            "group",
            "create",
            "trio",
            "--members",
            "ann,bob,cy",
            "--policy",
            "round-robin",
            "--max-rounds",
            "3",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = e.rein(&["--json", "group", "show", "trio"]).await;
    assert_eq!(code, 0);
    let shown: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        shown["config"]["members"],
        serde_json::json!(["ann", "bob", "cy"])
    );
    assert_eq!(shown["config"]["policy"], "round_robin");

    let (code, out, err) = e.rein(&["run", "--group", "trio", "Say hello."]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "ann: ann says hi\n\nbob: bob agrees\n\ncy: cy concludes",
        "{err}"
    );
    assert!(err.contains("3 rounds, the group's limit"), "{err}");
    let requests = e.server.requests();
    let cy = requests
        .iter()
        .find(|r| r.system_text().contains("ROLE-CY"))
        .unwrap();
    let sent = cy.body["messages"].to_string();
    assert!(
        sent.contains(r#"[Message from agent \"ann\"]\nann says hi"#),
        "{sent}"
    );
    assert!(
        sent.contains(r#"[Message from agent \"bob\"]\nbob agrees"#),
        "{sent}"
    );
    let (code, _, err) = e.rein(&["run", "--group", "nope", "x"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no group `nope`"), "{err}");
}

/// `rein models --remote`: what the provider itself serves (its `/models`); `google` is an
/// alias of Gemini, so a Gemini model can be addressed either way.
#[tokio::test]
async fn models_remote_lists_what_the_provider_serves() {
    let e = env(vec![Canned::json(
        200,
        &serde_json::json!({"object": "list", "data": [{"id": "gpt-b"}, {"id": "gpt-a"}]}),
    )])
    .await;
    let (code, out, err) = e.rein(&["models", "--remote", "openai"]).await;
    assert_eq!(code, 0, "{err}");
    // Neither is in the catalog: each says it has no price (a cost limit would refuse it).
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("gpt-a  (unpriced") && lines[1].starts_with("gpt-b  (unpriced"),
        "{out}"
    );
    assert!(lines[0].contains("[prices.\"openai/gpt-a\"]"), "{out}");
    let seen = e.server.requests();
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].path, "/v1/models");
    let mut no_key = e.cmd(&["models", "--remote", "anthropic"]);
    no_key.env_remove("ANTHROPIC_API_KEY");
    let out = no_key.output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("set ANTHROPIC_API_KEY"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, a run's spans reach an OTLP/HTTP receiver (a local
/// server taking the JSON export): the operation, its steps, each model call and tool call,
/// nested in that order, with OpenTelemetry's GenAI attributes and the operation id.
#[tokio::test]
async fn traces_reach_an_otlp_receiver_with_genai_attributes() {
    if local_only(
        "traces_reach_an_otlp_receiver_with_genai_attributes",
        "this process's OpenTelemetry exporter",
    ) {
        return;
    }
    let e = env(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
    ])
    .await;
    let receiver = serve(
        (0..20)
            .map(|_| Canned::json(200, &serde_json::json!({})))
            .collect(),
        5,
    )
    .await;
    let mut cmd = e.cmd(&["run", "--approval", "auto-run", "What is 17*23?"]);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.base);
    let out = cmd.output().await.unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let op = op_id(&String::from_utf8_lossy(&out.stderr));

    let mut spans: Vec<serde_json::Value> = Vec::new();
    for r in receiver.requests() {
        assert_eq!(r.path, "/v1/traces");
        for rs in r.body["resourceSpans"].as_array().into_iter().flatten() {
            let service = rs["resource"]["attributes"].to_string();
            assert!(
                service.contains("service.name") && service.contains("rein"),
                "{service}"
            );
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                spans.extend(ss["spans"].as_array().into_iter().flatten().cloned());
            }
        }
    }
    let attr = |s: &serde_json::Value, key: &str| -> String {
        s["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == key)
            .map(|a| {
                let v = &a["value"];
                v["stringValue"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| v["intValue"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| v["intValue"].to_string())
            })
            .unwrap_or_default()
    };
    let named = |prefix: &str| -> Vec<&serde_json::Value> {
        spans
            .iter()
            .filter(|s| s["name"].as_str().unwrap_or_default().starts_with(prefix))
            .collect()
    };
    let agent = named("invoke_agent");
    assert_eq!(agent.len(), 1, "{spans:#?}");
    assert_eq!(attr(agent[0], "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(agent[0], "rein.operation.id"), op.to_string());
    let steps = named("step ");
    assert!(steps.len() >= 3, "{spans:#?}");
    assert!(
        steps
            .iter()
            .all(|s| s["parentSpanId"] == agent[0]["spanId"])
    );
    let chats = named("chat gpt-4o-mini");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for c in &chats {
        assert_eq!(attr(c, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(c, "gen_ai.request.model"), "gpt-4o-mini");
        assert_eq!(attr(c, "gen_ai.provider.name"), "openai");
        assert_eq!(attr(c, "gen_ai.usage.input_tokens"), "100");
        assert_eq!(attr(c, "gen_ai.usage.output_tokens"), "20");
        assert!(
            steps.iter().any(|s| s["spanId"] == c["parentSpanId"]),
            "a model call sits in a step"
        );
    }
    assert!(
        chats
            .iter()
            .any(|c| attr(c, "gen_ai.response.finish_reasons") == "tool_use"
                || attr(c, "gen_ai.response.finish_reasons") == "tool_calls"),
        "{chats:#?}"
    );
    let tools = named("execute_tool calculator/evaluate");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    assert_eq!(attr(tools[0], "gen_ai.tool.name"), "calculator/evaluate");
    assert_eq!(attr(tools[0], "gen_ai.tool.call.id"), "c1");
    assert!(
        steps
            .iter()
            .any(|s| s["spanId"] == tools[0]["parentSpanId"])
    );
    assert!(
        spans.iter().all(|s| s["traceId"] == agent[0]["traceId"]),
        "one trace"
    );
}

/// A skill folder with a resource file.
fn write_skill(root: &std::path::Path, name: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: Use for {name} work.\n---\n{body}\n"),
    )
    .unwrap();
    std::fs::write(dir.join("reference.md"), format!("{name} reference")).unwrap();
}

#[tokio::test]
async fn a_project_skill_is_activated_survives_a_kill_and_is_explained_per_step() {
    if local_only(
        "a_project_skill_is_activated_survives_a_kill_and_is_explained_per_step",
        "skills of this machine's project, and a kill at a crash point",
    ) {
        return;
    }
    // Answers by turn: the model call after the activation runs beside the commit the kill
    // stops (pipelined durability), and the resumed step asks it again.
    let e = env(Vec::new()).await;
    e.server.by_turn(vec![
        Canned::openai_tools(&[("s1", "skills__activate", r#"{"name":"pdf-tools"}"#)]),
        Canned::openai_tools(&[(
            "r1",
            "files__read",
            r#"{"path":"skill://pdf-tools/reference.md"}"#,
        )]),
        Canned::openai_text("Summarized."),
    ]);
    let project = e.dir.join("project");
    let skills = project.join(".rein/skills");
    write_skill(&skills, "pdf-tools", "BODY: use pdftotext -layout.");
    write_skill(&skills, "changelog", "BODY: group by kind.");
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(
        skills.join("broken/SKILL.md"),
        "---\nname: broken\ndescription: [unclosed\n---\n",
    )
    .unwrap();
    let in_project = |args: &[&str]| {
        let mut c = e.cmd(args);
        c.current_dir(&project);
        c
    };
    // The malformed skill is reported with its file and line; the others load.
    let out = in_project(&["skill", "list"]).output().await.unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listed}");
    assert!(
        listed.contains("pdf-tools") && listed.contains("changelog"),
        "{listed}"
    );
    assert!(
        listed.contains("left out:") && listed.contains("broken/SKILL.md:3:"),
        "{listed}"
    );
    // Killed right after the commit that recorded the activation.
    let mut run = in_project(&["run", "--approval", "auto-run", "Summarize report.pdf"]);
    run.env("REIN_TEST_PAUSE_AT", "commit:2");
    let mut child = run.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let paused = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.starts_with("REIN_TEST_PAUSED") {
                return;
            }
            seen.push(line);
        }
        panic!("the run exited before pausing: {seen:?}");
    };
    tokio::time::timeout(Duration::from_secs(60), paused)
        .await
        .expect("pause point reached");
    child.kill().await.unwrap();
    let store = e.store().await;
    let id = store
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap()[0]
        .id;
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.state.activated_skills[0].name, "pdf-tools");
    let before = e.server.requests().len();
    assert!((1..=2).contains(&before), "{before} calls before the kill");
    // Resumed by another process, in a directory without the project's skills: the activation
    // is state, so the body is still admitted (in its activation's result) and the skill's
    // files still readable.
    let (code, _, err) = e.rein(&["op", "resume", &id.to_string()]).await;
    assert_eq!(code, 0, "{err}");
    let requests = e.server.requests();
    assert_eq!(
        requests.len(),
        before + 2,
        "the step after the commit asked (again)"
    );
    assert!(!requests[0].system_text().contains("BODY:"));
    assert!(
        requests[0]
            .system_text()
            .contains("- pdf-tools: Use for pdf-tools work.")
    );
    for r in &requests[1..] {
        assert!(r.tool_result("s1").contains("BODY: use pdftotext -layout."));
        assert!(!r.system_text().contains("BODY:"));
    }
    let read = requests[requests.len() - 1].tool_result("r1");
    assert!(read.contains("pdf-tools reference"), "{read}");
    assert_consistent(&store, id).await;
    // What the first call admitted, by item and by processor.
    let (code, shown, err) = e
        .rein(&["op", "show", &id.to_string(), "--context", "1"])
        .await;
    assert_eq!(code, 0, "{err}");
    for expected in ["skills", "tool_schemas", "history", "total", "skills "] {
        assert!(shown.contains(expected), "{expected} in {shown}");
    }
    let (_, json, _) = e
        .rein(&["--json", "op", "show", &id.to_string(), "--context", "1"])
        .await;
    let calls: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let report = &calls[0]["report"];
    let sum: u64 = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, report["total_tokens"].as_u64().unwrap());
    let (code, _, err) = e
        .rein(&["op", "show", &id.to_string(), "--context", "99"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("step 99 made no model call"), "{err}");
}

#[tokio::test]
async fn skills_are_installed_removed_and_named_on_the_command_line() {
    if local_only(
        "skills_are_installed_removed_and_named_on_the_command_line",
        "skills installed on this machine",
    ) {
        return;
    }
    let e = env(vec![
        Canned::openai_text("First."),
        Canned::openai_text("Second."),
    ])
    .await;
    let source = e.dir.join("src-skills");
    write_skill(&source, "notes", "BODY: keep notes short.");
    let (code, _, err) = e
        .rein(&["skill", "add", source.join("notes").to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(e.dir.join("skills/notes/reference.md").is_file());
    let (code, _, err) = e
        .rein(&["skill", "add", source.join("notes").to_str().unwrap()])
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("already installed") && err.contains("--force"),
        "{err}"
    );
    let (code, shown, _) = e.rein(&["skill", "show", "notes"]).await;
    assert_eq!(code, 0);
    assert!(shown.contains("BODY: keep notes short.") && shown.contains("reference.md"));
    let (code, _, err) = e.rein(&["skill", "add", e.dir.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("SKILL.md") && err.contains("cannot be read"),
        "{err}"
    );
    // Named on the command line: admitted from the first call; progressive disclosure lists
    // the built-ins instead of sending their schemas.
    let (code, _, err) = e
        .rein(&[
            "run",
            "--skill",
            "notes",
            "--tools-disclosure",
            "progressive",
            "Take a note",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let first = &e.server.requests()[0];
    assert!(first.system_text().contains("BODY: keep notes short."));
    assert_eq!(
        first.offered_tools(),
        ["skills__activate", "tools__activate_tools"]
    );
    let (code, _, err) = e.rein(&["run", "--skill", "nope", "x"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no skill named nope"), "{err}");
    // The default (`auto`) sends the built-ins' schemas: they cost less than the threshold.
    let (code, _, err) = e.rein(&["run", "Again"]).await;
    assert_eq!(code, 0, "{err}");
    let second = e.server.requests().pop().unwrap();
    assert!(second.offered_tools().contains(&"files__read".to_owned()));
    assert!(
        second
            .system_text()
            .contains("- notes: Use for notes work.")
    );
    let (code, _, err) = e.rein(&["skill", "remove", "notes"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!e.dir.join("skills/notes").exists());
    let (code, _, err) = e.rein(&["skill", "remove", "notes"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no skill `notes`"), "{err}");
}

/// Whether `needle` occurs in the file at `path`.
fn file_contains(path: &std::path::Path, needle: &[u8]) -> bool {
    find(&std::fs::read(path).unwrap(), needle).is_some()
}

#[tokio::test]
async fn a_build_without_test_hooks_has_no_crash_points_and_no_ledger_tool() {
    // scripts/test builds it (`cargo build -p rein-cli --bin rein`, no dev-dependencies, so no
    // `test-hooks`: what a production build is) and names it here.
    let Some(plain) = std::env::var_os("REIN_PLAIN_BIN").map(PathBuf::from) else {
        rein_testkit::skip(
            "the production build's test hooks",
            "REIN_PLAIN_BIN is not set (scripts/test builds rein without test hooks and sets it)",
        );
        return;
    };
    // The check can fail: the test build has both hooks.
    let hooked = PathBuf::from(env!("CARGO_BIN_EXE_rein"));
    assert!(file_contains(&hooked, b"REIN_TEST_PAUSE_AT"));
    assert!(file_contains(&hooked, b"REIN_TEST_LEDGER"));
    assert!(file_contains(&hooked, b"REIN_TEST_DEVICE_DROP"));
    assert!(!file_contains(&plain, b"REIN_TEST_PAUSE_AT"));
    assert!(!file_contains(&plain, b"REIN_TEST_LEDGER"));
    assert!(!file_contains(&plain, b"REIN_TEST_DEVICE_DROP"));
    // And it ignores the variables: no pause at the first commit, no ledger tool offered.
    let e = env(vec![Canned::openai_text("No ledger here.")]).await;
    let mut plain_cmd = Command::new(&plain);
    plain_cmd
        .args(["--db", &e.db(), "run", "Append to the ledger."])
        .env_clear()
        .envs(rein_testkit::coverage_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", &e.dir)
        .env("OPENAI_BASE_URL", format!("{}/v1", e.server.base))
        .env("OPENAI_API_KEY", "sk-test")
        .env("REIN_TEST_TOOLS", "1")
        .env("REIN_TEST_LEDGER", e.ledger())
        .env("REIN_TEST_PAUSE_AT", "commit:1")
        .stdin(Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(60), plain_cmd.output())
        .await
        .expect("it never pauses")
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("REIN_TEST_PAUSED"));
    let offered = e.server.requests()[0].offered_tools();
    assert!(
        !offered.iter().any(|t| t.starts_with("ledger")),
        "{offered:?}"
    );
    assert!(offered.contains(&"calculator__evaluate".to_owned()));
    assert!(!e.ledger().exists());
}

/// Read `out` until `needle` has appeared `times` times in all that was read (kept in `seen`),
/// within 60 s.
async fn read_until(
    out: &mut tokio::process::ChildStdout,
    seen: &mut String,
    needle: &str,
    times: usize,
) {
    use tokio::io::AsyncReadExt;
    let wait = async {
        let mut buf = [0u8; 512];
        while seen.matches(needle).count() < times {
            let n = out.read(&mut buf).await.unwrap();
            assert!(n > 0, "the terminal closed before `{needle}`:\n{seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    };
    if tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .is_err()
    {
        panic!("`{needle}` did not appear within 60 s:\n{seen}");
    }
}

pub(crate) fn ask_deploy(id: &str) -> Canned {
    let question = serde_json::json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    Canned::openai_tools(&[(id, "ask_user__ask", &question.to_string())])
}

#[tokio::test]
async fn a_task_run_never_parks_on_a_question_even_on_a_terminal_in_manual_mode() {
    let e = env(vec![
        ask_deploy("q1"),
        Canned::openai_text("Not deploying unattended."),
    ])
    .await;
    let (code, out, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "nightly",
            "--instruction",
            "Ship it if I agree.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let task = out.split_whitespace().next().unwrap().to_owned();
    let (code, out, err) = e.rein(&["task", "run", &task]).await;
    assert_eq!(code, 0, "a task run completes: {err}");
    assert!(out.contains("Not deploying unattended."), "{out}");
    assert_eq!(
        e.server.requests()[1].tool_result("q1"),
        "Nobody answered (no person is available in this run). Continue with your best judgement and say which assumption you made."
    );
}

#[tokio::test]
async fn a_task_runs_brief_is_listed_read_and_its_handoff_and_feedback_reach_the_next_run() {
    let e = env(vec![
        Canned::openai_text("3 new items in the queue."),
        Canned::openai_text("Top 3 only."),
    ])
    .await;
    let (code, out, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "Queue watch",
            "--instruction",
            "Check the queue.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let task = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) = e.rein(&["task", "run", &task]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = e.rein(&["brief", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("info   result   unread"), "{out}");
    assert!(out.contains("Queue watch: result"), "{out}");
    let id = out.split_whitespace().next().unwrap().to_owned();
    let (code, out, _) = e.rein(&["brief", "show", &id]).await;
    assert_eq!(code, 0);
    assert!(out.contains("3 new items in the queue."), "{out}");
    assert!(out.contains("resolve with: rein brief resolve"), "{out}");
    let (_, out, _) = e.rein(&["brief", "list"]).await;
    assert!(out.contains(" read "), "opened: {out}");

    let (code, _, err) = e.rein(&["brief", "resolve", &id, "retry"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("offers feedback, acknowledge; not `retry`"),
        "{err}"
    );
    let (code, _, err) = e
        .rein(&[
            "brief",
            "resolve",
            &id,
            "feedback",
            "--comment",
            "Only the top 3.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e.rein(&["brief", "resolve", &id, "acknowledge"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("was already resolved"), "{err}");
    let (code, out, _) = e.rein(&["brief", "list"]).await;
    assert_eq!(code, 0);
    assert!(!out.contains(&id), "resolved briefs are not listed: {out}");

    let (code, _, err) = e.rein(&["task", "run", &task]).await;
    assert_eq!(code, 0, "{err}");
    let asked = |n: usize| {
        e.server.requests()[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(asked(0), "Check the queue.");
    // The second run builds on the first: its handoff, then the feedback.
    let second = asked(1);
    assert!(
        second.starts_with("Check the queue.\n\nHandoffs from the previous runs")
            && second.contains(": 3 new items in the queue.")
            && second.ends_with(
                "\n\nFeedback from the person on earlier runs (take it into account):\n- Only the top 3."
            ),
        "{second}"
    );
}

#[tokio::test]
async fn an_agent_raises_an_urgent_decision_brief_for_its_task_and_the_person_resolves_it() {
    let raise = serde_json::json!({
        "kind": "decision",
        "priority": "urgent",
        "title": "Two feeds disagree",
        "summary": "Feed A says 3 items, feed B says 5. Which one counts?",
        "actions": [{"key": "feed-a", "label": "Trust feed A"}, {"key": "feed-b", "label": "Trust feed B"}]
    });
    let e = env(vec![
        Canned::openai_tools(&[("b1", "brief__create", &raise.to_string())]),
        Canned::openai_text("Raised a decision; waiting for it."),
    ])
    .await;
    let (code, out, err) = e
        .rein(&[
            "task",
            "create",
            "--title",
            "Feeds",
            "--instruction",
            "Compare the feeds.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let task = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) = e.rein(&["task", "run", &task]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        e.server.requests()[1]
            .tool_result("b1")
            .ends_with("is in the person's inbox; they resolve it when they can."),
        "{}",
        e.server.requests()[1].tool_result("b1")
    );
    let (_, out, _) = e.rein(&["--json", "brief", "list", "--task", &task]).await;
    let briefs: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The agent's decision; the run itself gave an informational result brief too.
    let decision = briefs
        .iter()
        .find(|b| b["kind"] == "decision")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(decision["priority"], "urgent");
    assert_eq!(decision["task_id"], task.as_str());
    let keys: Vec<&str> = decision["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["feed-a", "feed-b", "acknowledge"]);
    let id = decision["id"].as_str().unwrap();
    let (code, out, err) = e
        .rein(&["brief", "resolve", id, "feed-b", "--comment", "B is newer"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("resolved: feed-b"), "{out}");
}

#[tokio::test]
async fn a_task_after_another_waits_for_it_and_a_cycle_is_refused_by_name() {
    let e = env(vec![]).await;
    let create = |title: &'static str, after: Option<String>| {
        let e = &e;
        async move {
            let mut args = vec![
                "task",
                "create",
                "--title",
                title,
                "--instruction",
                "Do it.",
            ];
            let after = after.unwrap_or_default();
            if !after.is_empty() {
                args.extend(["--after", after.as_str()]);
            }
            let (code, out, err) = e.rein(&args).await;
            assert_eq!(code, 0, "{err}");
            out.split_whitespace().next().unwrap().to_owned()
        }
    };
    let a = create("Collect", None).await;
    let b = create("Report", Some(a.clone())).await;
    let (code, _, err) = e.rein(&["task", "run", &b]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "blocked: waits for task {a} (Collect), which is active"
        )),
        "{err}"
    );
    assert!(e.server.requests().is_empty(), "nothing ran");
    let (code, _, err) = e.rein(&["task", "edit", &a, "--after", &b]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "depends_on would make a cycle: {a} (Collect) → {b} (Report) → {a} (Collect)"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn without_a_terminal_a_question_parks_and_rein_answer_continues_it_once() {
    let e = env(vec![ask_deploy("q1"), Canned::openai_text("Deploying.")]).await;
    let (code, _, err) = e.rein(&["run", "Ship it if I agree."]).await;
    assert_eq!(code, 3, "waiting-for-human exit code: {err}");
    assert!(
        err.contains("question q1: Deploy to production now? [yes (Deploy), no (Wait)]"),
        "{err}"
    );
    let op = op_id(&err);
    let id = op.to_string();
    assert!(err.contains(&format!("rein answer {id}")), "{err}");
    // Approving a question, or an answer that is not an option, is refused; nothing changes.
    let (code, _, err) = e.rein(&["approve", &id, "--call", "q1"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("is a question: answer it"), "{err}");
    let (code, _, err) = e.rein(&["answer", &id, "--option", "maybe"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("`maybe` is not one of the options: yes, no"),
        "{err}"
    );
    assert_eq!(e.server.requests().len(), 1);

    let (code, out, err) = e.rein(&["answer", &id, "Deploy"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Deploying."), "{out}");
    assert_eq!(
        e.server.requests()[1].tool_result("q1"),
        "The user chose `yes` (Deploy)."
    );
    let (code, _, err) = e.rein(&["answer", &id, "--option", "no"]).await;
    assert_eq!(code, 1, "a question is answered once");
    assert!(err.contains("not waiting for a decision"), "{err}");
    assert_consistent(&e.store().await, op).await;
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| PathBuf::from(d).join(program))
        .find(|p| p.is_file())
}

#[tokio::test]
async fn op_cancel_from_another_process_stops_a_running_operation_and_keeps_its_partial_answer() {
    let stalled = Canned::openai_text_then_stall("A partial answer that never finishes");
    let e = env(vec![stalled]).await;
    let mut child = e.cmd(&["run", "tell me"]).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    read_until(&mut stdout, &mut String::new(), "never finishes", 1).await;
    let store = e.store().await;
    let id = store
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap()[0]
        .id;
    let (code, _, err) = e.rein(&["op", "cancel", &id.to_string()]).await;
    assert_eq!(code, 4, "{err}");
    // Here another process runs it: the request is written and that process stops it.
    // Through a server, which runs it, the command follows it to its end.
    let said = if parity() {
        "interrupted: cancelled on request"
    } else {
        "cancellation requested"
    };
    assert!(err.contains(said), "{err}");
    // The running process stops at once (the model stream is cancelled), not when it ends.
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the running process stopped within 20 s")
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.record.status, rein_core::state::Status::Interrupted);
    assert_eq!(
        op.state.messages.last().unwrap().text_content(),
        "A partial answer that never finishes",
        "the partial answer is kept"
    );
    assert_consistent(&store, id).await;
}

#[tokio::test]
async fn a_recorded_run_replays_offline_with_the_same_answer() {
    let e = env(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
    ])
    .await;
    let cassette = e.dir.join("recorded.jsonl");
    let cassette = cassette.to_str().unwrap();
    let (code, out, err) = e
        .rein(&["--record", cassette, "run", "What is 17*23?"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("17 × 23 = 391."), "{out}");
    let recorded = std::fs::read_to_string(cassette).unwrap();
    assert_eq!(recorded.lines().count(), 2, "one entry per model call");
    // Replayed into another database with no provider reachable: the same calls, the same
    // answer, and no request reaches the network.
    let other = e.dir.join("replayed.db");
    let mut replay = e.cmd(&[
        "--db",
        other.to_str().unwrap(),
        "--replay",
        cassette,
        "run",
        "What is 17*23?",
    ]);
    replay.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    let out = replay.output().await.unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("17 × 23 = 391."), "{stdout}");
    assert!(stderr.contains("← succeeded: 391"), "{stderr}");
    assert_eq!(e.server.requests().len(), 2);
}

#[tokio::test]
async fn chat_rejects_with_a_reason_and_cancels_a_parked_turn() {
    let e = env(vec![
        calc("c1", "2+2"),
        Canned::openai_text("By hand then: 4."),
        calc("c2", "3+3"),
    ])
    .await;
    let (code, out, err) = piped(
        &e,
        &["chat", "--approval", "allow-list"],
        "Compute 2+2.\n/reject do it by hand\nCompute 3+3.\n/cancel\n/exit\n",
    )
    .await;
    assert!(out.contains("By hand then: 4."), "{out}");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 3, "nothing is asked after the cancel");
    let rejected = requests[1].body["messages"].to_string();
    assert!(rejected.contains("do it by hand"), "{rejected}");
    // The second turn was parked, then cancelled: it ends, and its call never ran.
    assert!(err.contains("cancelled on request"), "{err}");
    assert_eq!(code, 1, "the last turn did not complete: {err}");
    let store = e.store().await;
    let ops = store
        .list_operations(&rein_store::OperationFilter::default())
        .await
        .unwrap();
    assert_eq!(ops.len(), 2);
    // Newest first.
    let cancelled = store.load_operation(ops[0].id).await.unwrap().unwrap();
    assert!(
        cancelled.record.status.is_terminal(),
        "{:?}",
        cancelled.record.status
    );
    assert!(
        store
            .tool_execution(ops[0].id, "c2")
            .await
            .unwrap()
            .is_none(),
        "the cancelled call never ran"
    );
}

#[tokio::test]
async fn task_resume_reactivates_a_paused_task_and_refuses_an_unknown_one() {
    let e = env(Vec::new()).await;
    let (code, out, err) = e
        .rein(&[
            "--json",
            "task",
            "create",
            "--title",
            "hourly",
            "--instruction",
            "Check.",
            "--every",
            "1h",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let task: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let id = task["id"].as_str().unwrap().to_owned();
    let show = |id: String| {
        let e = &e;
        async move {
            let (_, shown, _) = e.rein(&["--json", "task", "show", &id]).await;
            serde_json::from_str::<serde_json::Value>(shown.trim()).unwrap()
        }
    };
    let (code, _, err) = e.rein(&["task", "pause", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(show(id.clone()).await["status"], "paused");
    let (code, _, err) = e.rein(&["task", "resume", &id]).await;
    assert_eq!(code, 0, "{err}");
    let resumed = show(id.clone()).await;
    assert_eq!(resumed["status"], "active", "{resumed:#}");
    let (code, _, err) = e
        .rein(&["task", "resume", "task_00000000000000000000000000000000"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no task"), "{err}");
}

/// The reference server-everything in its Streamable HTTP mode on a port of its own, once it
/// listens (killed when the child is dropped); `None` (with a note) when it is not installed.
pub(crate) async fn everything_over_http() -> Option<(tokio::process::Child, u16)> {
    let script = everything_server()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("node")
        .args([script.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let listening = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("the MCP server exited before listening");
    };
    tokio::time::timeout(Duration::from_secs(60), listening)
        .await
        .expect("the MCP server listens within 60 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Some((server, port))
}

/// A TCP proxy to `upstream` that keeps the head of the first HTTP request on each connection.
pub(crate) async fn recording_proxy(
    upstream: String,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::AsyncReadExt;
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (seen, upstream) = (std::sync::Arc::clone(&seen), upstream.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while find(&head, b"\r\n\r\n").is_none() {
                    match client.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                if server.write_all(&head).await.is_ok() {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (addr, heads)
}

#[tokio::test]
async fn an_mcp_server_over_http_gets_the_configured_headers() {
    if local_only(
        "an_mcp_server_over_http_gets_the_configured_headers",
        "the MCP server is configured in this command's configuration file",
    ) {
        return;
    }
    let Some((_server, port)) = everything_over_http().await else {
        return;
    };
    let (proxy, heads) = recording_proxy(format!("127.0.0.1:{port}")).await;
    let e = env(vec![
        Canned::openai_tools(&[("m1", "issues__echo", r#"{"message":"over http"}"#)]),
        Canned::openai_text("Echoed."),
    ])
    .await;
    let config = e.dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp.issues]\nurl = \"http://{proxy}/mcp\"\nheaders = {{ Authorization = \"Bearer issues-token-42\", X-Team = \"core\" }}\n"
        ),
    )
    .unwrap();
    let mut cmd = e.cmd(&["run", "--approval", "auto-run", "Echo over http."]);
    cmd.env("REIN_CONFIG", &config);
    let out = cmd.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = e.server.requests();
    assert!(
        requests[0]
            .offered_tools()
            .contains(&"issues__echo".to_owned())
    );
    let result = requests[1].tool_result("m1");
    assert!(result.contains("over http"), "{result}");
    // Every connection's first request carried both headers.
    let heads = heads.lock().unwrap().clone();
    assert!(!heads.is_empty());
    for head in &heads {
        let head = head.to_ascii_lowercase();
        assert!(
            head.contains("authorization: bearer issues-token-42") && head.contains("x-team: core"),
            "{head}"
        );
    }
    // `rein config show` names the server without its secrets.
    let mut show = e.cmd(&["--json", "config", "show"]);
    show.env("REIN_CONFIG", &config);
    let shown = String::from_utf8_lossy(&show.output().await.unwrap().stdout).into_owned();
    assert!(
        shown.contains("/mcp") && !shown.contains("issues-token-42"),
        "{shown}"
    );
}

/// The shell's sandbox is the operation's, written into its spec: a process approving the
/// call later (with its own, looser default) still runs it confined; `op show` says how; only
/// an operation started unconfined (`--sandbox off`) writes outside its rules.
#[tokio::test]
async fn the_sandbox_travels_with_the_operation_to_the_process_that_approves_it() {
    if local_only(
        "the_sandbox_travels_with_the_operation_to_the_process_that_approves_it",
        "the file tools work in this process's directory",
    ) {
        return;
    }
    if let rein_tools::sandbox::Mechanism::Unavailable(why) =
        rein_tools::sandbox::Mechanism::detect()
    {
        rein_testkit::skip("the_sandbox_travels_with_the_operation", why);
        return;
    }
    let write = |id: &str| {
        Canned::openai_tools(&[(
            id,
            "shell__run",
            &serde_json::json!({"command": "echo made > made.txt"}).to_string(),
        )])
    };
    let e = env(vec![
        write("s1"),
        Canned::openai_text("It could not write."),
        write("s2"),
        Canned::openai_text("It wrote."),
    ])
    .await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let run_in = |args: &[&str]| {
        let mut c = e.cmd(args);
        c.current_dir(&work);
        async move {
            let out = c.output().await.unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };
    let (code, _, err) = run_in(&["--sandbox", "read-only", "run", "make a file"]).await;
    assert_eq!(code, 3, "parked for approval: {err}");
    let id = op_id(&err).to_string();
    let (_, shown, _) = e.rein(&["op", "show", &id]).await;
    assert!(
        shown.contains("sandbox    read-only, no network"),
        "{shown}"
    );
    // This process's default is workspace-write; the operation's spec says read-only.
    let (code, _, err) = run_in(&["approve", &id, "--all"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!work.join("made.txt").exists(), "nothing was written");
    let result = e.server.requests()[1].tool_result("s1");
    assert!(result.contains("Permission denied"), "{result}");

    let (code, _, err) = run_in(&["--sandbox", "off", "run", "make a file"]).await;
    assert_eq!(code, 3, "{err}");
    let id = op_id(&err).to_string();
    let (code, _, err) = run_in(&["approve", &id, "--all"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap(),
        "made\n"
    );
}

/// `rein sandbox` runs one command confined as the shell tool's are (what `rein acp` has an
/// editor's terminal run): it writes in its directory and not outside it, gives back the
/// command's exit code, runs unconfined only under `--sandbox off`, and refuses what it cannot
/// run with a message naming why.
#[tokio::test]
async fn rein_sandbox_runs_a_command_confined_and_gives_back_its_exit_code() {
    if let rein_tools::sandbox::Mechanism::Unavailable(why) =
        rein_tools::sandbox::Mechanism::detect()
    {
        rein_testkit::skip("rein_sandbox_runs_a_command_confined", why);
        return;
    }
    let e = env(Vec::new()).await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let wd = work.display().to_string();
    let write_both = "echo in > in.txt && echo out > ../out.txt";
    let (code, _, err) = e
        .rein(&["sandbox", "--workdir", &wd, "--", "sh", "-c", write_both])
        .await;
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(work.join("in.txt").exists(), "it writes in its directory");
    assert!(!e.dir.join("out.txt").exists(), "and not outside it");
    let (code, _, _) = e
        .rein(&["sandbox", "--workdir", &wd, "--", "sh", "-c", "exit 7"])
        .await;
    assert_eq!(code, 7);
    let (code, _, err) = e
        .rein(&[
            "--sandbox",
            "read-only",
            "sandbox",
            "--workdir",
            &wd,
            "--",
            "sh",
            "-c",
            "echo x > read-only.txt",
        ])
        .await;
    assert_ne!(code, 0, "{err}");
    assert!(
        !work.join("read-only.txt").exists(),
        "read-only writes nothing there"
    );
    let (code, _, err) = e
        .rein(&[
            "--sandbox",
            "off",
            "sandbox",
            "--workdir",
            &wd,
            "--",
            "sh",
            "-c",
            write_both,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(e.dir.join("out.txt").exists(), "off is unconfined");
    let (code, _, err) = e
        .rein(&[
            "sandbox",
            "--workdir",
            &e.dir.join("nope").display().to_string(),
            "--",
            "true",
        ])
        .await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("nope: not a directory"), "{err}");
    let (code, _, err) = e
        .rein(&["sandbox", "--workdir", &wd, "--", "no-such-program-here"])
        .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot start `no-such-program-here`") && err.contains("nothing was run"),
        "{err}"
    );
    // A mistyped option is refused, never run as the command.
    let (code, _, err) = e.rein(&["sandbox", "--mode", "off", "--", "true"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--mode"), "{err}");
}

/// The fake agent CLI and its fixtures (see `rein-operation`'s external agent tests).
fn fake_agent(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../operation/tests/fixtures/external")
        .join(rel)
        .display()
        .to_string()
}

#[tokio::test]
async fn an_external_agent_runs_from_the_command_line_and_is_shown_where_it_ran() {
    if local_only(
        "an_external_agent_runs_from_the_command_line_and_is_shown_where_it_ran",
        "the external agent is enabled in this command's environment",
    ) {
        return;
    }
    let e = env(Vec::new()).await;
    let work = e.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let log = e.dir.join("agent.log");
    let with_fake = |args: &[&str]| {
        let mut c = e.cmd(args);
        c.current_dir(&work)
            .env("REIN_EXTERNAL_CLAUDE_CODE", fake_agent("fake-agent"))
            .env("FAKE_AGENT_LOG", &log)
            .env("FAKE_AGENT_FIXTURE", fake_agent("claude-code/run.jsonl"));
        async move {
            let out = c.output().await.unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
    };
    let (code, out, err) = with_fake(&[
        "run",
        "--surface",
        "external:claude-code",
        "What files are here?",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("There are two files: notes.md and plan.txt."),
        "{out}"
    );
    assert!(
        err.contains("claude-code/Bash"),
        "the observed calls are shown: {err}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains(&format!("cwd: {}", work.canonicalize().unwrap().display())),
        "it ran in the working directory: {logged}"
    );
    let id = op_id(&err).to_string();
    let (_, shown, _) = e.rein(&["op", "show", &id]).await;
    assert!(shown.contains("surface    external:claude-code"), "{shown}");
    assert!(shown.contains("0.021300"), "the cost it reported: {shown}");

    // A kind nobody enabled, a missing program and a device are refused by name; nothing runs.
    let (code, _, err) = e.rein(&["run", "--surface", "external:jsonl", "hi"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("external agent `jsonl` is not enabled"),
        "{err}"
    );
    let mut c = e.cmd(&["run", "--surface", "external:codex", "hi"]);
    c.env("REIN_EXTERNAL_CODEX", "/nonexistent/codex");
    let out = c.output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("program `/nonexistent/codex` was not found"),
        "{err}"
    );
    let (code, _, err) = e.rein(&["run", "--surface", "device:laptop", "hi"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("device:laptop"), "{err}");
    // Not a surface at all: refused where the flag is read, as a usage error.
    let (code, _, err) = e.rein(&["run", "--surface", "cloud", "hi"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("surface `cloud`"), "{err}");
    let (_, list, _) = e.rein(&["op", "list"]).await;
    assert_eq!(
        list.lines()
            .filter(|l| l.contains(" done ") || l.contains("error"))
            .count(),
        1,
        "{list}"
    );
}

#[tokio::test]
async fn a_folder_added_to_a_knowledge_base_is_searched_with_its_lines_and_headings() {
    let e = env(Vec::new()).await;
    let docs = e.dir.join("docs");
    std::fs::create_dir_all(docs.join(".git")).unwrap();
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\nIntro.\n\n## Install\n\nRun cargo install rein-cli to get the binary.\n\n## Upgrade\n\nMigrations run when the server starts.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("notes.txt"),
        "Backups go to the nightly bucket.\n",
    )
    .unwrap();
    std::fs::write(docs.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
    std::fs::write(docs.join(".git/config"), "not indexed").unwrap();
    let (code, _, err) = e.rein(&["kb", "create", "manuals"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e.rein(&["kb", "create", "no good"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("knowledge base name `no good`"), "{err}");
    let (code, _, err) = e.rein(&["kb", "create", "manuals"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("already exists"), "{err}");
    let docs_arg = docs.display().to_string();
    let (code, _, err) = e.rein(&["kb", "add", "manuals", &docs_arg]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("logo.png: skipped: a binary file"), "{err}");
    assert!(err.contains("2 file(s) indexed"), "{err}");
    assert!(!err.contains(".git"), "hidden folders are left out: {err}");

    let (code, out, err) = e
        .rein(&["kb", "search", "manuals", "how do I install it?"])
        .await;
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("[{}:5-7]", docs.join("guide.md").display()))
            && first.ends_with("(Guide › Install)"),
        "{out}"
    );
    assert!(out.contains("cargo install rein-cli"), "{out}");

    // Unchanged files are left alone; a changed one replaces its chunks.
    let (_, _, err) = e.rein(&["kb", "add", "manuals", &docs_arg]).await;
    assert!(
        err.contains("0 file(s) indexed (0 chunks), 3 unchanged"),
        "{err}"
    );
    std::fs::write(
        docs.join("notes.txt"),
        "Backups moved to the weekly bucket.\n",
    )
    .unwrap();
    let (_, _, err) = e.rein(&["kb", "add", "manuals", &docs_arg]).await;
    assert!(
        err.contains("1 file(s) indexed (1 chunk), 2 unchanged"),
        "{err}"
    );
    let (_, out, err) = e.rein(&["kb", "search", "manuals", "nightly"]).await;
    assert!(out.is_empty(), "the old text is gone: {out}");
    assert!(err.contains("no chunk of manuals matches"), "{err}");
    let (code, _, err) = e.rein(&["kb", "search", "manuals", "  "]).await;
    assert_eq!(code, 1);
    assert!(err.contains("the query is empty"), "{err}");
    let (_, out, _) = e.rein(&["kb", "show", "manuals"]).await;
    assert!(out.contains("logo.png  skipped: a binary file"), "{out}");
    let (code, _, err) = e.rein(&["kb", "search", "nothing-here", "x"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no knowledge base `nothing-here`"), "{err}");
    // Globs choose the files of a folder by their path under it.
    assert_eq!(e.rein(&["kb", "create", "md-only"]).await.0, 0);
    let (code, _, err) = e
        .rein(&[
            "kb",
            "add",
            "md-only",
            &docs_arg,
            "--include",
            "**/*.md",
            "--exclude",
            "notes*",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("1 file(s) indexed") && err.contains("0 skipped"),
        "{err}"
    );
    let (code, _, err) = e
        .rein(&["kb", "add", "md-only", &docs_arg, "--include", "[oops"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("--include `[oops`"), "{err}");
}

#[tokio::test]
async fn an_operation_with_a_knowledge_base_gets_its_best_chunks_and_searches_it_with_citations() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "k1",
            "knowledge__search",
            &serde_json::json!({"query": "nightly backups"}).to_string(),
        )]),
        Canned::openai_text("Run cargo install rein-cli."),
        Canned::openai_text("hello"),
        Canned::openai_text("searched only when needed"),
        Canned::openai_text("both"),
        Canned::openai_text("the guide alone"),
    ])
    .await;
    let docs = e.dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("guide.md"),
        "# Guide\n\nIntro.\n\n## Install\n\nRun cargo install rein-cli to get the binary.\n\n## Upgrade\n\nMigrations run when the server starts.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("ops.pdf"),
        rein_testkit::pdf(&[
            "Backups run nightly to the cold bucket.",
            "Restores take an hour.",
        ]),
    )
    .unwrap();
    std::fs::write(docs.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
    let guide = docs.join("guide.md").display().to_string();
    let pdf = docs.join("ops.pdf").display().to_string();
    assert_eq!(e.rein(&["kb", "create", "manuals"]).await.0, 0);
    let (code, _, err) = e
        .rein(&["kb", "add", "manuals", &docs.display().to_string()])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("logo.png: skipped: a binary file"), "{err}");
    assert!(
        err.contains("ops.pdf: 2 chunks"),
        "one chunk per page: {err}"
    );
    // The base is attached to an agent; asking it is enough.
    let (code, _, err) = e
        .rein(&["agent", "create", "helper", "--knowledge", "manuals"])
        .await;
    assert_eq!(code, 0, "{err}");

    let (code, out, err) = e
        .rein(&["run", "--agent", "helper", "How do I install it?"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Run cargo install rein-cli."), "{out}");
    let requests = e.server.requests();
    // The best chunk for the message goes into the call, with where it is.
    let first = requests[0].body.to_string();
    assert!(
        first.contains(&format!("{guide}:5-7")) && first.contains("to get the binary"),
        "{first}"
    );
    assert!(first.contains("knowledge__search"), "the tool is offered");
    // The search answers with the PDF's page and its citation.
    let found = requests[1].tool_result("k1");
    assert!(
        found.starts_with(&format!("[{pdf}:1-3] (Page 1) from manuals")),
        "{found}"
    );
    assert!(found.contains("Backups run nightly"), "{found}");
    // Without knowledge bases, neither the tool nor any material.
    let (code, _, err) = e.rein(&["run", "hi"]).await;
    assert_eq!(code, 0, "{err}");
    let plain = e.server.requests()[2].body.to_string();
    assert!(!plain.contains("knowledge__search") && !plain.contains("Reference material"));
    // A base the user does not have is refused before anything runs.
    let (code, _, err) = e.rein(&["run", "--knowledge", "nope", "hi"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no knowledge base named nope"), "{err}");
    assert_eq!(e.server.requests().len(), 3);

    // The budget for injected chunks is the agent's or the run's: 0 leaves the base to the
    // tool alone.
    let (code, _, err) = e
        .rein(&[
            "run",
            "--agent",
            "helper",
            "--knowledge-tokens",
            "0",
            "How do I install it?",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let untouched = e.server.requests()[3].body.to_string();
    assert!(
        untouched.contains("knowledge__search"),
        "the tool is still offered"
    );
    assert!(
        !untouched.contains("to get the binary") && !untouched.contains("Reference material"),
        "{untouched}"
    );
    // A budget holds the best chunks that fit, best first, counted in the model's tokens.
    // Added from a relative path, the citations have a known length: the guide's Install
    // section is 21 tokens with its citation, the PDF's first page 22.
    assert_eq!(e.rein(&["kb", "create", "short"]).await.0, 0);
    let out = e
        .cmd(&["kb", "add", "short", "docs"])
        .current_dir(&e.dir)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ask = "install the binary, back up nightly";
    let (code, _, err) = e.rein(&["run", "--knowledge", "short", ask]).await;
    assert_eq!(code, 0, "{err}");
    let roomy = e.server.requests()[4].body.to_string();
    let (install, page_one) = (
        r#"<data source=\"knowledge docs/guide.md:5-7\">"#,
        r#"<data source=\"knowledge docs/ops.pdf:1-3\">"#,
    );
    assert!(
        roomy.contains(install) && roomy.contains(page_one),
        "the default budget holds both: {roomy}"
    );
    let (code, _, err) = e
        .rein(&[
            "run",
            "--knowledge",
            "short",
            "--knowledge-tokens",
            "30",
            ask,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let tight = e.server.requests()[5].body.to_string();
    assert!(
        tight.contains(install) && !tight.contains(page_one),
        "{tight}"
    );
    let (code, _, err) = e.rein(&["run", "--knowledge-tokens", "40000", "hi"]).await;
    assert_eq!(code, 2, "refused by the flag's range: {err}");
    assert!(err.contains("--knowledge-tokens"), "{err}");
    assert_eq!(e.server.requests().len(), 6);
}

#[tokio::test]
async fn an_ingestion_killed_part_way_is_resumed_without_duplicates() {
    if local_only(
        "an_ingestion_killed_part_way_is_resumed_without_duplicates",
        "it kills this process at crash points",
    ) {
        return;
    }
    let e = env(Vec::new()).await;
    let docs = e.dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..5 {
        std::fs::write(
            docs.join(format!("f{i}.md")),
            format!("# Part {i}\n\nThe marker word{i} is only here.\n"),
        )
        .unwrap();
    }
    let docs_arg = docs.display().to_string();
    let store = e.store().await;
    // Killed (SIGKILL) right after each commit point: the k-th file written with its job
    // entry (after the 5th, only the job's own end is left).
    for k in 1..=5u32 {
        let name = format!("manuals{k}");
        assert_eq!(e.rein(&["kb", "create", &name]).await.0, 0);
        kill_at(
            &e,
            &["kb", "add", &name, &docs_arg],
            &format!("ingest:file:{k}"),
        )
        .await;
        let (_, show, _) = e.rein(&["kb", "show", &name]).await;
        assert!(show.contains(&format!("Running, {k} of 5 files")), "{show}");
        assert_eq!(show.matches("  1 chunk\n").count(), k as usize, "{show}");

        let (code, _, err) = e.rein(&["kb", "resume", &name]).await;
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("resuming job") && err.contains(&format!("({k} of 5 files done)")),
            "{err}"
        );
        for done in 1..=5 {
            assert_eq!(
                err.contains(&format!("[{done}/5]")),
                done > k,
                "k={k}: only the rest is handled: {err}"
            );
        }
        assert!(err.contains("5 file(s) indexed (5 chunks)"), "{err}");
        let (_, show, _) = e.rein(&["kb", "show", &name]).await;
        assert!(!show.contains("Running"), "{show}");
        // One chunk per file, each found once.
        let kb = store.knowledge_base(None, &name).await.unwrap().unwrap();
        let files = store.knowledge_files(&kb.id).await.unwrap();
        assert_eq!(files.iter().map(|f| f.chunks).sum::<u64>(), 5);
        for i in 0..5 {
            let hits = store
                .search_knowledge(&kb.id, &format!("word{i}"), 10)
                .await
                .unwrap();
            assert_eq!(hits.len(), 1, "k={k}, word{i}: {hits:?}");
        }
        let (_, _, err) = e.rein(&["kb", "resume", &name]).await;
        assert!(err.contains("nothing to resume"), "{err}");
    }
}

#[tokio::test]
async fn an_embedding_killed_between_batches_resumes_with_what_is_left() {
    if local_only(
        "an_embedding_killed_between_batches_resumes_with_what_is_left",
        "it kills this process at crash points",
    ) {
        return;
    }
    // 70 chunks: a batch of 64, then 6. Only the first batch is answered before the kill;
    // the resumed job asks for the 6 without vectors, never the 64 again.
    let unit = |i: usize| -> Vec<f32> { vec![1.0, i as f32] };
    let first: Vec<Vec<f32>> = (0..64).map(unit).collect();
    let rest: Vec<Vec<f32>> = (64..70).map(unit).collect();
    let first_refs: Vec<&[f32]> = first.iter().map(Vec::as_slice).collect();
    let rest_refs: Vec<&[f32]> = rest.iter().map(Vec::as_slice).collect();
    let e = env(vec![
        Canned::openai_embeddings(&first_refs),
        Canned::openai_embeddings(&rest_refs),
    ])
    .await;
    let docs = e.dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..70 {
        std::fs::write(
            docs.join(format!("n{i:02}.md")),
            format!("# Note {i}\n\nThe token note{i} is here.\n"),
        )
        .unwrap();
    }
    let model = "openai/text-embedding-3-small";
    let (code, _, err) = e
        .rein(&["kb", "create", "notes", "--embed-model", model])
        .await;
    assert_eq!(code, 0, "{err}");
    kill_at(
        &e,
        &["kb", "add", "notes", &docs.display().to_string()],
        "ingest:embedded:64",
    )
    .await;
    let (_, show, _) = e.rein(&["kb", "show", "notes"]).await;
    assert!(show.contains("(64 of 70 chunks embedded)"), "{show}");
    assert!(show.contains("Running, 70 of 70 files"), "{show}");

    let (code, _, err) = e.rein(&["kb", "resume", "notes"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("embedded 70 of 70 chunks"), "{err}");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 2, "two batches in all");
    let inputs = |i: usize| requests[i].body["input"].as_array().unwrap().len();
    assert_eq!((inputs(0), inputs(1)), (64, 6));
    let (_, show, _) = e.rein(&["kb", "show", "notes"]).await;
    assert!(
        show.contains("(70 of 70 chunks embedded)") && !show.contains("Running"),
        "{show}"
    );
    let store = e.store().await;
    let kb = store.knowledge_base(None, "notes").await.unwrap().unwrap();
    assert_eq!(
        store.embedding_counts(&kb.id, model).await.unwrap(),
        (70, 70)
    );
}

#[tokio::test]
async fn a_base_with_an_embedding_model_is_searched_by_meaning_and_by_words() {
    if local_only(
        "a_base_with_an_embedding_model_is_searched_by_meaning_and_by_words",
        "its embedding provider is set in this command's environment",
    ) {
        return;
    }
    let e = env(vec![
        // Ingestion: both chunks in one batch, in file order.
        Canned::openai_embeddings(&[&[1.0, 0.0], &[0.0, 1.0]]),
        // The query.
        Canned::openai_embeddings(&[&[0.9, 0.1]]),
    ])
    .await;
    let docs = e.dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("a.md"), "# Cats\n\nFelines purr when content.\n").unwrap();
    std::fs::write(docs.join("b.md"), "# Dogs\n\nCanines bark at strangers.\n").unwrap();
    let docs_arg = docs.display().to_string();
    let (code, _, err) = e
        .rein(&[
            "kb",
            "create",
            "pets",
            "--embed-model",
            "openai/text-embedding-3-small",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e
        .rein(&["kb", "create", "x", "--embed-model", "nowhere/model"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("--embed-model nowhere/model"), "{err}");
    let (code, _, err) = e.rein(&["kb", "add", "pets", &docs_arg]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("embedded 2 of 2 chunks"), "{err}");
    let batch = &e.server.requests()[0];
    assert!(batch.path.ends_with("/embeddings"), "{}", batch.path);
    assert_eq!(
        batch.body["input"].as_array().unwrap().len(),
        2,
        "one batch"
    );
    // No word of the query is in either file: only meaning finds the cats.
    let (code, out, err) = e.rein(&["kb", "search", "pets", "kitty"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("full-text"), "{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.contains("a.md:1-3") && first.contains("(Cats)"),
        "{out}"
    );
    // The same search by pgvector on PostgreSQL (scripts/test installs it); SQLite says it
    // cannot.
    if e.db().starts_with("postgres") {
        e.server.push(Canned::openai_embeddings(&[&[0.9, 0.1]]));
        let (code, out, err) = e
            .rein(&[
                "--vector-search",
                "pgvector",
                "kb",
                "search",
                "pets",
                "kitty",
            ])
            .await;
        assert_eq!(code, 0, "{err}");
        let first = out.lines().next().unwrap_or_default();
        assert!(first.contains("a.md:1-3"), "{out}");
    } else {
        let (code, _, err) = e.rein(&["--vector-search", "pgvector", "kb", "list"]).await;
        assert_eq!(code, 1);
        assert!(
            err.contains("pgvector cannot be used: it needs PostgreSQL"),
            "{err}"
        );
    }
    let (_, show, _) = e.rein(&["kb", "show", "pets"]).await;
    assert!(
        show.contains("openai/text-embedding-3-small (2 of 2 chunks embedded)"),
        "{show}"
    );

    // A new model embeds everything again; when it fails the job says so and words still work.
    let (code, _, err) = e
        .rein(&[
            "kb",
            "set",
            "pets",
            "--embed-model",
            "openai/text-embedding-3-large",
        ])
        .await;
    assert_eq!(code, 1, "the embeddings endpoint fails (nothing is queued)");
    assert!(
        err.contains("failed") && err.contains("rein kb resume"),
        "{err}"
    );
    let (_, show, _) = e.rein(&["kb", "show", "pets"]).await;
    assert!(
        show.contains("(0 of 2 chunks embedded)") && show.contains("Failed"),
        "{show}"
    );
    let (code, out, err) = e.rein(&["kb", "search", "pets", "purr"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("pets: full-text search only (the query could not be embedded"),
        "{err}"
    );
    assert!(out.contains("a.md:1-3"), "{out}");
    e.server
        .push(Canned::openai_embeddings(&[&[1.0, 0.0], &[0.0, 1.0]]));
    let (code, _, err) = e.rein(&["kb", "resume", "pets"]).await;
    assert_eq!(code, 0, "{err}");
    let (_, show, _) = e.rein(&["kb", "show", "pets"]).await;
    assert!(show.contains("(2 of 2 chunks embedded)"), "{show}");

    // Without a model, search says it is by words only.
    let (code, _, err) = e.rein(&["kb", "set", "pets", "--no-embed-model"]).await;
    assert_eq!(code, 0, "{err}");
    let (_, out, err) = e.rein(&["kb", "search", "pets", "bark"]).await;
    assert!(
        err.contains("pets: full-text search only (it has no embedding model)"),
        "{err}"
    );
    assert!(out.contains("b.md:1-3"), "{out}");
}

/// The last request of the conversation itself that carried `prompt` (not a title's, not a
/// memory extraction's).
fn conversation_request(e: &Env, prompt: &str) -> rein_model::testing::Recorded {
    e.server
        .requests()
        .into_iter()
        .rev()
        .find(|r| {
            r.body.to_string().contains(prompt)
                && !r.system_text().contains("You keep a memory")
                && !r.system_text().contains("You name")
        })
        .unwrap()
}

/// An agent created with `--memory agent` learns into memories of its own: it reads them and
/// no other agent does; what the other agents learn (even about the same subject) is theirs and
/// does not replace its own.
#[tokio::test]
async fn an_agent_with_its_own_memories_learns_and_reads_them_alone() {
    if local_only(
        "an_agent_with_its_own_memories_learns_and_reads_them_alone",
        "the system model is set in this command's environment",
    ) {
        return;
    }
    let e = env(Vec::new()).await;
    e.server.route(
        "You name conversations",
        (0..4).map(|_| Canned::openai_text("A title")).collect(),
    );
    e.server.route(
        "You keep a memory of durable facts",
        vec![
            memories(&[("fact", "cat name", "The user's cat is called Tom.")]),
            memories(&[("fact", "cat name", "The user's cat is called Felix.")]),
            memories(&[]),
            memories(&[]),
        ],
    );
    let (code, _, err) = e
        .rein(&["agent", "create", "diary", "--memory", "agent"])
        .await;
    assert_eq!(code, 0, "{err}");
    let run = |args: &'static [&'static str]| {
        let mut c = e.cmd(args);
        c.env("REIN_SYSTEM_MODEL", "openai/gpt-4o-mini");
        async move {
            let out = c.output().await.unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(0), "{err}");
            err
        }
    };
    let e = &e;
    let asked_with = |prompt: &str| conversation_request(e, prompt).body.to_string();
    let list = |args: &'static [&'static str]| async move {
        let (code, out, err) = e.rein(args).await;
        assert_eq!(code, 0, "{err}");
        out
    };

    e.server.push(Canned::openai_text("Noted."));
    let err = run(&["run", "--agent", "diary", "My cat is Tom."]).await;
    assert!(err.contains("memory: 1 new, 0 replaced"), "{err}");
    let out = list(&["memory", "list", "--agent", "diary"]).await;
    assert!(
        out.contains("cat name: The user's cat is called Tom.  (agent diary only)"),
        "{out}"
    );
    assert!(list(&["memory", "list", "--shared"]).await.is_empty());

    // Another agent (the default one) does not read it; what it learns about the same subject
    // is shared and replaces nothing of diary's.
    e.server.push(Canned::openai_text("Nice."));
    let err = run(&["run", "My cat is Felix, what is its name?"]).await;
    assert!(err.contains("memory: 1 new, 0 replaced"), "{err}");
    assert!(!asked_with("My cat is Felix").contains("called Tom"));
    let shared = list(&["memory", "list", "--shared"]).await;
    assert!(
        shared.contains("called Felix.") && !shared.contains("Tom"),
        "{shared}"
    );
    let both = list(&["memory", "list", "--agent", "diary", "--shared"]).await;
    assert!(
        both.contains("called Tom.") && both.contains("called Felix."),
        "{both}"
    );
    let all = list(&["memory", "list", "--history"]).await;
    assert!(
        all.contains("called Tom.  (agent diary only)") && !all.contains("(replaced)"),
        "{all}"
    );

    // Each reads its own.
    e.server.push(Canned::openai_text("Tom."));
    run(&["run", "--agent", "diary", "What is my cat called?"]).await;
    let asked = asked_with("What is my cat called?");
    assert!(
        asked.contains("called Tom.") && !asked.contains("called Felix."),
        "{asked}"
    );
    e.server.push(Canned::openai_text("Felix."));
    run(&["run", "Tell me my cat's name."]).await;
    let asked = asked_with("Tell me my cat's name.");
    assert!(
        asked.contains("called Felix.") && !asked.contains("called Tom."),
        "{asked}"
    );
}

/// The extractor's answer: `memories` as `(category, subject, text)`.
fn memories(items: &[(&str, &str, &str)]) -> Canned {
    let list: Vec<serde_json::Value> = items
        .iter()
        .map(|(c, s, t)| {
            serde_json::json!({"category": c, "subject": s, "text": t, "message_id": "m-unknown"})
        })
        .collect();
    Canned::openai_text(&serde_json::json!({ "memories": list }).to_string())
}

#[tokio::test]
async fn memories_are_learnt_merged_replaced_forgotten_and_turned_off() {
    if local_only(
        "memories_are_learnt_merged_replaced_forgotten_and_turned_off",
        "the system model is set in this command's environment",
    ) {
        return;
    }
    let e = env(Vec::new()).await;
    // Titles and extractions each get their own script, whatever order they come in.
    e.server.route(
        "You name conversations",
        (0..6).map(|_| Canned::openai_text("A title")).collect(),
    );
    e.server.route(
        "You keep a memory of durable facts",
        vec![
            memories(&[
                ("fact", "home city", "The user lives in Lyon."),
                ("preference", "Indentation", "The user prefers tabs."),
            ]),
            // The same fact again, in other case and punctuation: merged.
            memories(&[("fact", "home city", "the user lives in Lyon")]),
            // A contradiction: replaces it.
            memories(&[("fact", "Home City", "The user lives in Paris.")]),
            // Forgotten: not learnt again.
            memories(&[("fact", "home city", "The user lives in Paris.")]),
        ],
    );
    let run = |prompt: &'static str| {
        let mut c = e.cmd(&["run", prompt]);
        c.env("REIN_SYSTEM_MODEL", "openai/gpt-4o-mini");
        async move {
            let out = c.output().await.unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stderr).into_owned()
        }
    };
    let extractions = || {
        e.server
            .requests()
            .iter()
            .filter(|r| {
                r.system_text()
                    .contains("You keep a memory of durable facts")
            })
            .count()
    };
    let e = &e;
    let asked_with = |prompt: &str| conversation_request(e, prompt);
    let list = |history: bool| async move {
        let args: &[&str] = if history {
            &["memory", "list", "--history"]
        } else {
            &["memory", "list"]
        };
        let (code, out, err) = e.rein(args).await;
        assert_eq!(code, 0, "{err}");
        out
    };

    e.server.push(Canned::openai_text("Noted."));
    let err = run("I live in Lyon and I prefer tabs.").await;
    assert!(
        err.contains("memory: 2 new, 0 replaced, 0 already known"),
        "{err}"
    );
    assert_eq!(extractions(), 1);
    let first = e
        .server
        .requests()
        .into_iter()
        .find(|r| r.system_text().contains("You keep a memory"))
        .unwrap();
    assert!(
        first
            .body
            .to_string()
            .contains("I live in Lyon and I prefer tabs."),
        "the conversation is read"
    );
    let out = list(false).await;
    assert!(
        out.contains("[fact] home city: The user lives in Lyon."),
        "{out}"
    );
    assert!(
        out.contains("[preference] indentation: The user prefers tabs."),
        "{out}"
    );

    // The next conversation is told, and the same fact learnt again is merged.
    e.server.push(Canned::openai_text("Hello."));
    let err = run("Which city do I live in?").await;
    assert!(err.contains("0 new, 0 replaced, 1 already known"), "{err}");
    let asked = asked_with("Which city do I live in?");
    assert!(
        asked.body.to_string().contains("The user lives in Lyon."),
        "{}",
        asked.body
    );
    assert_eq!(list(false).await.lines().count(), 2);

    // A contradiction replaces the older fact, which stays as history.
    e.server.push(Canned::openai_text("Enjoy Paris."));
    let err = run("I moved to Paris last week.").await;
    assert!(err.contains("0 new, 1 replaced"), "{err}");
    let out = list(false).await;
    assert!(
        out.contains("The user lives in Paris.") && !out.contains("Lyon"),
        "{out}"
    );
    let out = list(true).await;
    assert!(out.contains("The user lives in Lyon.  (replaced)"), "{out}");
    // A listed memory's id, by what it says.
    let id_of = |listed: String, says: &str| {
        listed
            .lines()
            .find(|l| l.contains(says))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .to_owned()
    };
    let paris = id_of(list(false).await, "Paris");
    let (code, show, err) = e.rein(&["memory", "show", &paris]).await;
    assert_eq!(code, 0, "{err}");
    assert!(show.contains("replaced: The user lives in Lyon."), "{show}");

    // Corrected by hand: trimmed; blank or over a sentence's length is refused.
    let tabs = id_of(list(false).await, "tabs");
    let (code, _, err) = e
        .rein(&[
            "memory",
            "edit",
            &tabs,
            "  The user prefers tabs of width 4.  ",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let out = list(false).await;
    assert!(
        out.contains(": The user prefers tabs of width 4.\n"),
        "trimmed: {out}"
    );
    let (code, _, err) = e.rein(&["memory", "edit", &tabs, "  "]).await;
    assert_eq!(code, 1);
    assert!(err.contains("cannot be empty"), "{err}");
    let long = "x".repeat(501);
    let (code, _, err) = e.rein(&["memory", "edit", &tabs, &long]).await;
    assert_eq!(code, 1);
    assert!(err.contains("at most 500 characters (501 given)"), "{err}");

    // Forgotten: gone with its history, never injected, never learnt again.
    let (code, _, err) = e.rein(&["memory", "forget", &paris]).await;
    assert_eq!(code, 0, "{err}");
    let out = list(true).await;
    assert!(!out.contains("Paris") && !out.contains("Lyon"), "{out}");
    e.server.push(Canned::openai_text("Sure."));
    run("Remember: I live in Paris.").await;
    assert_eq!(extractions(), 4);
    assert!(!list(true).await.contains("Paris"));
    e.server.push(Canned::openai_text("Right."));
    run("Where do I live?").await;
    let asked = asked_with("Where do I live?");
    assert!(
        !asked.body.to_string().contains("lives in Paris"),
        "{}",
        asked.body
    );

    // Off: conversations are no longer read.
    let before = extractions();
    let (code, _, err) = e.rein(&["memory", "off"]).await;
    assert_eq!(code, 0, "{err}");
    e.server.push(Canned::openai_text("Ok."));
    run("I now live in Rome.").await;
    assert_eq!(extractions(), before, "no extraction while off");
    let (_, _, err) = e.rein(&["memory", "list"]).await;
    assert!(err.contains("learning is off"), "{err}");
    let (code, _, err) = e.rein(&["memory", "forget", "mem_nope"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no memory mem_nope"), "{err}");
}

/// What no store or provider takes raw: a shell's output with NUL bytes, invalid UTF-8 and
/// terminal escapes, and a binary file read whole. Each call succeeds; its result is the same
/// normalised text in the store, in the event log and in what the model is sent (on SQLite,
/// and on PostgreSQL in the matrix, which refuses U+0000 in text).
#[tokio::test]
async fn tool_output_with_nul_bytes_and_binary_is_kept_and_sent_normalised_as_a_success() {
    let sh = |id: &str, command: &str| {
        Canned::openai_tools(&[(
            id,
            "shell__run",
            &serde_json::json!({ "command": command }).to_string(),
        )])
    };
    let e = env(vec![
        sh("s1", r"printf 'a\0b\377c\033[1mbold\r\n'"),
        sh("s2", "head -c 400 /bin/ls"),
        Canned::openai_text("Read both."),
    ])
    .await;
    let (code, _, err) = e
        .rein(&[
            "--sandbox",
            "off",
            "run",
            "--approval",
            "auto-run",
            "Print them.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let requests = e.server.requests();
    let text = requests[1].tool_result("s1");
    assert!(
        text.contains("a\u{2400}b\u{fffd}c\u{241b}[1mbold\n"),
        "{text:?}"
    );
    let binary = requests[2].tool_result("s2");
    assert!(binary.contains("(binary output, "), "{binary:?}");
    assert!(binary.contains("7f 45 4c 46"), "{binary:?}");
    let store = e.store().await;
    let id = op_id(&err);
    let op = store.load_operation(id).await.unwrap().unwrap();
    let tools: Vec<_> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == rein_core::message::Role::Tool)
        .collect();
    assert_eq!(tools.len(), 2);
    for (m, sent) in tools.iter().zip([&text, &binary]) {
        assert_eq!(
            m.tool_status,
            Some(rein_core::message::ToolStatus::Succeeded)
        );
        assert_eq!(&m.text_content(), sent, "stored as sent");
        assert!(!m.text_content().contains('\0'));
    }
    assert_consistent(&store, id).await;
}

/// `rein agent versions` lists every version newest first with the settings it changed;
/// `rein agent rollback --to N` gives the agent version N's settings again as its next
/// version (the later ones stay listed); a version it never had is refused naming it. On the
/// database, and through a server in the parity run.
#[tokio::test]
async fn an_agent_lists_its_versions_and_rolls_back_to_one() {
    let e = env(vec![]).await;
    let (code, _, err) = e
        .rein(&["agent", "create", "helper", "--max-steps", "5"])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = e
        .rein(&[
            "agent",
            "edit",
            "helper",
            "--max-steps",
            "9",
            "--system",
            "Be brief.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = e.rein(&["agent", "versions", "helper"]).await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("v2") && lines[0].ends_with("changed: max_steps, system_role"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("v1") && lines[1].ends_with("first kept"),
        "{out}"
    );
    let (code, out, err) = e
        .rein(&["--json", "agent", "rollback", "helper", "--to", "1"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("version 1's settings again, as version 3"),
        "{err}"
    );
    let shown: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(shown["version"], 3, "{shown}");
    assert_eq!(shown["config"]["max_steps"], 5, "{shown}");
    assert!(shown["config"]["system_role"].is_null(), "{shown}");
    let (_, out, _) = e.rein(&["--json", "agent", "versions", "helper"]).await;
    let versions: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        versions
            .iter()
            .map(|v| v["version"].as_u64())
            .collect::<Vec<_>>(),
        [Some(3), Some(2), Some(1)],
        "{out}"
    );
    assert_eq!(
        versions[0]["changed"],
        serde_json::json!(["max_steps", "system_role"]),
        "{out}"
    );
    let (code, _, err) = e.rein(&["agent", "rollback", "helper", "--to", "9"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("agent `helper` has no version 9"), "{err}");
    // `history` is the same list; `show --version` one version's settings.
    let (code, out, err) = e.rein(&["agent", "history", "helper"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    let (code, out, err) = e
        .rein(&["--json", "agent", "show", "helper", "--version", "2"])
        .await;
    assert_eq!(code, 0, "{err}");
    let shown: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (
            shown["version"].as_u64(),
            shown["config"]["max_steps"].as_u64()
        ),
        (Some(2), Some(9)),
        "{shown}"
    );
    assert_eq!(shown["config"]["system_role"], "Be brief.");
    let (code, _, err) = e.rein(&["agent", "show", "helper", "--version", "7"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("agent helper has no version 7; kept: 3, 2, 1"),
        "{err}"
    );
    let (code, _, err) = e.rein(&["agent", "versions", "ghost"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no agent `ghost`"), "{err}");
}
