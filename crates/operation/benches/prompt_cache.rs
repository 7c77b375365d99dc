//! What the providers' prompt caches save on a long tool loop (prints, not a timed test): a
//! 30-step operation with the built-in tools and 60 MCP-like tools, a plan written and
//! rewritten, and tool results that grow the history, run through the real driver and context
//! pipeline against a local server speaking Anthropic's and OpenAI's formats. The requests the
//! server received are then priced against a simulated cache of each provider, by prefix:
//!
//! - Anthropic caches only up to the breakpoints a request marks (`cache_control`): a request
//!   reads the longest cached prefix ending at a block at or up to 20 blocks before one of its
//!   breakpoints, and writes the prefixes up to its breakpoints (prefixes under 1,024 tokens
//!   are not cached). Reads cost the catalog's cache-read price, writes its cache-write price.
//! - OpenAI caches every request's prefix on its own: a request reads the longest prefix it
//!   shares with an earlier one, in steps of 128 tokens from 1,024 on.
//!
//! The anchor is the same run without caching (every input token at the input price) and,
//! for Anthropic, the run with `prompt_cache: false` (no breakpoints: rein before this work).
//! Tokens are estimated with the o200k tokenizer on each block's JSON.
//!
//! `cargo bench -p rein-operation --bench prompt_cache`
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use common::ext;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_context::{Encoding, TiktokenEstimator};
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::state::ModelRef;
use rein_core::tool::ToolManifest;
use rein_model::registry::{ProviderConfig, Quirks};
use rein_model::testing::streams::anthropic;
use rein_model::testing::{Canned, serve};
use rein_model::transport::Timeouts;
use rein_model::{Catalog, Protocol, Provider, ReqwestTransport};
use rein_operation::context_report::call_contexts;
use rein_operation::{Driver, OperationSpec, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::Effect;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Model calls in the run: 28 tool rounds (two of them plan writes) and the answer.
const STEPS: usize = 30;

/// Looks a ticket up: about 250 tokens of result, so the history grows as it does in real work.
struct Lookup;

impl Tool for Lookup {
    fn manifest(&self) -> ToolManifest {
        rein_core::testing::manifest("tickets", &["lookup"])
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::Pure
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        let n = args["n"].as_u64().unwrap_or(0);
        let line = format!(
            "Ticket {n}: the deploy of service {n} failed its health check after the config change; the owner asked for a rollback and a note in the incident log. "
        );
        async move { Ok(ToolOutput::ok(line.repeat(6))) }.boxed()
    }
}

/// One model turn of step `i` (1-based) in the protocol `p`.
fn turn(p: Protocol, i: usize) -> Canned {
    let plan = |status: &str| {
        json!({"items": [
            {"text": "Look up every ticket", "status": status},
            {"text": "Summarise the failures", "status": "pending"}
        ]})
    };
    let (name, args): (&str, Value) = match i {
        1 => ("todo__write", plan("in_progress")),
        15 => ("todo__write", plan("done")),
        _ => ("tickets__lookup", json!({ "n": i })),
    };
    let last = i == STEPS;
    match p {
        Protocol::Anthropic if last => anthropic(
            &[json!({"text": "Every deploy failed its health check."})],
            "end_turn",
        ),
        Protocol::Anthropic => anthropic(
            &[json!({"id": format!("toolu_{i}"), "name": name, "input": args})],
            "tool_use",
        ),
        _ if last => Canned::openai_text("Every deploy failed its health check."),
        _ => Canned::openai_tools(&[(&format!("call_{i}"), name, &args.to_string())]),
    }
}

/// The request bodies and the context reports' stable prefix per call of one run.
async fn run(
    p: Protocol,
    provider: &str,
    model: &str,
    prompt_cache: bool,
) -> (Vec<Value>, Vec<(u64, u64)>) {
    let server = serve((1..=STEPS).map(|i| turn(p, i)).collect(), 1).await;
    let config = ProviderConfig {
        id: provider.into(),
        protocol: p,
        base_url: format!("{}/v1", server.base),
        api_key: Some("k".into()),
        headers: Default::default(),
        quirks: Quirks::default(),
    };
    let transport = Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap());
    let (dir, store) = common::temp_store("rein-bench-cache").await;
    let mut d = Driver::new(
        store.clone(),
        Arc::new(Provider::new(config, transport)),
        ModelRef {
            provider: provider.into(),
            model: model.into(),
        },
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Lookup));
    for i in 0..60 {
        d = d.with_tool(Arc::new(ext::Ext(i)));
    }
    let mut spec = OperationSpec {
        system_role: Some("You keep the project's services running.".into()),
        max_steps: Some(200),
        ..Default::default()
    };
    spec.context.prompt_cache = prompt_cache;
    let opts = StartOptions {
        spec,
        ..Default::default()
    };
    let id = d
        .start("Look up the failed deploys and summarise them.", &opts)
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let bodies: Vec<Value> = server
        .requests()
        .into_iter()
        .map(|r| {
            assert!(r.refused.is_none(), "{:?}", r.refused);
            r.body
        })
        .collect();
    assert_eq!(bodies.len(), STEPS);
    let stability = call_contexts(&*store, id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.report.stable_prefix_tokens, c.report.total_tokens))
        .collect();
    let _ = std::fs::remove_dir_all(dir);
    (bodies, stability)
}

/// A request as the provider reads it for caching: its blocks in order, each with its tokens,
/// the hash of the prefix ending with it, and whether it carries a breakpoint.
struct Unit {
    tokens: u64,
    prefix: u64,
    breakpoint: bool,
}

