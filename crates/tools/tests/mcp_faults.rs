//! Faults in the tool port: the real reference server `server-everything` behind a stdio
//! proxy (`mcp_faults/proxy.py`) that, at the Nth message the server sends, stalls for good,
//! dies, is cut mid-message, or first sends a line of random bytes — swept over every message
//! of a fault-free session (the handshake's answers, the tool list, the call's answer).
//!
//! After each fault: connecting fails with an error naming the server, within its start-up
//! limit, or the call comes back within its limit either with the right answer or failed with
//! a message naming the server — never a hang, never a wrong answer that looks right; and the
//! next call succeeds, on a server started afresh when the first one stopped or hung.

use crate::mcp::cx;
use rein_tools::Tool;
use rein_tools::mcp::{McpServer, McpServerConfig};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MODES: [&str; 4] = ["stall", "die", "cut", "garbage"];
/// Messages a fault-free session of this test gets from the server: the answer to
/// `initialize`, the `tools/list_changed` it sends at start, the tool list (these three while
/// connecting), then at the first call the changed tool list read again and the call's answer.
const POINTS: usize = 5;
const STARTUP: Duration = Duration::from_secs(5);
const CALL: Duration = Duration::from_secs(2);

/// What one fault led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seen {
    /// Connecting failed, naming the server.
    ConnectFailed,
    /// The call failed visibly, naming the server.
    CallFailed,
    /// The call answered right despite the fault.
    Answered,
    /// The session ended before the fault's message.
    NotReached,
}

fn config(proxy: &Path, armed: &Path, mode: &str, nth: usize, script: &str) -> McpServerConfig {
    let nth = nth.to_string();
    let mut c = McpServerConfig::stdio(
        "everything",
        "python3",
        &[
            &proxy.display().to_string(),
            &armed.display().to_string(),
            mode,
            &nth,
            "--",
            "node",
            script,
            "stdio",
        ],
    );
    c.startup_timeout = STARTUP;
    c.call_timeout = CALL;
    c
}

#[tokio::test]
async fn a_tool_server_that_stalls_dies_cuts_or_garbles_fails_visibly_and_is_started_afresh() {
    let Some(script) =
        rein_testkit::mcp_server("MCP faults against server-everything", "server-everything")
    else {
        return;
    };
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        rein_testkit::skip("MCP faults", "python3 is missing (it runs the fault proxy)");
        return;
    }
    let proxy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_faults/proxy.py");
    let dir = std::env::temp_dir().join(format!("rein-mcp-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut table: BTreeMap<(&str, Seen), usize> = BTreeMap::new();
    for mode in MODES {
        for nth in 1..=POINTS {
            let armed = dir.join(format!("{mode}-{nth}"));
            std::fs::write(&armed, "").unwrap();
            let began = Instant::now();
            eprintln!("MCP faults: {mode} at message {nth}");
            let connected = McpServer::connect(config(&proxy, &armed, mode, nth, &script)).await;
            let seen = match connected {
                Err(e) => {
                    let said = e.to_string();
                    assert!(said.contains("everything"), "{mode} at {nth}: {said}");
                    assert!(
                        began.elapsed() < STARTUP + Duration::from_secs(5),
                        "{mode} at {nth}: connecting took {:?}",
                        began.elapsed()
                    );
                    Seen::ConnectFailed
                }
                Ok(server) => {
                    let first = Instant::now();
                    let out = server
                        .call(&cx(None), "echo", json!({"message": format!("m{nth}")}))
                        .await
                        .unwrap();
                    assert!(
                        first.elapsed() < CALL + Duration::from_secs(5),
                        "{mode} at {nth}: the call took {:?}",
                        first.elapsed()
                    );
                    let seen = if out.success {
                        assert_eq!(out.content, format!("Echo: m{nth}"), "{mode} at {nth}");
                        Seen::Answered
                    } else {
                        assert!(
                            out.content.contains("MCP server `everything`"),
                            "{mode} at {nth}: {}",
                            out.content
                        );
                        Seen::CallFailed
                    };
                    // The next call works, on the same server or a new one.
                    let again = server
                        .call(&cx(None), "echo", json!({"message": "again"}))
                        .await
                        .unwrap();
                    assert!(
                        again.success && again.content == "Echo: again",
                        "{mode} at {nth}: the call after the fault: {}",
                        again.content
                    );
                    seen
                }
            };
            let seen = if armed.exists() {
                let _ = std::fs::remove_file(&armed);
                Seen::NotReached
            } else {
                seen
            };
            *table.entry((mode, seen)).or_default() += 1;
        }
    }
    eprintln!("MCP faults ({POINTS} points per mode): {table:?}");
    for mode in MODES {
        let reached: usize = table
            .iter()
            .filter(|((m, s), _)| *m == mode && *s != Seen::NotReached)
            .map(|(_, n)| n)
            .sum();
        assert!(
            reached >= 3,
            "{mode}: only {reached} points reached: {table:?}"
        );
    }
    // A hung or dead server during the call fails that call visibly, and only that call.
    for mode in ["stall", "die", "cut"] {
        assert!(
            table.contains_key(&(mode, Seen::CallFailed)),
            "{mode} never hit a call: {table:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
