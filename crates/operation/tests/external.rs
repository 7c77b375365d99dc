//! External agent CLIs as operations: fake Claude Code, Codex and generic JSON-lines agents
//! (a script replaying streams shaped as the tools document them) are started, mapped into
//! steps, messages and events, bounded by time, steps and cost (their process group stopped),
//! cancelled, resumed on a later turn through their session id, and refused when missing.

use crate::common;

use common::temp_store;
use rein_core::event::EventKind;
use rein_core::message::{Role, ToolStatus};
use rein_core::spec::{ExternalKind, OperationSpec, Surface};
use rein_core::state::{Budget, FinishReason, Status};
use rein_core::{OperationId, Usd};
use rein_operation::external::{ExternalAgents, ExternalCommand, ExternalError};
use rein_operation::{Driver, DriverError, RunEnd, StartOptions, Turn};
use rein_store::{SqlStore, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/external")
}

/// A test's folder: the store, the agent's working directory and the fake agent's log.
struct Setup {
    dir: PathBuf,
    store: Arc<SqlStore>,
    work: PathBuf,
    log: PathBuf,
}

async fn setup(name: &str) -> Setup {
    let (dir, store) = temp_store(name).await;
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let log = dir.join("agent.log");
    Setup {
        dir,
        store,
        work,
        log,
    }
}

impl Setup {
    /// A driver whose `kind` is the fake agent replaying `fixture` (and `resume` when asked to
    /// resume a session).
    fn driver(&self, kind: ExternalKind, fixture: &str, resume: Option<&str>) -> Driver {
        let mut args = vec![
            "--fake-log".to_owned(),
            self.log.display().to_string(),
            "--fake-fixture".to_owned(),
            fixtures().join(fixture).display().to_string(),
        ];
        if let Some(r) = resume {
            args.extend([
                "--fake-resume".to_owned(),
                fixtures().join(r).display().to_string(),
            ]);
        }
        let mut agents = ExternalAgents::none();
        agents.set(
            kind,
            ExternalCommand {
                program: fixtures().join("fake-agent").display().to_string(),
                args,
            },
        );
        common::driver_without_model(&self.store).with_external(agents)
    }

    fn spec(&self, kind: ExternalKind) -> OperationSpec {
        OperationSpec {
            surface: Surface::External(kind),
            working_directory: Some(self.work.display().to_string()),
            ..Default::default()
        }
    }