fn units(p: Protocol, body: &Value, est: &TiktokenEstimator) -> Vec<Unit> {
    let mut raw: Vec<Value> = Vec::new();
    let mut push_all = |v: &Value| {
        if let Some(a) = v.as_array() {
            raw.extend(a.iter().cloned());
        } else if !v.is_null() {
            raw.push(v.clone());
        }
    };
    push_all(&body["tools"]);
    if p == Protocol::Anthropic {
        push_all(&body["system"]);
        for m in body["messages"].as_array().unwrap() {
            for b in m["content"].as_array().unwrap() {
                raw.push(json!({"role": m["role"], "block": b}));
            }
        }
    } else {
        push_all(&body["messages"]);
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    raw.iter()
        .map(|u| {
            let breakpoint = u.get("cache_control").is_some()
                || u.get("block")
                    .is_some_and(|b| b.get("cache_control").is_some());
            let text = strip(u).to_string();
            text.hash(&mut h);
            Unit {
                tokens: est.text_tokens(&text),
                prefix: h.finish(),
                breakpoint,
            }
        })
        .collect()
}

fn strip(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

/// Per request: (input tokens, read from cache, written to cache).
fn simulate(p: Protocol, bodies: &[Value], est: &TiktokenEstimator) -> Vec<(u64, u64, u64)> {
    let mut cache: HashSet<u64> = HashSet::new();
    let mut seen: Vec<Vec<Unit>> = Vec::new();
    let mut out = Vec::new();
    for body in bodies {
        let us = units(p, body, est);
        let upto = |i: usize| us[..=i].iter().map(|u| u.tokens).sum::<u64>();
        let total: u64 = us.iter().map(|u| u.tokens).sum();
        let (read, write) = if p == Protocol::Anthropic {
            let marks: Vec<usize> = (0..us.len()).filter(|i| us[*i].breakpoint).collect();
            let read = marks
                .iter()
                .filter_map(|&b| {
                    (b.saturating_sub(19)..=b)
                        .rev()
                        .find(|&j| cache.contains(&us[j].prefix))
                        .map(upto)
                })
                .max()
                .unwrap_or(0);
            let mut furthest = 0;
            for &b in &marks {
                if upto(b) >= 1024 {
                    cache.insert(us[b].prefix);
                    furthest = furthest.max(upto(b));
                }
            }
            (read, furthest.saturating_sub(read))
        } else {
            let shared = seen
                .iter()
                .map(|earlier| {
                    let n = earlier
                        .iter()
                        .zip(&us)
                        .take_while(|(a, b)| a.prefix == b.prefix)
                        .count();
                    if n == 0 { 0 } else { upto(n - 1) }
                })
                .max()
                .unwrap_or(0);
            let read = if shared >= 1024 {
                shared / 128 * 128
            } else {
                0
            };
            (read, 0)
        };
        out.push((total, read, write));
        seen.push(us);
    }
    out
}

fn report(
    name: &str,
    p: Protocol,
    provider: &str,
    model: &str,
    bodies: &[Value],
    stability: &[(u64, u64)],
) {
    let est = TiktokenEstimator::new(Encoding::O200k, 1.0);
    let prices = Catalog::builtin()
        .unwrap()
        .lookup(provider, model)
        .unwrap()
        .prices;
    let rows = simulate(p, bodies, &est);
    let input: u64 = rows.iter().map(|r| r.0).sum();
    let read: u64 = rows.iter().map(|r| r.1).sum();
    let write: u64 = rows.iter().map(|r| r.2).sum();
    let late_in: u64 = rows[2..].iter().map(|r| r.0).sum();
    let late_read: u64 = rows[2..].iter().map(|r| r.1).sum();
    let per_m = |t: u64, price: f64| t as f64 * price / 1e6;
    let uncached = per_m(input, prices.input);
    let cached = per_m(input - read - write, prices.input)
        + per_m(read, prices.cache_read.unwrap_or(prices.input))
        + per_m(write, prices.cache_write.unwrap_or(prices.input));
    let stable: u64 = stability[1..].iter().map(|s| s.0).sum();
    let estimated: u64 = stability[1..].iter().map(|s| s.1).sum();
    println!(
        "{name:<28} {input:>9} {read:>9} {write:>8} {:>8.1}% {:>8.1}% {uncached:>9.4} {cached:>9.4} {:>7.1}%",
        100.0 * late_read as f64 / late_in as f64,
        100.0 * stable as f64 / estimated as f64,
        100.0 * (1.0 - cached / uncached),
    );
}

#[tokio::main]
async fn main() {
    println!(
        "{STEPS}-step tool loop, built-in tools + 60 MCP-like tools, a plan written twice, ~250-token results; input tokens only"
    );
    println!(
        "{:<28} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "run", "input", "read", "written", "hit≥3", "stable", "$ none", "$ cache", "saved"
    );
    for (name, p, provider, model, cache) in [
        (
            "anthropic, no breakpoints",
            Protocol::Anthropic,
            "anthropic",
            "claude-sonnet-4-5",
            false,
        ),
        (
            "anthropic, breakpoints",
            Protocol::Anthropic,
            "anthropic",
            "claude-sonnet-4-5",
            true,
        ),
        (
            "openai (automatic)",
            Protocol::OpenaiChat,
            "openai",
            "gpt-4.1",
            true,
        ),
    ] {
        let (bodies, stability) = run(p, provider, model, cache).await;
        report(name, p, provider, model, &bodies, &stability);
    }
    println!(
        "hit≥3: simulated cache reads / input from the third call on; stable: the context reports' stable_prefix_tokens / estimated tokens from the second call on; $ none: every input token at the input price (the anchor)"
    );
}
