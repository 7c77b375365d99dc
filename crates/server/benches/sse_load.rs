//! Load benchmark for the event streams (a bench binary that prints figures; loopback only,
//! bounded): 100 operations stream at once while 1,000 SSE subscribers (10 per operation)
//! follow them.
//!
//! The server runs in a child process (this binary re-executed with `REIN_BENCH_ROLE=server`)
//! so its memory is measured alone; it also hosts the scripted model, which streams each
//! answer piece by piece and holds every request until all subscribers are connected. Each
//! operation makes `TOOL_STEPS` calculator calls, then streams a `PIECES`-piece answer.
//!
//! Reported: deliveries per second, added latency per event (from the moment its commit
//! returned, as the server's commit hook saw it, to the moment a subscriber parsed it; both
//! clocks are this machine's), and the server's resident memory (idle, with the operations
//! started, with every stream connected, and at its peak).
//!
//! `cargo bench -p rein-server --bench sse_load` (`-- OPS SUBSCRIBERS_PER_OP` to resize).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::routing::{get, post};
use futures::StreamExt;
use rein_core::OperationId;
use rein_model::{Catalog, Registry, ReqwestTransport};
use rein_operation::{Host, RegistryModels};
use rein_server::{App, AuthMode, Hub, Runner, ServerConfig};
use rein_store::{Accounts, SqlStore, Synchronous};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

/// The allocator the `rein` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOOL_STEPS: usize = 3;
const PIECES: usize = 40;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if std::env::var("REIN_BENCH_ROLE").is_ok_and(|r| r == "server") {
        rt.block_on(server());
    } else {
        let args: Vec<usize> = std::env::args()
            .skip(1)
            .filter_map(|a| a.parse().ok())
            .collect();
        let ops = args.first().copied().unwrap_or(100);
        let per_op = args.get(1).copied().unwrap_or(10);
        rt.block_on(client(ops, per_op));
    }
}

// ---- the server process -------------------------------------------------------------------

/// Per operation: `(seq, committed_at_us)` of every event its commits made durable.
type Commits = Arc<Mutex<HashMap<OperationId, Vec<(u64, u64)>>>>;

fn chunk(delta: Value, finish: Value) -> Bytes {
    Bytes::from(format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    ))
}

/// The scripted model: a calculator call until `TOOL_STEPS` results are in, then an answer in
/// `PIECES` pieces a millisecond apart. Nothing is answered before `/bench/go`.
async fn chat(State(go): State<watch::Receiver<bool>>, body: String) -> axum::response::Response {
    let mut go = go.clone();
    let _ = go.wait_for(|g| *g).await;
    let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let results = req["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").count())
        .unwrap_or(0);
    let mut pieces = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let finish = if results < TOOL_STEPS {
        pieces.push(chunk(
            json!({"tool_calls": [{"index": 0, "id": format!("call_{results}"), "type": "function",
                    "function": {"name": "calculator__evaluate", "arguments": "{\"expression\":\"6*7\"}"}}]}),
            Value::Null,
        ));
        "tool_calls"
    } else {
        for i in 0..PIECES {
            pieces.push(chunk(json!({"content": format!("word{i} ")}), Value::Null));
        }
        "stop"
    };
    pieces.push(chunk(json!({}), json!(finish)));
    pieces.push(Bytes::from(format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    )));
    let stream = futures::stream::iter(pieces).then(|p| async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok::<_, std::convert::Infallible>(p)
    });
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