    /// Every invocation the fake agent logged: (arguments, directory, session variable, input).
    fn invocations(&self) -> Vec<(Vec<String>, String, String, String)> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.split("\n--\n")
            .filter(|e| !e.trim().is_empty())
            .map(|e| {
                let field = |name: &str| {
                    let start = e.find(&format!("{name}: ")).map(|i| i + name.len() + 2);
                    start.map_or(String::new(), |s| {
                        e[s..].split('\n').next().unwrap_or_default().to_owned()
                    })
                };
                let args = e
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("argv:")
                    .split(" [")
                    .filter(|a| !a.trim().is_empty())
                    .map(|a| {
                        a.trim()
                            .trim_start_matches('[')
                            .trim_end_matches(']')
                            .to_owned()
                    })
                    .collect();
                let stdin = e.split("stdin: ").nth(1).unwrap_or_default().to_owned();
                (args, field("cwd"), field("session_env"), stdin)
            })
            .collect()
    }

    /// A generic agent that says nothing and waits, running in a task: its operation, the
    /// task, and the pid of the child it started.
    async fn quiet_agent_running(
        &self,
    ) -> (
        OperationId,
        tokio::task::JoinHandle<Result<RunEnd, DriverError>>,
        u32,
    ) {
        let d = Arc::new(self.driver(ExternalKind::Jsonl, "jsonl/quiet.jsonl", None));
        let opts = StartOptions {
            spec: self.spec(ExternalKind::Jsonl),
            ..Default::default()
        };
        let id = d.start("Wait.", &opts).await.unwrap();
        let running = tokio::spawn(async move { d.run(id).await });
        (id, running, self.sleeper().await)
    }

    /// The pid of the child the fake agent started to outlive it, once it is written.
    async fn sleeper(&self) -> u32 {
        let path = PathBuf::from(format!("{}.sleeper", self.log.display()));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(pid) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "the fake agent never started its child"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet: it no longer runs).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn assert_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(pid) {
        assert!(
            Instant::now() < deadline,
            "process {pid} outlived the agent it belonged to"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn assert_completed(end: &RunEnd) {
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
}

async fn run(d: &Driver, prompt: &str, opts: &StartOptions) -> (OperationId, RunEnd) {
    let id = d.start(prompt, opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    (id, end)
}

#[tokio::test]
async fn a_claude_code_run_becomes_steps_messages_and_events_and_its_next_turn_resumes() {
    let s = setup("ext-claude").await;
    let d = s.driver(
        ExternalKind::ClaudeCode,
        "claude-code/run.jsonl",
        Some("claude-code/resume.jsonl"),
    );
    let opts = StartOptions {
        spec: OperationSpec {
            system_role: Some("Be brief.".into()),
            ..s.spec(ExternalKind::ClaudeCode)
        },
        ..Default::default()
    };
    let (id, end) = run(&d, "What files are here?", &opts).await;
    assert_completed(&end);
    let calls = s.invocations();
    let (args, cwd, _, stdin) = &calls[0];
    for flag in [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--append-system-prompt",
        "Be brief.",
    ] {
        assert!(
            args.contains(&flag.to_owned()),
            "{flag} missing from {args:?}"
        );
    }
    assert!(!args.contains(&"--resume".to_owned()));
    assert_eq!(cwd, &s.work.canonicalize().unwrap().display().to_string());
    assert_eq!(stdin, "What files are here?");

    let op = s.store.load_operation(id).await.unwrap().unwrap();
    let state = &op.state;
    assert_eq!(state.status, Status::Done);
    assert_eq!(state.step_count, 3, "three model turns");
    assert_eq!(
        state.messages[0].role,
        Role::System,
        "the instructions open it"
    );
    let messages: Vec<_> = state.messages[1..].iter().map(|m| &**m).collect();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    let first = messages[1];
    assert_eq!(first.text_content(), "Let me look at the files.");
    assert_eq!(
        first.reasoning.as_ref().map(|r| r.text.as_str()),
        Some("I should list the files first.")
    );
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(
        (&*first.tool_calls[0].identifier, &*first.tool_calls[0].api),
        ("claude-code", "Bash")
    );
    assert!(first.tool_calls[0].arguments.contains("\"ls\""));
    assert_eq!(
        first.model.as_deref(),
        Some("claude-code/claude-sonnet-4-5")
    );
    let session = first.external_session.as_ref().unwrap();
    assert_eq!(
        (session.kind.as_str(), session.id.as_str()),
        ("claude-code", "5f1c2a8e-1111-4c3b-9a7e-claude000001")
    );
    assert_eq!(messages[2].tool_status, Some(ToolStatus::Succeeded));
    assert_eq!(messages[2].text_content(), "notes.md\nplan.txt");
    assert_eq!(messages[4].tool_status, Some(ToolStatus::Failed));
    assert_eq!(
        messages[5].text_content(),
        "There are two files: notes.md and plan.txt."
    );
    // Each message hangs from the one before it; tool results from their call.
    assert_eq!(messages[1].parent_id, Some(messages[0].id));
    assert_eq!(messages[2].parent_id, Some(messages[1].id));
    assert_eq!(messages[3].parent_id, Some(messages[2].id));
    // The CLI's own totals: the run's tokens and cost as it reported them.
    assert_eq!(state.usage.llm.tokens.input, 3900 + 2700);
    assert_eq!(state.usage.llm.tokens.output, 93);
    assert_eq!(state.cost.total, Usd::from_dollars(0.0213));

    let events = s.store.events(id, None).await.unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::LlmResult { .. } => "llm_result",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::Done { .. } => "done",
            _ => "",
        })
        .filter(|k| !k.is_empty())
        .collect();
    assert_eq!(
        kinds,
        [
            "llm_result",
            "tool_result",
            "llm_result",
            "tool_result",
            "llm_result",
            "done"
        ]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "no gaps: {seqs:?}"
    );

    // The next turn of the conversation resumes the agent's session with the new prompt only.
    let next = StartOptions {
        topic_id: Some(op.record.topic_id.clone()),
        ..opts.clone()
    };
    let (id2, end2) = run(&d, "And now?", &next).await;
    assert!(matches!(end2, RunEnd::Done { .. }), "{end2:?}");
    let calls = s.invocations();
    let (args, _, _, stdin) = &calls[1];
    let at = args.iter().position(|a| a == "--resume").expect("resumed");
    assert_eq!(args[at + 1], "5f1c2a8e-1111-4c3b-9a7e-claude000001");
    assert!(!args.contains(&"--append-system-prompt".to_owned()));
    assert_eq!(stdin, "And now?");
    let second = s.store.load_operation(id2).await.unwrap().unwrap();
    let last = second.state.messages.last().unwrap();
    assert_eq!(last.text_content(), "Still the same two files.");

    // Regenerating that answer cannot resume a session that went past it: a new session gets
    // the conversation up to the prompt.
    let again = StartOptions {
        topic_id: Some(op.record.topic_id.clone()),
        turn: Turn::Regenerate(last.id),
        ..opts.clone()
    };
    let (_, end3) = run(&d, "", &again).await;
    assert!(matches!(end3, RunEnd::Done { .. }), "{end3:?}");
    let calls = s.invocations();
    let (args, _, _, stdin) = &calls[2];
    assert!(!args.contains(&"--resume".to_owned()), "{args:?}");
    assert!(
        stdin.contains("The conversation so far:") && stdin.contains("There are two files"),
        "{stdin}"
    );
    assert!(stdin.ends_with("And now?"), "{stdin}");
}

#[tokio::test]
async fn a_codex_run_maps_its_items_and_the_next_turn_resumes_its_thread() {
    let s = setup("ext-codex").await;
    let d = s.driver(
        ExternalKind::Codex,
        "codex/run.jsonl",
        Some("codex/resume.jsonl"),
    );
    let opts = StartOptions {
        spec: s.spec(ExternalKind::Codex),
        ..Default::default()
    };
    let (id, end) = run(&d, "Fix the failing test.", &opts).await;
    assert_completed(&end);
    let (args, _, _, stdin) = &s.invocations()[0];
    assert_eq!(args[..3], ["exec", "--json", "--skip-git-repo-check"]);
    assert_eq!(args.last().map(String::as_str), Some("-"));
    assert_eq!(stdin, "Fix the failing test.");
    let op = s.store.load_operation(id).await.unwrap().unwrap();
    let assistants: Vec<_> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    let calls: Vec<(String, String)> = assistants
        .iter()
        .flat_map(|m| {
            m.tool_calls
                .iter()
                .map(|c| (c.api.to_string(), c.id.to_string()))
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("shell".to_owned(), "item_1".to_owned()),
            ("apply_patch".to_owned(), "item_2".to_owned()),
            ("shell".to_owned(), "item_3".to_owned()),
        ]
    );
    let results: Vec<(ToolStatus, String)> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_status.unwrap(), m.text_content()))
        .collect();
    assert_eq!(results[0].0, ToolStatus::Failed);
    assert!(results[0].1.contains("exit code 101"));
    assert_eq!(
        results[1],
        (ToolStatus::Succeeded, "update src/lib.rs".to_owned())
    );
    assert_eq!(results[2].0, ToolStatus::Succeeded);
    assert_eq!(
        assistants[0].reasoning.as_ref().map(|r| r.text.as_str()),
        Some("**Checking the tests**")
    );
    assert_eq!(
        op.state.messages.last().unwrap().text_content(),
        "Fixed the failing test in src/lib.rs; all tests pass."
    );
    assert_eq!(op.state.usage.llm.tokens.input, 24763);
    assert_eq!(op.state.usage.llm.tokens.cached_read, 24448);

    let next = StartOptions {
        topic_id: Some(op.record.topic_id.clone()),
        ..opts
    };
    let (_, end) = run(&d, "What was wrong?", &next).await;
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let (args, _, _, stdin) = &s.invocations()[1];
    assert_eq!(
        args[args.len() - 3..],
        ["resume", "0199a213-81c0-7800-8aa1-bbab2a035a53", "-"]
    );
    assert_eq!(stdin, "What was wrong?");
}

