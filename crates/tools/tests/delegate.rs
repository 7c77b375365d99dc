//! What a client (an editor over ACP) is handed for the files and shell tools, and how its
//! outcomes are worded: the same checks as the tools (a path outside the working directory is
//! refused, a skill's file stays rein's) and the same results (a read of a client's text reads
//! exactly as the tool's read of the same file on disk).

use proptest::prelude::*;
use rein_core::OperationId;
use rein_tools::delegate::{self, CommandEnd, Delegable};
use rein_tools::{ToolContext, ToolRegistry};
use serde_json::json;
use std::time::Duration;

fn cx(dir: &std::path::Path) -> ToolContext {
    ToolContext {
        topic: None,
        earlier_calls: 0,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        operation_id: OperationId::new(),
        working_directory: Some(dir.to_path_buf()),
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: Vec::new(),
        question_briefs: false,
        sandbox: Default::default(),
    }
}

fn dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rein-delegate-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

#[test]
fn only_file_reads_writes_edits_and_commands_are_a_clients() {
    let d = dir();
    let cx = cx(&d);
    for (tool, api, args) in [
        ("files", "list", json!({})),
        ("files", "grep", json!({"pattern": "x"})),
        ("files", "read", json!({"path": "skill://pdf/SKILL.md"})),
        ("calculator", "evaluate", json!({"expression": "1+1"})),
    ] {
        assert!(
            delegate::delegable(&cx, tool, api, &args).is_none(),
            "{tool}/{api} {args} stays rein's"
        );
    }
    let read = delegate::delegable(
        &cx,
        "files",
        "read",
        &json!({"path": "a/b.txt", "start_line": 2}),
    );
    assert_eq!(
        read,
        Some(Ok(Delegable::Read {
            path: d.join("a/b.txt"),
            asked: "a/b.txt".into(),
            start: Some(2),
            end: None,
        }))
    );
    let run = delegate::delegable(
        &cx,
        "shell",
        "run",
        &json!({"command": "ls", "timeout_secs": 9999}),
    );
    let Some(Ok(Delegable::Run {
        command,
        workdir,
        timeout,
        ..
    })) = run
    else {
        panic!("{run:?}");
    };
    assert_eq!(
        (command.as_str(), workdir, timeout),
        ("ls", d.clone(), Duration::from_secs(600))
    );
}

#[test]
fn a_path_the_tool_would_refuse_is_refused_before_a_client_sees_it() {
    let d = dir();
    std::os::unix::fs::symlink("/etc", d.join("etc")).unwrap();
    for path in ["../outside.txt", "/etc/passwd", "etc/passwd"] {
        for api in ["read", "write", "edit"] {
            let args = match api {
                "read" => json!({"path": path}),
                "write" => json!({"path": path, "content": "x"}),
                _ => json!({"path": path, "old_text": "a", "new_text": "b"}),
            };
            match delegate::delegable(&cx(&d), "files", api, &args) {
                Some(Err(why)) => assert!(
                    why.to_string().contains("outside the working directory"),
                    "{why}"
                ),
                other => panic!("{api} {path}: {other:?}"),
            }
        }
    }
    let mut none = cx(&d);
    none.working_directory = None;
    match delegate::delegable(&none, "shell", "run", &json!({"command": "ls"})) {
        Some(Err(why)) => assert!(why.to_string().contains("no working directory"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn edits_and_command_results_are_worded_as_the_tools_word_them() {
    assert_eq!(
        delegate::edited("a b a", "f.txt", "b", "c").unwrap(),
        "a c a"
    );
    let none = delegate::edited("abc", "f.txt", "x", "y").unwrap_err();
    assert!(
        none.to_string().contains("`f.txt` does not contain"),
        "{none}"
    );
    let twice = delegate::edited("a a", "f.txt", "a", "y").unwrap_err();
    assert_eq!(
        twice,
        delegate::EditRefused::NotUnique {
            path: "f.txt".into(),
            count: 2
        }
    );
    assert!(twice.to_string().contains("occurs 2 times"), "{twice}");
    let ok = delegate::run_output(&CommandEnd::Exited(0), "hi", false);
    assert!(ok.success);
    assert_eq!(ok.content, "exit code: 0\n--- output ---\nhi\n");
    let cut = delegate::run_output(&CommandEnd::Exited(2), "end\n", true);
    assert!(!cut.success);
    assert_eq!(
        cut.content,
        "exit code: 2\n--- output ---\n[... earlier output omitted ...]\nend\n"
    );
    let slow = delegate::run_output(&CommandEnd::TimedOut(Duration::from_secs(3)), "", false);
    assert_eq!(
        slow.content,
        "timed out after 3 s; the command and its children were killed\n"
    );
    assert!(!delegate::run_output(&CommandEnd::Signalled("SIGTERM".into()), "", false).success);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever the text and the range, a client's text reads as the tool reads the same file.
    #[test]
    fn a_clients_text_reads_as_the_file_would(
        lines in proptest::collection::vec("[a-z \\t]{0,12}", 0..12),
        trailing in any::<bool>(),
        start in proptest::option::of(1u64..14),
        end in proptest::option::of(1u64..14),
    ) {
        let mut text = lines.join("\n");
        if trailing && !text.is_empty() {
            text.push('\n');
        }
        let d = dir();
        std::fs::write(d.join("f.txt"), &text).unwrap();
        let mut args = json!({"path": "f.txt"});
        if let Some(s) = start { args["start_line"] = json!(s); }
        if let Some(e) = end { args["end_line"] = json!(e); }
        let registry = ToolRegistry::with_builtins(&Default::default()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let local = rt.block_on(registry.get("files").unwrap().call(&cx(&d), "read", args)).unwrap();
        let client = delegate::read_output(&text, "f.txt", start, end);
        prop_assert_eq!((local.success, local.content), (client.success, client.content));
        let _ = std::fs::remove_dir_all(&d);
    }
}
