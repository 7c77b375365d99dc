//! The files tool against a sparse multi-GiB file: it reads within its limits and the
//! process's peak memory stays small. The measurement runs in a process of its own (the test
//! binary again, filtered to it), so other tests' allocations do not count towards its peak.

use rein_core::OperationId;
use rein_tools::{BuiltinConfig, ToolContext, ToolRegistry};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

async fn files(dir: &Path, api: &str, args: Value) -> (bool, String, Duration) {
    let reg = ToolRegistry::with_builtins(&BuiltinConfig::default()).unwrap();
    let cx = ToolContext {
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
    };
    let started = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        reg.get("files").unwrap().call(&cx, api, args),
    )
    .await
    .expect("the files tool hung")
    .unwrap();
    (out.success, out.content, started.elapsed())
}

/// Peak resident memory of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// Set in the child process that measures.
const CHILD: &str = "BIG_FILE_MEASURING_CHILD";

#[test]
fn a_sparse_multi_gib_file_is_read_within_its_limit_and_memory_stays_small() {
    if std::env::var_os(CHILD).is_some() {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(measure());
        return;
    }
    let name = "big_file::a_sparse_multi_gib_file_is_read_within_its_limit_and_memory_stays_small";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the measuring process failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn measure() {
    let dir = std::env::temp_dir().join(format!("rein-big-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.log");
    let f = std::fs::File::create(&big).unwrap();
    // Text first, then a 6 GiB hole (reads as zeros, takes no disk).
    std::io::Write::write_all(&mut &f, "line one\nline two\n".repeat(20_000).as_bytes()).unwrap();
    f.set_len(6 << 30).unwrap();
    drop(f);
    let zeros = dir.join("zeros.bin");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();

    // Reset the peak to what the process holds now, then measure only these reads.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = peak_rss();
    let (ok, msg, _) = files(&dir, "read", json!({"path": "big.log"})).await;
    assert!(ok, "{msg}");
    assert!(msg.starts_with("line one\nline two\n"));
    assert!(
        msg.contains("truncated at line"),
        "{}",
        &msg[msg.len() - 100..]
    );
    assert!(msg.len() <= 300 * 1024, "{} bytes returned", msg.len());
    // A line range far into the file scans a bounded prefix and says so.
    let (ok, msg, took) = files(
        &dir,
        "read",
        json!({"path": "big.log", "start_line": 900_000_000u64, "end_line": 900_000_001u64}),
    )
    .await;
    assert!(ok, "{msg}");
    assert!(msg.contains("stopped after the first 64 MiB"), "{msg}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (ok, msg, _) = files(&dir, "read", json!({"path": "zeros.bin"})).await;
    assert!(
        !ok && msg.contains("binary file (3221225472 bytes)"),
        "{msg}"
    );
    let (ok, msg, _) = files(
        &dir,
        "edit",
        json!({"path": "big.log", "old_text": "x", "new_text": "y"}),
    )
    .await;
    assert!(!ok && msg.contains("more than the 8 MiB"), "{msg}");
    let (ok, msg, _) = files(&dir, "grep", json!({"pattern": "line one"})).await;
    assert!(ok && msg.contains("not searched"), "{msg}");
    let grown = peak_rss().saturating_sub(before);
    let peak = peak_rss();
    assert!(
        peak < 64 << 20,
        "peak RSS {} MiB (grew by {} MiB while reading a 6 GiB file)",
        peak >> 20,
        grown >> 20
    );
    let _ = std::fs::remove_dir_all(&dir);
}