#[tokio::test]
async fn a_failed_run_is_an_error_naming_what_the_agent_said() {
    let s = setup("ext-fail").await;
    let d = s.driver(ExternalKind::Codex, "codex/failed.jsonl", None);
    let opts = StartOptions {
        spec: s.spec(ExternalKind::Codex),
        ..Default::default()
    };
    let (_, end) = run(&d, "go", &opts).await;
    let RunEnd::Error { message } = end else {
        panic!("{end:?}")
    };
    assert!(
        message.starts_with("external_failed") && message.contains("rate limit reached"),
        "{message}"
    );

    let s = setup("ext-fail-cc").await;
    let d = s.driver(
        ExternalKind::ClaudeCode,
        "claude-code/max-turns.jsonl",
        None,
    );
    let opts = StartOptions {
        spec: s.spec(ExternalKind::ClaudeCode),
        ..Default::default()
    };
    let (id, end) = run(&d, "go", &opts).await;
    let RunEnd::Error { message } = end else {
        panic!("{end:?}")
    };
    assert!(message.contains("error_max_turns"), "{message}");
    let op = s.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(
        op.state.cost.total,
        Usd::from_dollars(0.0004),
        "what it cost is kept"
    );
}

#[tokio::test]
async fn the_time_limit_stops_the_agent_and_everything_it_started() {
    let s = setup("ext-time").await;
    let d = s.driver(ExternalKind::ClaudeCode, "claude-code/slow.jsonl", None);
    let opts = StartOptions {
        spec: OperationSpec {
            time_limit_secs: Some(1),
            ..s.spec(ExternalKind::ClaudeCode)
        },
        ..Default::default()
    };
    let began = Instant::now();
    let (id, end) = run(&d, "Run the tests.", &opts).await;
    assert!(
        began.elapsed() < Duration::from_secs(60),
        "stopped at its limit, not at the agent's end"
    );
    let RunEnd::Done { reason, detail } = end else {
        panic!("{end:?}")
    };
    assert_eq!(reason, FinishReason::Timeout);
    assert!(detail.unwrap_or_default().contains("time limit of 1 s"));
    assert_gone(s.sleeper().await).await;
    // The call it was making when stopped is recorded, settled as having no result.
    let op = s.store.load_operation(id).await.unwrap().unwrap();
    let tool = op
        .state
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(tool.tool_status, Some(ToolStatus::Aborted));
}

