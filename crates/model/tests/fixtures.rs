//! Conformance: every provider fixture (a raw response body plus its expected normalized
//! result) is parsed from random 1-7 byte pieces, so split UTF-8, split CRLF and split JSON
//! are all exercised, and the result must match `expected` field by field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, fixtures, protocol_of};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rein_model::framing::Decoder;
use rein_model::{Collector, ModelResponse};
use serde_json::Value;

fn parse(f: &Fixture, seed: u64) -> ModelResponse {
    let protocol = protocol_of(&f.meta);
    let mut c = Collector::new();
    let status = f.meta["response"]["status"].as_u64().unwrap() as u16;
    let framing = f.meta["response"]["framing"].as_str().unwrap();
    if !(200..300).contains(&status) {
        let headers: Vec<(String, String)> = f.meta["response"]["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let error = protocol.http_error(status, &headers, &f.body);
        c.push(&rein_model::ModelEvent::Error { error });
        return c.finish();
    }
    if framing == "json" {
        for e in protocol.parse_body(&f.body) {
            c.push(&e);
        }
        return c.finish();
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut decoder = Decoder::new(protocol.framing());
    let mut parser = protocol.parser();
    let (mut frames, mut events) = (Vec::new(), Vec::new());
    let mut rest: &[u8] = &f.body;
    while !rest.is_empty() {
        let n = rng.random_range(1..=7).min(rest.len());
        decoder.push(&rest[..n], &mut frames);
        rest = &rest[n..];
        for frame in frames.drain(..) {
            parser.frame(frame, &mut events);
        }
    }
    decoder.finish(&mut frames);
    for frame in frames.drain(..) {
        parser.frame(frame, &mut events);
    }
    parser.finish(&mut events);
    for e in &events {
        c.push(e);
    }
    c.finish()
}

fn opt_str(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn check(f: &Fixture, r: &ModelResponse) -> Vec<String> {
    let e = &f.meta["expected"];
    let bad = std::cell::RefCell::new(Vec::new());
    let eq = |what: &str, want: Option<String>, got: Option<String>| {
        if want != got {
            bad.borrow_mut()
                .push(format!("{what}: expected {want:?}, got {got:?}"));
        }
    };
    if let Some(text) = e["text"].as_str() {
        eq("text", Some(text.to_owned()), Some(r.text.clone()));
    }
    if e.get("reasoning").is_some() {
        eq("reasoning", opt_str(&e["reasoning"]), r.reasoning.clone());
    }
    if e.get("reasoning_signature").is_some() {
        eq(
            "reasoning_signature",
            opt_str(&e["reasoning_signature"]),
            r.reasoning_signature.clone(),
        );
    }
    if e.get("refusal").is_some() {
        eq("refusal", opt_str(&e["refusal"]), r.refusal.clone());
    }
    if e.get("partial").is_some() {
        eq(
            "partial",
            Some(e["partial"].to_string()),
            Some(r.partial.to_string()),
        );
    }
    eq(
        "stop_reason",
        opt_str(&e["stop_reason"]),
        r.stop_reason.map(|s| s.as_str().to_owned()),
    );
    if e.get("stop_reason_raw").is_some() {
        eq(
            "stop_reason_raw",
            opt_str(&e["stop_reason_raw"]),
            r.stop_reason_raw.clone(),
        );
    }
    if e.get("response_id").is_some() {
        eq(
            "response_id",
            opt_str(&e["response_id"]),
            r.response_id.clone(),
        );
    }
    if e.get("model").is_some() {
        eq("model", opt_str(&e["model"]), r.model.clone());
    }
    let want_calls = e["tool_calls"].as_array().cloned().unwrap_or_default();
    eq(
        "tool call count",
        Some(want_calls.len().to_string()),
        Some(r.tool_calls.len().to_string()),
    );
    for (w, g) in want_calls.iter().zip(&r.tool_calls) {
        let i = w["index"].as_u64().unwrap_or(0);
        eq(
            &format!("call {i} index"),
            Some(i.to_string()),
            Some(g.index.to_string()),
        );
        eq(&format!("call {i} id"), opt_str(&w["id"]), g.id.clone());
        eq(
            &format!("call {i} name"),
            opt_str(&w["name"]),
            Some(g.name.clone()),
        );
        eq(
            &format!("call {i} arguments"),
            Some(w["arguments"].to_string()),
            g.arguments.as_ref().map(|a| a.to_string()),
        );
        if let Some(raw) = w["arguments_raw"].as_str() {
            eq(
                &format!("call {i} arguments_raw"),
                Some(raw.to_owned()),
                Some(g.arguments_raw.clone()),
            );
        }
        if w.get("thought_signature").is_some() {
            eq(
                &format!("call {i} thought_signature"),
                opt_str(&w["thought_signature"]),
                g.thought_signature.clone(),
            );
        }
    }
    match (e["usage"].as_object(), &r.usage) {
        (None, _) => {}
        (Some(_), None) => bad
            .borrow_mut()
            .push("usage: expected some, got none".into()),
        (Some(w), Some(u)) => {
            let fields = [
                ("input_tokens", u.input),
                ("output_tokens", u.output),
                ("total_tokens", u.total),
                ("cached_input_tokens", u.cached_read),
                ("cache_creation_input_tokens", u.cache_write),
                ("reasoning_tokens", u.reasoning),
            ];
            for (name, got) in fields {
                if let Some(want) = w.get(name).and_then(|v| v.as_u64()) {
                    eq(
                        &format!("usage.{name}"),
                        Some(want.to_string()),
                        Some(got.to_string()),
                    );
                }
            }
        }
    }
    match (e["error"].as_object(), &r.error) {
        (None, None) => {}
        (None, Some(g)) => bad
            .borrow_mut()
            .push(format!("error: expected none, got {g}")),
        (Some(_), None) => bad
            .borrow_mut()
            .push("error: expected one, got none".into()),
        (Some(w), Some(g)) => {
            eq(
                "error.kind",
                opt_str(&w["kind"]),
                Some(g.kind.as_str().to_owned()),
            );
            eq(
                "error.http_status",
                opt_str(&w["http_status"]),
                g.http_status.map(|s| s.to_string()),
            );
            eq(
                "error.provider_type",
                opt_str(&w["provider_type"]),
                g.provider_type.clone(),
            );
            eq(
                "error.provider_code",
                opt_str(&w["provider_code"]),
                g.provider_code.clone(),
            );
            eq(
                "error.message",
                opt_str(&w["message"]),
                Some(g.message.clone()),
            );
            eq(
                "error.retryable",
                opt_str(&w["retryable"]),
                Some(g.retryable.to_string()),
            );
            eq(
                "error.retry_after_ms",
                opt_str(&w["retry_after_ms"]),
                g.retry_after_ms.map(|v| v.to_string()),
            );
            if w.contains_key("request_id") {
                eq(
                    "error.request_id",
                    opt_str(&w["request_id"]),
                    g.request_id.clone(),
                );
            }
        }
    }
    bad.into_inner()
}

#[test]
fn every_fixture_normalizes_to_its_expected_result_from_any_split() {
    let all = fixtures();
    assert_eq!(all.len(), 18, "fixture count");
    let mut failures = Vec::new();
    for f in &all {
        for seed in 0..12 {
            let bad = check(f, &parse(f, seed));
            if !bad.is_empty() {
                failures.push(format!("{} (seed {seed}):\n  {}", f.id, bad.join("\n  ")));
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixtures differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
