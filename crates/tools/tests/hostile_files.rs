//! The files tool against files that try to stall it: a FIFO with no writer, a socket, a
//! directory. (The sparse multi-GiB file is `big_file.rs`, alone in its process so that its
//! peak memory is its own.)

use rein_core::OperationId;
use rein_tools::{BuiltinConfig, ToolContext, ToolRegistry};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn workdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rein-hostile-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "alpha\nneedle here\nomega\n").unwrap();
    dir
}

fn cx(dir: &Path) -> ToolContext {
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

async fn files(dir: &Path, api: &str, args: Value) -> (bool, String, Duration) {
    let reg = ToolRegistry::with_builtins(&BuiltinConfig::default()).unwrap();
    let started = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        reg.get("files").unwrap().call(&cx(dir), api, args),
    )
    .await
    .expect("the files tool hung")
    .unwrap();
    (out.success, out.content, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_and_sockets_are_refused_at_once_and_never_block() {
    let dir = workdir();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    for (api, args, kind) in [
        ("read", json!({"path": "pipe"}), "FIFO"),
        ("write", json!({"path": "pipe", "content": "x"}), "FIFO"),
        (
            "edit",
            json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
            "FIFO",
        ),
        ("read", json!({"path": "sock"}), "socket"),
        ("read", json!({"path": "."}), "directory"),
    ] {
        let (ok, msg, took) = files(&dir, api, args).await;
        assert!(!ok, "{api}: {msg}");
        assert!(msg.contains(kind), "{api}: {msg}");
        assert!(took < Duration::from_secs(2), "{api} took {took:?}");
    }
    // A search walks past them and still finds what regular files hold.
    let (ok, msg, took) = files(&dir, "grep", json!({"pattern": "needle"})).await;
    assert!(ok, "{msg}");
    assert!(msg.contains("notes.txt:2: needle here"), "{msg}");
    assert!(took < Duration::from_secs(2));
    // The FIFO is still there, untouched (nothing was written into it).
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::symlink_metadata(dir.join("pipe"))
            .unwrap()
            .file_type()
    ));
}
