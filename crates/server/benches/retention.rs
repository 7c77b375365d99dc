//! Retention under load (a bench binary that prints figures; loopback only): 10,000 finished
//! operations of three tool rounds each are compacted (`compact_all`, batches of 500, as `rein
//! serve --retain-days` does) while another server on the same SQLite file (its own thread,
//! runtime and connection pool, as a second process would have) answers `GET
//! /v1/operations?limit=50` and `GET /v1/operations/{id}` over HTTP with a token. Printed: each
//! call's p50/p99/max during compaction next to the same calls with nothing else going on (the
//! anchor, measured in the same run), and the database's live bytes per operation before and
//! after.
//!
//! `cargo bench -p rein-server --bench retention` (`-- COUNT` to resize).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use rein_core::state::ModelRef;
use rein_model::{Catalog, Registry, ReqwestTransport};
use rein_operation::{Driver, Host, RegistryModels, RunEnd, StartOptions};
use rein_server::{App, AuthMode, Hub, Runner, ServerConfig};
use rein_store::{Accounts, SqlStore, Synchronous};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Live bytes of a SQLite file: pages in use (not on the freelist) times the page size.
fn live_bytes(path: &Path) -> u64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    let pragma = |name: &str| -> u64 {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
            .map(|v| u64::try_from(v).unwrap_or(0))
            .unwrap()
    };
    (pragma("page_count") - pragma("freelist_count")) * pragma("page_size")
}

/// p50 and p99 of `ms`, and its largest.
fn percentiles(ms: &mut [f64]) -> (f64, f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q) as usize).min(ms.len() - 1)];
    (at(0.50), at(0.99), ms[ms.len() - 1])
}

/// `count` finished operations of `owner`, three calculator rounds each; how long they took.
async fn fill(store: &Arc<SqlStore>, owner: &str, count: usize) -> (Vec<String>, f64) {
    let model = ModelRef {
        provider: "bench".into(),
        model: "loop".into(),
    };
    let d = Driver::new(
        Arc::clone(store) as Arc<dyn rein_store::Store>,
        Arc::new(rein_model::testing::ToolLoop { rounds: 3 }),
        model,
        Arc::new(Catalog::builtin().unwrap()),
    );
    let opts = StartOptions {
        spec: rein_operation::OperationSpec {
            owner: Some(owner.to_owned()),
            max_steps: Some(100),
            ..Default::default()
        },
        ..Default::default()
    };
    let t = Instant::now();
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        let id = d.start("Compute 6*7 a few times.", &opts).await.unwrap();
        let end = d.run(id).await.unwrap();
        assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
        ids.push(id.to_string());
    }
    (ids, t.elapsed().as_secs_f64())
}

/// `rein serve`'s API over the file at `path`, in a thread of its own; its address.
fn serve(path: PathBuf) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let store = Arc::new(
                SqlStore::open(path.to_str().unwrap(), Synchronous::Normal)
                    .await
                    .unwrap(),
            );
            let catalog = Arc::new(Catalog::builtin().unwrap());
            let registry = Registry::new(
                Registry::builtin_presets_json(),
                BTreeMap::new(),
                Box::new(|_: &str| None),
            )
            .unwrap();
            let models = Arc::new(RegistryModels::new(
                registry,
                Arc::new(ReqwestTransport::new(Default::default()).unwrap()),
                Arc::clone(&catalog),
                true,
            ));
            let host = Host::new(
                store.clone(),
                models,
                catalog,
                rein_operation::profile::model_ref("openai/gpt-4o-mini").unwrap(),
            );
            let hub = Arc::new(Hub::default());
            let runner = Arc::new(Runner::new(Arc::clone(&store), Arc::clone(&hub), host));
            let app = Arc::new(App::new(
                store,
                runner,
                hub,
                AuthMode::Tokens,
                ServerConfig::default(),
            ));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(format!("http://{}", listener.local_addr().unwrap()))
                .unwrap();
            axum::serve(listener, rein_server::router(app))
                .await
                .unwrap();
        });
    });
    rx.recv().unwrap()
}

/// Call the two routes in turn until `stop` is set (and at least `min` calls were made); each
/// call's milliseconds.
async fn calls(base: &str, token: &str, ids: &[String], stop: &AtomicBool, min: usize) -> Vec<f64> {
    let http = reqwest::Client::new();
    let mut ms = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) || ms.len() < min {
        let path = if i % 2 == 0 {
            "/v1/operations?limit=50".to_owned()
        } else {
            format!("/v1/operations/{}", ids[(i * 7) % ids.len()])
        };
        let t = Instant::now();
        let resp = http
            .get(format!("{base}{path}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        resp.bytes().await.unwrap();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        i += 1;
    }
    ms
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let count: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let dir = std::env::temp_dir().join(format!("rein-bench-{}", rein_core::OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("retention.db");
    let store = Arc::new(
        SqlStore::open(path.to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let user = store.create_user("bench").await.unwrap();
    let token = rein_server::new_token().unwrap();
    store
        .add_token(
            &user.id,
            &rein_server::hash_token(&token),
            &rein_store::TokenSpec::default(),
        )
        .await
        .unwrap();
    let (ids, created) = fill(&store, &user.id, count).await;
    let before = live_bytes(&path);
    let base = serve(path.clone());

    // The anchor: the same calls with nothing else going on.
    let mut alone = calls(&base, &token, &ids, &AtomicBool::new(true), 2_000).await;
    let stop = Arc::new(AtomicBool::new(false));
    let during = {
        let (base, token, ids, stop) =
            (base.clone(), token.clone(), ids.clone(), Arc::clone(&stop));
        tokio::spawn(async move { calls(&base, &token, &ids, &stop, 100).await })
    };
    let t = Instant::now();
    let done = rein_store::compact_all(&*store, chrono::Utc::now(), 500, true)
        .await
        .unwrap();
    let compact_s = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut during = during.await.unwrap();
    assert_eq!(done.operations, count as u64);
    let after = live_bytes(&path);
    let (a50, a99, amax) = percentiles(&mut alone);
    let (d50, d99, dmax) = percentiles(&mut during);
    let kib = |b: u64| b as f64 / 1024.0;
    println!(
        "{count} finished operations (3 tool rounds each, created in {created:.1} s) compacted in {compact_s:.1} s in batches of 500: {} steps, {} events, {} tool results deleted",
        done.steps, done.events, done.tool_executions
    );
    println!(
        "GET /v1/operations?limit=50 and GET /v1/operations/{{id}} over HTTP from another server on the file: during compaction p50 {d50:.2} ms, p99 {d99:.2} ms, max {dmax:.1} ms ({} calls); alone (anchor) p50 {a50:.2} ms, p99 {a99:.2} ms, max {amax:.1} ms ({} calls)",
        during.len(),
        alone.len()
    );
    println!(
        "database live bytes: {:.1} MiB before, {:.1} MiB after ({:.1} KiB → {:.1} KiB per operation)",
        kib(before) / 1024.0,
        kib(after) / 1024.0,
        kib(before) / count as f64,
        kib(after) / count as f64,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