#[tokio::test]
async fn the_cost_limit_stops_the_agent_and_says_what_was_spent() {
    let s = setup("ext-cost").await;
    let d = s.driver(ExternalKind::Jsonl, "jsonl/costly.jsonl", None);
    let opts = StartOptions {
        spec: OperationSpec {
            budget: Budget {
                max_cost: Some(Usd::from_dollars(0.3)),
                ..Default::default()
            },
            ..s.spec(ExternalKind::Jsonl)
        },
        ..Default::default()
    };
    let (id, end) = run(&d, "Do the long job.", &opts).await;
    let RunEnd::Done { reason, .. } = end else {
        panic!("{end:?}")
    };
    assert_eq!(reason, FinishReason::CostLimitExceeded);
    assert_gone(s.sleeper().await).await;
    let op = s.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.state.cost.total, Usd::from_dollars(0.5));
    assert_eq!(op.state.step_count, 2);
    let events = s.store.events(id, None).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::BudgetExceeded { .. }))
    );
}

#[tokio::test]
async fn the_step_limit_stops_the_agent_at_the_step_past_it() {
    let s = setup("ext-steps").await;
    let d = s.driver(ExternalKind::Jsonl, "jsonl/steps.jsonl", None);
    let opts = StartOptions {
        spec: OperationSpec {
            max_steps: Some(2),
            ..s.spec(ExternalKind::Jsonl)
        },
        ..Default::default()
    };
    let (id, end) = run(&d, "Count.", &opts).await;
    let RunEnd::Done { reason, .. } = end else {
        panic!("{end:?}")
    };
    assert_eq!(reason, FinishReason::StepLimitExceeded);
    assert!(!reason.is_success());
    assert_gone(s.sleeper().await).await;
    let op = s.store.load_operation(id).await.unwrap().unwrap();
    let texts: Vec<String> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text_content())
        .collect();
    assert_eq!(
        texts,
        ["one", "two", "three"],
        "what it said before it was stopped is kept"
    );
}

