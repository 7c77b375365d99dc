//! The shell's sandbox against the real kernel: in `workspace-write` a command writes in its
//! working directory and its private temporary directory and nowhere else (reading stays
//! open); in `read-only` not even in the working directory; without the network it can open
//! neither a TCP connection nor a UDP socket to a listener on loopback, with it it can; it runs
//! with no new privileges; `off` is unconfined; the temporary directory is gone afterwards.
//! Without Landlock it fails under `CI=true` and otherwise says SKIP.

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
    call(workdir, sandbox, json!({ "command": command })).await
}

/// Call the shell tool's `run` with `args` in `workdir` under `sandbox`: (succeeded, output).
async fn call(workdir: &Path, sandbox: Sandbox, args: serde_json::Value) -> (bool, String) {
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
        .call(&cx, "run", args)
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
    assert!(
        on.contains("abstract Unix sockets and signals scoped")
            && on.contains("processes a command starts die with it"),
        "{on}"
    );
    let old = Mechanism::Landlock { abi: 5 }.describe(ws);
    assert!(old.contains("NOT scoped"), "{old}");
}

/// Whether process `pid` exists (a zombie counts as gone: it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The pids a command wrote into `file` (one per line).
fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[tokio::test]
async fn what_a_command_starts_in_the_background_dies_with_it_in_every_mode() {
    for m in [SandboxMode::Off, SandboxMode::WorkspaceWrite] {
        if m != SandboxMode::Off && !landlock("what_a_command_starts_dies_with_it") {
            continue;
        }
        let work = dir("reap");
        // A loop in a new session, a double-forked daemon, a plain background job: each
        // writes its pid, and the command returns at once.
        let command = "setsid sh -c 'echo $$ >> pids; while :; do sleep 0.1; done' </dev/null >/dev/null 2>&1 & \
             sh -c 'sh -c \"echo \\$\\$ >> pids; exec sleep 300\" & ' </dev/null >/dev/null 2>&1; \
             (sleep 300 & echo $! >> pids) ; \
             while [ \"$(wc -l < pids)\" -lt 3 ]; do sleep 0.05; done; echo started";
        let (ok, out) = run(&work, mode(m, false), command).await;
        assert!(ok && out.contains("started"), "{m:?}: {out}");
        let started = pids(&work.join("pids"));
        assert_eq!(started.len(), 3, "{m:?}: {started:?}");
        for pid in started {
            assert!(!alive(pid), "{m:?}: process {pid} outlived the call");
        }
        let _ = std::fs::remove_dir_all(&work);
    }
}

#[tokio::test]
async fn a_timeout_kills_what_the_command_started_in_a_new_session_too() {
    let work = dir("reap-timeout");
    let (success, content) = call(
        &work,
        mode(SandboxMode::Off, false),
        json!({"command": "setsid sleep 300 & echo $! > pid; sleep 300", "timeout_secs": 1}),
    )
    .await;
    assert!(!success && content.contains("timed out"), "{content}");
    let pid = pids(&work.join("pid"));
    assert_eq!(pid.len(), 1);
    assert!(
        !alive(pid[0]),
        "the new session's sleep outlived the timeout"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test]
async fn an_abstract_socket_and_a_process_outside_are_out_of_reach_where_landlock_scopes() {
    if !landlock("an_abstract_socket_outside_is_out_of_reach") {
        return;
    }
    let Mechanism::Landlock { abi } = Mechanism::detect() else {
        return;
    };
    if *abi < rein_tools::sandbox::SCOPING_ABI {
        rein_testkit::skip(
            "abstract sockets and signals scoped",
            &format!("Landlock ABI {abi} cannot scope them (6 needed); the start-up line says so"),
        );
        return;
    }
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        rein_testkit::skip(
            "abstract sockets scoped",
            "no python3 to connect from inside",
        );
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    let name = format!("rein-test-{}", OperationId::new());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); print('connected')\""
    );
    let work = dir("scope");
    // Unconfined, it connects: the listener is real.
    let (ok, out) = run(&work, mode(SandboxMode::Off, false), &connect).await;
    assert!(ok && out.contains("connected"), "{out}");
    let (ok, out) = run(&work, mode(SandboxMode::WorkspaceWrite, false), &connect).await;
    assert!(!ok && !out.contains("connected"), "{out}");
    assert!(
        out.contains("Operation not permitted") || out.contains("PermissionError"),
        "{out}"
    );
    // A process outside cannot be signalled from inside.
    let mut outside = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let kill = format!("kill -TERM {} && echo sent", outside.id());
    let (ok, out) = run(&work, mode(SandboxMode::WorkspaceWrite, false), &kill).await;
    assert!(!ok && !out.contains("sent"), "{out}");
    assert!(
        outside.try_wait().unwrap().is_none(),
        "the process outside still runs"
    );
    let (ok, out) = run(&work, mode(SandboxMode::Off, false), &kill).await;
    assert!(
        ok && out.contains("sent"),
        "unconfined, the signal is sent: {out}"
    );
    let _ = outside.wait();
    let _ = std::fs::remove_dir_all(&work);
}
