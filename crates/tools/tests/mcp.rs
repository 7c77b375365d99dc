//! The MCP client against the real reference servers from npm (`.ci/run` installs them into
//! `.mcp-servers/`, which git ignores). Without them each test says what is missing and passes
//! without checking anything.

use rein_core::tool::Effect;
use rein_tools::mcp::{McpError, McpServer, McpServerConfig};
use rein_tools::{Tool, ToolContext, ToolRegistry};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// The entry script of an installed reference server, or why it is missing.
fn server(package: &str) -> Option<String> {
    rein_testkit::mcp_server(&format!("MCP against {package}"), package)
}

/// A call's context for the MCP tests (`mcp_faults` too), working in `dir`.
pub(crate) fn cx(dir: Option<PathBuf>) -> ToolContext {
    ToolContext {
        topic: None,
        earlier_calls: 0,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        operation_id: rein_core::OperationId::new(),
        working_directory: dir,
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: Vec::new(),
        question_briefs: false,
        sandbox: Default::default(),
    }
}

#[tokio::test]
async fn everything_server_over_stdio_lists_and_calls_tools() {
    let Some(script) = server("server-everything") else {
        return;
    };
    let srv = McpServer::connect(McpServerConfig::stdio(
        "everything",
        "node",
        &[&script, "stdio"],
    ))
    .await
    .unwrap();
    let names = srv.tool_names();
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    let manifest = srv.manifest();
    assert_eq!(manifest.identifier, "everything");
    assert_eq!(manifest.kind, rein_core::tool::ToolKind::Mcp);
    // The server's own schema, compiled by the registry, validates arguments before a call.
    let mut reg = ToolRegistry::new();
    reg.register(srv.clone()).unwrap();
    assert!(
        reg.validate("everything", "echo", &json!({"message": "hi"}))
            .is_ok()
    );
    let problem = reg
        .validate("everything", "echo", &json!({"message": 5}))
        .unwrap_err()
        .to_string();
    assert!(problem.contains("message"), "{problem}");
    let out = srv
        .call(&cx(None), "echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert!(out.success);
    assert_eq!(out.content, "Echo: hi");
    // A tool the server does not have comes back as a failed result, not a crash.
    let missing = srv
        .call(&cx(None), "no-such-tool", json!({}))
        .await
        .unwrap();
    assert!(!missing.success);
    // Dropping the last handle stops the server process.
    let pid = srv.pid().unwrap();
    let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(pid));
    drop(reg);
    drop(srv);
    let mut waited = 0;
    while alive(pid) && waited < 100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(!alive(pid), "server process {pid} outlived its client");
}

#[tokio::test]
async fn filesystem_server_reads_a_file_and_reports_its_errors() {
    let Some(script) = server("server-filesystem") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("rein-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let srv = McpServer::connect(McpServerConfig::stdio(
        "fs",
        "node",
        &[&script, dir.to_str().unwrap()],
    ))
    .await
    .unwrap();
    let path = dir.join("notes.txt");
    let out = srv
        .call(
            &cx(Some(dir.clone())),
            "read_text_file",
            json!({"path": path.to_str().unwrap()}),
        )
        .await
        .unwrap();
    assert!(out.success, "{}", out.content);
    assert!(out.content.contains("alpha\nbeta"), "{}", out.content);
    assert_eq!(
        srv.effect("read_text_file"),
        Effect::Pure,
        "read-only hint honoured"
    );
    assert_eq!(srv.effect("write_file"), Effect::AtMostOnce);
    let outside = srv
        .call(&cx(None), "read_text_file", json!({"path": "/etc/passwd"}))
        .await
        .unwrap();
    assert!(
        !outside.success,
        "the server's own sandbox error reaches the model"
    );
    assert!(
        outside.content.to_lowercase().contains("denied") || outside.content.contains("outside"),
        "{}",
        outside.content
    );
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_clear_error() {
    let err = McpServer::connect(McpServerConfig::stdio(
        "ghost",
        "/nonexistent/rein-mcp-server",
        &[],
    ))
    .await
    .err()
    .unwrap();
    assert!(matches!(err, McpError::Spawn { .. }), "{err}");
    assert!(err.to_string().contains("ghost"), "{err}");

    // A URL that is not HTTP is refused up front, saying why.
    let err = McpServer::connect(McpServerConfig::http("sec", "ftp://mcp.example/mcp"))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, McpError::Config { .. }), "{err}");
    assert!(
        err.to_string().contains("not an http:// or https:// URL"),
        "{err}"
    );

    // A program that starts but never speaks MCP hits the start-up timeout.
    let mut cfg = McpServerConfig::stdio("mute", "sleep", &["30"]);
    cfg.startup_timeout = Duration::from_millis(300);
    let err = McpServer::connect(cfg).await.err().unwrap();
    assert!(matches!(err, McpError::StartupTimeout { .. }), "{err}");
    assert!(err.to_string().contains("mute"), "{err}");
}

#[tokio::test]
async fn an_https_endpoint_is_reached_over_tls() {
    // A listener that records the first bytes it receives, then hangs up: an HTTPS client
    // opens with a TLS handshake record (content type 0x16), a plain-HTTP one with a method.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let first = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 16];
        let n = sock.read(&mut buf).await.unwrap();
        buf[..n].to_vec()
    });
    let mut cfg = McpServerConfig::http("tls", format!("https://127.0.0.1:{port}/mcp"));
    cfg.startup_timeout = Duration::from_secs(10);
    let err = McpServer::connect(cfg).await.err().unwrap();
    assert!(
        matches!(
            err,
            McpError::Protocol { .. } | McpError::StartupTimeout { .. }
        ),
        "{err}"
    );
    let bytes = first.await.unwrap();
    assert_eq!(
        bytes.first(),
        Some(&0x16),
        "a TLS ClientHello, got {bytes:?}"
    );
}

#[tokio::test]
async fn everything_server_over_streamable_http() {
    let Some(script) = server("server-everything") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _child = tokio::process::Command::new("node")
        .args([script.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut ready = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "server-everything did not listen on {port}");
    let mut cfg = McpServerConfig::http("everything", format!("http://127.0.0.1:{port}/mcp"));
    if let rein_tools::mcp::McpTransport::Http { headers, .. } = &mut cfg.transport {
        headers.insert("x-rein-test".into(), "1".into());
    }
    let srv = McpServer::connect(cfg).await.unwrap();
    assert!(srv.tool_names().iter().any(|n| n == "echo"));
    let out = srv
        .call(&cx(None), "echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert!(out.success, "{}", out.content);
    assert_eq!(out.content, "Echo: over http");

    let mut bad = McpServerConfig::http("badhdr", format!("http://127.0.0.1:{port}/mcp"));
    if let rein_tools::mcp::McpTransport::Http { headers, .. } = &mut bad.transport {
        headers.insert("bad header".into(), "1".into());
    }
    let err = McpServer::connect(bad).await.err().unwrap();
    assert!(err.to_string().contains("header `bad header`"), "{err}");
}