async fn server() {
    let dir = std::env::temp_dir().join(format!("rein-bench-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let (go_tx, go_rx) = watch::channel(false);
    let go_tx = Arc::new(go_tx);
    let model = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(go_rx);
    let model_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let model_base = format!("http://{}/v1", model_listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(model_listener, model).await });

    let env = move |k: &str| match k {
        "OPENAI_BASE_URL" => Some(model_base.clone()),
        "OPENAI_API_KEY" => Some("sk-bench".to_owned()),
        _ => None,
    };
    let registry = Registry::new(
        Registry::builtin_presets_json(),
        BTreeMap::new(),
        Box::new(env),
    )
    .unwrap();
    let hub = Arc::new(Hub::default());
    let catalog = Arc::new(Catalog::builtin().unwrap());
    let models = Arc::new(RegistryModels::new(
        registry,
        Arc::new(ReqwestTransport::new(Default::default()).unwrap()),
        Arc::clone(&catalog),
        true,
    ));
    let mut host = Host::new(
        store.clone(),
        models,
        catalog,
        rein_operation::profile::model_ref("openai/gpt-4o-mini").unwrap(),
    );
    host.context.date = false;
    host.context.workspace = false;
    host.context.memories = false;
    let mut runner = Runner::new(Arc::clone(&store), Arc::clone(&hub), host);
    runner.limits = rein_store::RunLimits::default();
    let commits: Commits = Arc::default();
    let log = Arc::clone(&commits);
    runner.observer = Some(Arc::new(move |id, events| {
        let at = now_us();
        let mut log = log.lock().unwrap();
        let entry = log.entry(id).or_default();
        entry.extend(events.iter().map(|e| (e.seq, at)));
    }));
    let user = store.create_user("bench").await.unwrap();
    let app = Arc::new(App::new(
        store,
        Arc::new(runner),
        hub,
        AuthMode::Open(user),
        ServerConfig::default(),
    ));
    let bench = Router::new()
        .route(
            "/bench/go",
            post(move || {
                let go = Arc::clone(&go_tx);
                async move {
                    let _ = go.send(true);
                }
            }),
        )
        .route(
            "/bench/commits",
            get(move || {
                let commits = Arc::clone(&commits);
                async move {
                    let c = commits.lock().unwrap();
                    let map: BTreeMap<String, Vec<(u64, u64)>> =
                        c.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
                    axum::Json(json!(map))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("PORT {}", listener.local_addr().unwrap().port());
    axum::serve(listener, rein_server::router(app).merge(bench))
        .await
        .unwrap();
}

// ---- the client process -------------------------------------------------------------------

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// One subscriber's deliveries: `(seq, step, received_at_us)`, and whether the stream ended
/// after the operation's end.
async fn subscribe(
    http: reqwest::Client,
    url: String,
    connected: Arc<AtomicUsize>,
) -> (Vec<(u64, u64, u64)>, bool) {
    let mut resp = http.get(&url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    connected.fetch_add(1, Ordering::SeqCst);
    let (mut buf, mut got, mut ended) = (String::new(), Vec::new(), false);
    while let Ok(Some(bytes)) = resp.chunk().await {
        let at = now_us();
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            if block.contains("event: live") {
                continue;
            }
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            let e: Value = serde_json::from_str(data).unwrap();
            ended |= e["type"] == "done";
            got.push((e["seq"].as_u64().unwrap(), e["step"].as_u64().unwrap(), at));
        }
    }
    (got, ended)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn client(ops: usize, per_op: usize) {
    let exe = std::env::current_exe().unwrap();
    let mut child = tokio::process::Command::new(exe)
        .env("REIN_BENCH_ROLE", "server")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let l = lines.next_line().await.unwrap().expect("server died");
        if let Some(p) = l.strip_prefix("PORT ") {
            break p.to_owned();
        }
    };
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let idle_rss = rss_kib(pid, "VmRSS:");

    let mut ids = Vec::new();
    for i in 0..ops {
        let r = http
            .post(format!("{base}/v1/operations"))
            .header("content-type", "application/json")
            .body(json!({"input": format!("operation {i}"), "approval": "auto-run"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 202);
        let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        ids.push(v["operation_id"].as_str().unwrap().to_owned());
    }
    let running_rss = rss_kib(pid, "VmRSS:");
    let connected = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for id in &ids {
        for _ in 0..per_op {
            let url = format!("{base}/v1/operations/{id}/events");
            tasks.push((
                id.clone(),
                tokio::spawn(subscribe(http.clone(), url, Arc::clone(&connected))),
            ));
        }
    }
    while connected.load(Ordering::SeqCst) < ops * per_op {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let connected_rss = rss_kib(pid, "VmRSS:");
    let sampling = Arc::new(AtomicUsize::new(1));
    let peak_during = Arc::new(AtomicUsize::new(0));
    let (s, p) = (Arc::clone(&sampling), Arc::clone(&peak_during));
    tokio::spawn(async move {
        while s.load(Ordering::SeqCst) == 1 {
            p.fetch_max(rss_kib(pid, "VmRSS:") as usize, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });

    let started = Instant::now();
    http.post(format!("{base}/bench/go")).send().await.unwrap();
    let mut deliveries = Vec::new();
    let mut complete = 0;
    for (id, t) in tasks {
        let (got, ended) = t.await.unwrap();
        let seqs: Vec<u64> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            seqs,
            (0..seqs.len() as u64).collect::<Vec<_>>(),
            "gapless for {id}"
        );
        complete += usize::from(ended);
        deliveries.push((id, got));
    }
    let elapsed = started.elapsed();
    sampling.store(0, Ordering::SeqCst);
    let commits: Value = http
        .get(format!("{base}/bench/commits"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let peak_rss = rss_kib(pid, "VmHWM:");

    let mut latencies = Vec::new();
    let mut total = 0usize;
    for (id, got) in &deliveries {
        let times: HashMap<u64, u64> = commits[id]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v[0].as_u64().unwrap(), v[1].as_u64().unwrap()))
            .collect();
        for (seq, _, at) in got {
            total += 1;
            if let Some(committed) = times.get(seq) {
                latencies.push(at.saturating_sub(*committed));
            }
        }
    }
    latencies.sort_unstable();
    let events: usize = deliveries.iter().map(|(_, g)| g.len()).sum::<usize>() / per_op.max(1);
    println!(
        "sse_load: {ops} operations x {per_op} subscribers = {} streams",
        ops * per_op
    );
    println!(
        "  streams that ended after `done`: {complete}/{}",
        ops * per_op
    );
    println!(
        "  committed events: {events} ({} per operation)",
        events / ops.max(1)
    );
    println!(
        "  deliveries: {total} in {:.2} s = {:.0} events/s",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  added latency commit -> subscriber: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        percentile(&latencies, 0.50) as f64 / 1000.0,
        percentile(&latencies, 0.99) as f64 / 1000.0,
        latencies.last().copied().unwrap_or(0) as f64 / 1000.0,
        latencies.len()
    );
    println!(
        "  server RSS: idle {:.1} MiB, {ops} operations started {:.1} MiB, + {} streams connected {:.1} MiB, peak during run {:.1} MiB (VmHWM {:.1} MiB)",
        idle_rss as f64 / 1024.0,
        running_rss as f64 / 1024.0,
        ops * per_op,
        connected_rss as f64 / 1024.0,
        peak_during.load(Ordering::SeqCst) as f64 / 1024.0,
        peak_rss as f64 / 1024.0
    );
    let _ = child.kill().await;
}