#[tokio::test]
async fn a_cancel_from_another_process_stops_the_agent() {
    let s = setup("ext-cancel").await;
    let (id, running, sleeper) = s.quiet_agent_running().await;
    // What `rein op cancel` does from another process: the request is on the record.
    assert!(s.store.request_cancel(id).await.unwrap());
    let end = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the run ends")
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::UserRequested,
                ..
            }
        ),
        "{end:?}"
    );
    assert_gone(sleeper).await;
}

#[tokio::test]
async fn a_run_whose_process_died_is_settled_and_never_started_twice() {
    let s = setup("ext-crash").await;
    let (id, running, sleeper) = s.quiet_agent_running().await;
    // The process running it goes away (its agent with it).
    running.abort();
    let _ = running.await;
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &sleeper.to_string()])
        .status();
    // Another process picks the operation up.
    let other = s.driver(ExternalKind::Jsonl, "jsonl/quiet.jsonl", None);
    let end = other.resume(id).await.unwrap();
    let RunEnd::Error { message } = end else {
        panic!("{end:?}")
    };
    assert!(message.starts_with("external_interrupted"), "{message}");
    assert_eq!(s.invocations().len(), 1, "the agent was not started again");
}

#[tokio::test]
async fn a_missing_program_is_refused_by_name_before_anything_is_written() {
    let s = setup("ext-missing").await;
    for program in ["/nonexistent/claude", "rein-test-no-such-agent"] {
        let mut agents = ExternalAgents::none();
        agents.set(ExternalKind::ClaudeCode, ExternalCommand::new(program));
        let d = common::driver_without_model(&s.store).with_external(agents);
        let opts = StartOptions {
            spec: s.spec(ExternalKind::ClaudeCode),
            ..Default::default()
        };
        let err = d.start("hi", &opts).await.unwrap_err();
        assert!(
            matches!(&err, DriverError::External(ExternalError::Missing { program: p, .. }) if p == program),
            "{err:?}"
        );
        assert!(err.to_string().contains(&format!("`{program}`")), "{err}");
    }
    // A kind this process does not run is refused too.
    let d = common::driver_without_model(&s.store);
    let opts = StartOptions {
        spec: s.spec(ExternalKind::Codex),
        ..Default::default()
    };
    let err = d.start("hi", &opts).await.unwrap_err();
    assert!(err.to_string().contains("not enabled"), "{err}");
    let listed = s.store.list_operations(&Default::default()).await.unwrap();
    assert!(listed.is_empty(), "nothing was written: {listed:?}");
}
