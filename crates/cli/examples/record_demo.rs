//! Records the demo cassette's tool exchanges (a file read in the demo folder, an
//! approval-gated shell command) by driving `rein serve --record` against scripted model turns
//! in OpenAI's wire format, and merges them into `cassettes/demo.jsonl` (replacing exchanges
//! with the same request). Run it when the requests rein sends change (a tool's description,
//! the system role), after building the binary:
//!
//! ```sh
//! cargo build -p rein-cli && cargo run -p rein-cli --example record_demo -- target/debug/rein
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rein_model::testing::{Canned, serve};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The demo's questions, with the model's scripted turns for each.
fn script() -> Vec<(&'static str, Vec<Canned>)> {
    vec![
        (
            "What does notes.txt say?",
            vec![
                Canned::openai_tools(&[(
                    "call_read_notes",
                    "files__read",
                    r#"{"path":"notes.txt"}"#,
                )]),
                Canned::openai_text(
                    "notes.txt says that the model turns of this demo are replayed from a cassette, and that shell commands wait for your approval.",
                ),
            ],
        ),
        (
            "Say hello from the shell.",
            vec![
                Canned::openai_tools(&[(
                    "call_echo_hello",
                    "shell__run",
                    r#"{"command":"echo hello from rein"}"#,
                )]),
                Canned::openai_text("The shell says: hello from rein"),
            ],
        ),
    ]
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

/// Wait (30 s at most, then fail saying so) until operation `op` is in one of `statuses`.
async fn until(http: &reqwest::Client, base: &str, op: &str, statuses: &[&str]) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let d = json_of(
            http.get(format!("{base}/v1/operations/{op}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        if statuses.iter().any(|s| d["operation"]["status"] == *s) {
            return d;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "operation {op} was not {statuses:?} within 30 s: {d}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() {
    let rein = std::env::args()
        .nth(1)
        .expect("usage: record_demo PATH_TO_REIN_BINARY");
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cassette = crate_dir.join("cassettes/demo.jsonl");
    let home = std::env::temp_dir().join(format!("rein-record-demo-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let recorded: PathBuf = home.join("recorded.jsonl");
    let turns: Vec<Canned> = script().into_iter().flat_map(|(_, t)| t).collect();
    let model = serve(turns, 1).await;
    let mut server = tokio::process::Command::new(&rein)
        .arg("--record")
        .arg(&recorded)
        .args(["--db", &home.join("rein.db").to_string_lossy()])
        .args(["serve", "--no-auth", "--addr", "127.0.0.1:0", "--workdir"])
        .arg(crate_dir.join("cassettes/demo"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", &home)
        .env("OPENAI_BASE_URL", format!("{}/v1", model.base))
        .env("OPENAI_API_KEY", "sk-recording")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next_line().await.unwrap().expect("rein serve exited");
        if let Some(a) = line.strip_prefix("rein: listening on ") {
            break a.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let http = reqwest::Client::new();
    for (question, _) in script() {
        let created = json_of(
            http.post(format!("{base}/v1/operations"))
                .header("content-type", "application/json")
                .body(json!({ "input": question }).to_string())
                .send()
                .await
                .unwrap(),
        )
        .await;
        let op = created["operation_id"].as_str().unwrap().to_owned();
        // The shell asks first: approve it, as the demo's user does.
        let d = until(&http, &base, &op, &["waiting_for_human", "done"]).await;
        if d["operation"]["status"] == "waiting_for_human" {
            let decisions: Vec<Value> = d["pending"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| json!({"tool_call_id": p["call"]["id"], "decision": "approve"}))
                .collect();
            http.post(format!("{base}/v1/operations/{op}/interventions"))
                .header("content-type", "application/json")
                .body(json!({ "decisions": decisions }).to_string())
                .send()
                .await
                .unwrap();
        }
        until(&http, &base, &op, &["done"]).await;
    }
    drop(server);
    // Merge: the new exchanges replace any recorded for the same request.
    let new: Vec<Value> = std::fs::read_to_string(&recorded)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut kept: Vec<Value> = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|old| !new.iter().any(|n| n["request"] == old["request"]))
        .collect();
    kept.extend(new);
    let text: String = kept.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&cassette, text).unwrap();
    eprintln!("{}: {} exchanges", cassette.display(), kept.len());
    let _ = std::fs::remove_dir_all(&home);
}
