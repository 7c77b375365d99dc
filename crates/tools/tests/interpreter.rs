//! `python.run` (and `node.run`, last) against the machine's interpreters and the real kernel: a computation; a plot saved
//! as an image returned as a file; a write outside the workspace refused; a runaway loop
//! stopped at its time limit and a memory hog at its limit; no network; a workspace that
//! persists across the calls of one conversation and is neither visible nor readable from
//! another; nothing run unconfined. Without Landlock or Python it fails under `CI=true` and
//! otherwise says SKIP.

use rein_core::OperationId;
use rein_core::spec::{Sandbox, SandboxMode};
use rein_tools::interpreter::{Interpreter, InterpreterConfig, Language};
use rein_tools::sandbox::Mechanism;
use rein_tools::{Tool, ToolContext};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

fn ready(test: &str) -> bool {
    if let Mechanism::Unavailable(why) = Mechanism::detect() {
        rein_testkit::skip(test, why);
        return false;
    }
    let python = std::process::Command::new("python3").arg("-V").output();
    if !python.is_ok_and(|o| o.status.success()) {
        rein_testkit::skip(test, "python3 is not installed");
        return false;
    }
    true
}

fn root() -> PathBuf {
    let d = std::env::temp_dir().join(format!("rein-workspaces-{}", OperationId::new()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn interpreter(root: &std::path::Path) -> Interpreter {
    Interpreter::new(
        Language::Python,
        InterpreterConfig {
            workspaces: Some(root.to_path_buf()),
            memory: 256 * 1024 * 1024,
            max_timeout: Duration::from_secs(5),
            ..Default::default()
        },
    )
}

fn cx(topic: &str) -> ToolContext {
    ToolContext {
        topic: Some(topic.into()),
        earlier_calls: 0,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        operation_id: OperationId::new(),
        working_directory: None,
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: Vec::new(),
        question_briefs: false,
        sandbox: Sandbox {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
        },
    }
}

async fn run(
    tool: &Interpreter,
    cx: &ToolContext,
    args: serde_json::Value,
) -> rein_core::engine::ports::ToolOutput {
    tool.call(cx, "run", args).await.unwrap()
}

#[tokio::test]
async fn it_computes_and_returns_a_plot_it_saved_as_an_image() {
    if !ready("it_computes_and_returns_a_plot_it_saved_as_an_image") {
        return;
    }
    let root = root();
    let tool = interpreter(&root);
    let out = run(
        &tool,
        &cx("t1"),
        json!({"code": "print(sum(i * i for i in range(10)))"}),
    )
    .await;
    assert!(out.success, "{}", out.content);
    assert!(
        out.content.contains("exit code: 0\n--- stdout ---\n285"),
        "{}",
        out.content
    );
    assert!(out.files.is_empty());
    // A bar chart drawn pixel by pixel and saved as a PNG (what a plotting library does).
    let plot = r#"
import struct, zlib
w, h, bars = 40, 30, [5, 12, 20, 28]
rows = []
for y in range(h):
    row = bytearray([0])
    for x in range(w):
        bar = x // 10
        row += bytes([30, 90, 200] if h - y <= bars[bar] and x % 10 < 8 else [255, 255, 255])
    rows.append(bytes(row))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b"")
open("chart.png", "wb").write(png)
print("saved")
"#;
    let out = run(&tool, &cx("t1"), json!({ "code": plot })).await;
    assert!(out.success, "{}", out.content);
    assert_eq!(out.files.len(), 1, "{}", out.content);
    let file = &out.files[0];
    assert_eq!(
        (file.name.as_str(), file.media_type.as_str()),
        ("chart.png", "image/png")
    );
    assert!(file.bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(
        out.content.contains("chart.png (image/png,"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn it_writes_only_in_its_workspace_and_reads_no_other_conversations() {
    if !ready("it_writes_only_in_its_workspace_and_reads_no_other_conversations") {
        return;
    }
    let root = root();
    let outside = root.with_extension("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let tool = interpreter(&root);
    let target = outside.join("escaped.txt");
    let code = format!("open({:?}, 'w').write('x')", target.display().to_string());
    let out = run(&tool, &cx("a"), json!({ "code": code })).await;
    assert!(!out.success, "{}", out.content);
    assert!(out.content.contains("PermissionError"), "{}", out.content);
    assert!(!target.exists());
    // Nor the system's settings beyond what a program needs to run (a root process could read
    // /etc/shadow), nor a home directory.
    let out = run(
        &tool,
        &cx("a"),
        json!({"code": "print(open('/etc/passwd').read())"}),
    )
    .await;
    assert!(
        !out.success && out.content.contains("PermissionError"),
        "{}",
        out.content
    );
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "token").unwrap();
    let code = format!("print(open({:?}).read())", secret.display().to_string());
    let out = run(&tool, &cx("a"), json!({ "code": code })).await;
    assert!(
        !out.success && out.content.contains("PermissionError"),
        "{}",
        out.content
    );

    // One conversation's files persist for its next call...
    let out = run(
        &tool,
        &cx("a"),
        json!({"code": "open('notes.txt', 'w').write('kept')"}),
    )
    .await;
    assert!(out.success, "{}", out.content);
    let out = run(
        &tool,
        &cx("a"),
        json!({"code": "print(open('notes.txt').read())"}),
    )
    .await;
    assert!(
        out.success && out.content.contains("kept"),
        "{}",
        out.content
    );
    // ...and another conversation neither finds them nor reads them by path.
    let out = run(
        &tool,
        &cx("b"),
        json!({"code": "import os; print(os.listdir('.'))"}),
    )
    .await;
    assert!(out.success && out.content.contains("[]"), "{}", out.content);
    let code = "import os, glob; print(open(glob.glob('../topic-a/notes.txt')[0] if glob.glob('../topic-a/notes.txt') else '../topic-a/notes.txt').read())";
    let out = run(&tool, &cx("b"), json!({ "code": code })).await;
    assert!(
        !out.success && out.content.contains("PermissionError"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_runaway_loop_and_a_memory_hog_are_stopped_at_their_limits() {
    if !ready("a_runaway_loop_and_a_memory_hog_are_stopped_at_their_limits") {
        return;
    }
    let root = root();
    let tool = interpreter(&root);
    let started = std::time::Instant::now();
    let out = run(
        &tool,
        &cx("t"),
        json!({"code": "while True:\n    pass", "timeout_secs": 1}),
    )
    .await;
    assert!(!out.success);
    assert!(
        out.content.contains("stopped at its time limit of 1 s"),
        "{}",
        out.content
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let out = run(
        &tool,
        &cx("t"),
        json!({"code": "x = bytearray(1024 * 1024 * 1024)\nprint('allocated')"}),
    )
    .await;
    assert!(!out.success, "{}", out.content);
    assert!(out.content.contains("MemoryError"), "{}", out.content);
    assert!(
        out.content.contains("a run may use 256 MiB"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("allocated"));
}

#[tokio::test]
async fn it_has_no_network_and_never_runs_unconfined() {
    if !ready("it_has_no_network_and_never_runs_unconfined") {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let root = root();
    let tool = interpreter(&root);
    let code = format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)");
    let out = run(&tool, &cx("t"), json!({ "code": code })).await;
    assert!(!out.success);
    assert!(out.content.contains("PermissionError"), "{}", out.content);
    assert!(listener.accept().is_err(), "nothing connected");
    let mut off = cx("t");
    off.sandbox.mode = SandboxMode::Off;
    let out = run(&tool, &off, json!({"code": "open('x', 'w')"})).await;
    assert!(
        !out.success && out.content.contains("runs only confined"),
        "{}",
        out.content
    );
    assert!(!root.join("topic-t").join("x").exists());
}

/// `node.run` shares the conversation's workspace with `python.run` (it reads what Python
/// wrote, Python reads what it wrote), runs an ES module (`import`, top-level `await`), is as
/// confined (no write outside the workspace, no network, stopped at its time limit) and says
/// so plainly when Node.js is not installed.
#[tokio::test]
async fn node_runs_confined_in_the_same_workspace() {
    if !ready("node_runs_confined_in_the_same_workspace") {
        return;
    }
    if !std::process::Command::new("node")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        rein_testkit::skip(
            "node_runs_confined_in_the_same_workspace",
            "node is not installed",
        );
        return;
    }
    let root = root();
    let python = interpreter(&root);
    let node = Interpreter::new(
        Language::Node,
        InterpreterConfig {
            workspaces: Some(root.clone()),
            max_timeout: Duration::from_secs(5),
            ..Default::default()
        },
    );
    assert_eq!(node.manifest().identifier, "node");
    let out = run(
        &python,
        &cx("t"),
        json!({"code": "open('numbers.txt', 'w').write('3 4 5')"}),
    )
    .await;
    assert!(out.success, "{}", out.content);
    let code = "import { readFile, writeFile } from 'node:fs/promises';\n\
                const n = (await readFile('numbers.txt', 'utf8')).split(' ').map(Number);\n\
                const sum = n.reduce((a, b) => a + b * b, 0);\n\
                await writeFile('sum.json', JSON.stringify({ sum }));\n\
                console.log('sum of squares', sum);";
    let out = run(&node, &cx("t"), json!({ "code": code })).await;
    assert!(out.success, "{}", out.content);
    assert!(out.content.contains("sum of squares 50"), "{}", out.content);
    assert_eq!(out.files.len(), 1, "{}", out.content);
    assert_eq!(out.files[0].name, "sum.json");
    let out = run(
        &python,
        &cx("t"),
        json!({"code": "print(open('sum.json').read())"}),
    )
    .await;
    assert!(out.content.contains(r#"{"sum":50}"#), "{}", out.content);
    // Outside the workspace: refused by the kernel.
    let outside = root.join("escape.txt");
    let code = format!(
        "import {{ writeFileSync }} from 'node:fs';\nwriteFileSync({:?}, 'x');",
        outside.display().to_string()
    );
    let out = run(&node, &cx("t"), json!({ "code": code })).await;
    assert!(!out.success, "{}", out.content);
    assert!(out.content.contains("EACCES"), "{}", out.content);
    assert!(!outside.exists());
    // No network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let code = format!(
        "import {{ connect }} from 'node:net';\nconst s = connect({port}, '127.0.0.1');\nawait new Promise((ok, no) => {{ s.on('connect', ok); s.on('error', no); }});"
    );
    let out = run(&node, &cx("t"), json!({ "code": code })).await;
    assert!(!out.success, "{}", out.content);
    assert!(listener.accept().is_err(), "nothing connected");
    // A runaway loop stops at its limit.
    let out = run(
        &node,
        &cx("t"),
        json!({"code": "for (;;) {}", "timeout_secs": 1}),
    )
    .await;
    assert!(
        !out.success && out.content.contains("stopped at its time limit of 1 s"),
        "{}",
        out.content
    );
    // A memory hog stops at the address-space limit (V8 itself reserves about half a GiB,
    // so Node.js needs the default 1 GiB to start).
    let out = run(
        &node,
        &cx("t"),
        json!({"code": "const a = [];\nfor (;;) a.push(new Float64Array(1 << 20).fill(1));"}),
    )
    .await;
    assert!(!out.success, "{}", out.content);
    assert!(
        out.content.contains("a run may use 1024 MiB"),
        "{}",
        out.content
    );
    // Not installed: said so, nothing run.
    let missing = Interpreter::new(
        Language::Node,
        InterpreterConfig {
            workspaces: Some(root.clone()),
            node: PathBuf::from("/nonexistent/node"),
            ..Default::default()
        },
    );
    let out = run(&missing, &cx("t"), json!({"code": "1"})).await;
    assert!(out.content.contains("install node"), "{}", out.content);
}
