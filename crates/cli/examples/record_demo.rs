//! Records the demo cassette's exchanges by driving `rein serve --record` against model turns
//! in OpenAI's wire format: the calculator question's turns are the ones the cassette already
//! holds (recorded from a model), replayed against the requests rein sends now; the file read
//! in the demo folder and the approval-gated shell command are scripted. The new exchanges
//! replace every earlier one of the same questions in `cassettes/demo.jsonl`. Run it when the
//! requests rein sends change (a tool added or described differently, the system role), after
//! building the binary:
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

/// The question whose model turns were recorded from a model (kept as recorded).
const RECORDED: &str = "What is 17 * 23?";

/// The first user message of a cassette exchange's request.
fn question_of(exchange: &Value) -> Option<&str> {
    exchange["request"]["body"]["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?["content"]
        .as_str()
}

/// The responses the cassette holds for `question`, in the order they were recorded.
fn recorded_turns(cassette: &[Value], question: &str) -> Vec<Canned> {
    cassette
        .iter()
        .filter(|e| question_of(e) == Some(question))
        .map(|e| {
            let r = &e["response"];
            Canned {
                status: r["status"]
                    .as_u64()
                    .and_then(|s| u16::try_from(s).ok())
                    .unwrap(),
                // The scripted server frames the body itself.
                headers: vec![("content-type".into(), "text/event-stream".into())],
                body: r["body"].as_str().unwrap().as_bytes().to_vec(),
                max_piece: 7,
                stall_after: None,
                delay: None,
            }
        })
        .collect()
}

/// The demo's questions, with the model's turns for each.
fn script(cassette: &[Value]) -> Vec<(&'static str, Vec<Canned>)> {
    let recorded = recorded_turns(cassette, RECORDED);
    assert_eq!(
        recorded.len(),
        2,
        "the cassette holds the two recorded turns of {RECORDED:?}"
    );
    vec![
        (RECORDED, recorded),
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
    let old: Vec<Value> = std::fs::read_to_string(&cassette)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let script = script(&old);
    let turns: Vec<Canned> = script.iter().flat_map(|(_, t)| t.clone()).collect();
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
    for (question, _) in &script {
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
    // Merge: the new exchanges replace every earlier one of the same questions.
    let new: Vec<Value> = std::fs::read_to_string(&recorded)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let asked: Vec<&str> = script.iter().map(|(q, _)| *q).collect();
    let mut kept: Vec<Value> = old
        .into_iter()
        .filter(|e| !question_of(e).is_some_and(|q| asked.contains(&q)))
        .collect();
    kept.extend(new);
    let text: String = kept.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&cassette, text).unwrap();
    eprintln!("{}: {} exchanges", cassette.display(), kept.len());
    let _ = std::fs::remove_dir_all(&home);
}
