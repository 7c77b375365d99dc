//! The shell's sandbox against the real kernel: in `workspace-write` a command writes in its
//! working directory and its private temporary directory and nowhere else (reading stays
//! open); in `read-only` not even in the working directory; without the network it can open
//! neither a TCP connection nor a UDP socket to a listener on loopback, with it it can; it runs
//! with no new privileges; `off` is unconfined; the temporary directory is gone afterwards.
//! Without Landlock it fails under `CI=true` and otherwise says SKIP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rein_core::OperationId;
use rein_core::spec::{Sandbox, SandboxMode};
use rein_tools::sandbox::Mechanism;
use rein_tools::{BuiltinConfig, ToolContext, ToolRegistry};
use serde_json::json;
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rein-sandbox-{name}-{}", OperationId::new()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn landlock(test: &str) -> bool {
    match Mechanism::detect() {
        Mechanism::Landlock { .. } => true,
        Mechanism::Unavailable(why) => {
            rein_testkit::skip(test, why);
            false
        }
    }
}

/// Run `command` with the shell tool in `workdir` under `sandbox`: (succeeded, output).
async fn run(workdir: &Path, sandbox: Sandbox, command: &str) -> (bool, String) {
    let reg = ToolRegistry::with_builtins(&BuiltinConfig::default()).unwrap();
    let cx = ToolContext {
        knowledge: Vec::new(),
        owner: None,
        operation_id: OperationId::new(),
        working_directory: Some(workdir.to_path_buf()),
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: Vec::new(),
        question_briefs: false,
        sandbox,
    };
    let out = reg
        .get("shell")
        .unwrap()
        .call(&cx, "run", json!({ "command": command }))
        .await
        .unwrap();
    (out.success, out.content)
}

fn mode(mode: SandboxMode, network: bool) -> Sandbox {
    Sandbox { mode, network }
}

#[tokio::test]
async fn workspace_write_writes_only_in_the_workspace_and_its_temporary_directory() {
    if !landlock("workspace_write_writes_only_in_the_workspace") {
        return;
    }
    let (work, elsewhere) = (dir("work"), dir("elsewhere"));
    std::fs::write(elsewhere.join("secret.txt"), "readable").unwrap();
    let ws = mode(SandboxMode::WorkspaceWrite, false);

    let (ok, out) = run(
        &work,
        ws,
        "echo made > made.txt && echo temp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    )
    .await;
    assert!(ok, "{out}");
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap(),
        "made\n"
    );
    let tmp = out.lines().find(|l| l.contains("temp")).map(str::to_owned);
    assert!(tmp.is_some(), "{out}");

    let outside = elsewhere.join("written.txt");
    let (ok, out) = run(&work, ws, &format!("echo no > {}", outside.display())).await;
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert!(!outside.exists(), "nothing was written outside");
    let (ok, out) = run(
        &work,
        ws,
        &format!("rm {}", elsewhere.join("secret.txt").display()),
    )
    .await;
    assert!(!ok, "{out}");
    assert!(
        elsewhere.join("secret.txt").exists(),
        "nothing was removed outside"
    );

    let (ok, out) = run(
        &work,
        ws,
        &format!("cat {}", elsewhere.join("secret.txt").display()),
    )
    .await;
    assert!(ok && out.contains("readable"), "reading stays open: {out}");
    let (ok, out) = run(&work, ws, "grep NoNewPrivs /proc/self/status").await;
    assert!(ok && out.contains("NoNewPrivs:\t1"), "{out}");

    // Off: the process's own rights.
    let (ok, out) = run(
        &work,
        mode(SandboxMode::Off, false),
        &format!("echo yes > {}", outside.display()),
    )
    .await;
    assert!(ok, "{out}");
    assert!(outside.exists());
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[tokio::test]
async fn read_only_writes_nowhere_but_its_temporary_directory_which_is_removed_after() {
    if !landlock("read_only_writes_nowhere") {
        return;
    }
    let work = dir("ro");
    let ro = mode(SandboxMode::ReadOnly, false);
    let (ok, out) = run(&work, ro, "echo no > made.txt").await;
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert!(!work.join("made.txt").exists());
    let (ok, out) = run(
        &work,
        ro,
        "echo yes > \"$TMPDIR/t\" && echo \"$TMPDIR\" && cat /dev/null",
    )
    .await;
    assert!(ok, "{out}");
    let tmp = out
        .lines()
        .find(|l| l.contains("rein-shell-"))
        .expect("the temporary directory is named")
        .trim()
        .to_owned();
    assert!(
        !Path::new(&tmp).exists(),
        "{tmp} is removed after the command"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test]
async fn without_the_network_no_socket_reaches_a_listener_on_loopback() {
    if !landlock("without_the_network_no_socket_reaches") {
        return;
    }
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        rein_testkit::skip(
            "without_the_network_no_socket_reaches",
            "python3 is not installed",
        );
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            drop(s);
        }
    });
    let work = dir("net");
    let tcp = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    );
    let udp = "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print('udp')\"";
    let unix = "python3 -c \"import socket; socket.socket(socket.AF_UNIX); print('unix')\"";

    let closed = mode(SandboxMode::WorkspaceWrite, false);
    let (ok, out) = run(&work, closed, &tcp).await;
    assert!(
        !ok && out.contains("PermissionError") && !out.contains("connected"),
        "{out}"
    );
    let (ok, out) = run(&work, closed, udp).await;
    assert!(!ok && out.contains("PermissionError"), "{out}");
    let (ok, out) = run(&work, closed, unix).await;
    assert!(ok && out.contains("unix"), "local sockets stay: {out}");

    let open = mode(SandboxMode::WorkspaceWrite, true);
    let (ok, out) = run(&work, open, &tcp).await;
    assert!(ok && out.contains("connected"), "{out}");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn start_up_says_what_confines_commands() {
    let ws = Sandbox::default();
    let on = Mechanism::Landlock { abi: 7 }.describe(ws);
    assert!(
        on.contains("Landlock (ABI 7)")
            && on.contains("workspace-write")
            && on.contains("no network"),
        "{on}"
    );
    let none = Mechanism::Unavailable("this kernel has no Landlock".into()).describe(ws);
    assert!(
        none.contains("refused") && none.contains("--sandbox off"),
        "{none}"
    );
    let off = Mechanism::Unavailable("x".into()).describe(mode(SandboxMode::Off, false));
    assert!(off.contains("off"), "{off}");
}
