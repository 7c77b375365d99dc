//! What else a busy server lives with during the soak: devices connecting and dropping, files
//! ingested into a knowledge base, and a task firing every second.

use super::load::Reach;
use super::server::Launch;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Devices that take turns connecting.
pub const DEVICES: usize = 2;

/// `rein connect` as each device in turn, each connection held a few seconds, then dropped
/// (the process killed, as a laptop's lid closes); the connections made.
pub async fn devices(
    launch: &Launch,
    reach: Reach,
    tokens: Vec<String>,
    workdir: &Path,
    stop: Arc<AtomicBool>,
) -> usize {
    let mut made = 0;
    while !stop.load(Ordering::SeqCst) {
        let k = made % tokens.len();
        let base = reach.base.borrow().clone();
        let name = format!("dev{k}");
        let mut c = launch.command(&[
            "--server",
            &base,
            "connect",
            "--name",
            &name,
            "--workdir",
            &workdir.display().to_string(),
        ]);
        c.env("REIN_TOKEN", &tokens[k])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = c.spawn().expect("rein connect starts");
        made += 1;
        let held = Duration::from_millis(2_000 + 700 * (made % 5) as u64);
        tokio::time::sleep(held).await;
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    made
}

/// Upload one small Markdown file every `every` into knowledge base `base`; the ingestion
/// jobs the server accepted.
pub async fn ingests(
    reach: Reach,
    base: &str,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> Vec<String> {
    let mut accepted = Vec::new();
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let text = format!("# Note {n}\n\nThe soak marker word{n} is only here.\n");
        let form = reqwest::multipart::Form::new().part(
            "files",
            reqwest::multipart::Part::bytes(text.into_bytes()).file_name(format!("note{n}.md")),
        );
        let url = format!("{}/v1/knowledge/{base}/files", reach.base.borrow().as_str());
        let sent = reach
            .http
            .post(url)
            .bearer_auth(&reach.token)
            .multipart(form)
            .timeout(Duration::from_secs(30))
            .send()
            .await;
        if let Ok(resp) = sent {
            let status = resp.status().as_u16();
            let bytes = resp.bytes().await.unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            match status {
                202 => accepted.push(body["id"].as_str().expect("a job id").to_owned()),
                502..=504 => {}
                _ => panic!("an upload was refused: {status} {body}"),
            }
        }
        tokio::time::sleep(every).await;
    }
    accepted
}

/// A task whose schedule fires every second (runs never overlap: a fire while one runs is
/// skipped); its id.
pub async fn every_second(reach: &Reach) -> String {
    let task = reach
        .call(
            reqwest::Method::POST,
            "/v1/tasks",
            Some(&json!({
                "title": "soak tick",
                "instruction": format!("{}: say done", super::model::TASK),
                "cron": "* * * * * *",
            })),
        )
        .await;
    task["id"].as_str().expect("a task id").to_owned()
}
