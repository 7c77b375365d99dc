//! Fixture loading shared by rein-model's tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod server {
    // Each test binary uses a different part of this shared module.
    #[allow(unused_imports)]
    pub use rein_model::testing::{Canned, serve};

    /// A response from a fixture.
    pub fn from_fixture(f: &super::Fixture) -> Canned {
        Canned::from_meta(&f.meta, &f.body)
    }
}

use rein_model::{ModelResponse, Protocol};
use serde_json::Value;
use std::path::PathBuf;

pub struct Fixture {
    pub id: String,
    pub meta: Value,
    pub body: Vec<u8>,
}

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers")
}

pub fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    let root = fixtures_dir();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let mut metas: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
            .collect();
        metas.sort();
        for m in metas {
            let meta: Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
            let body = std::fs::read(dir.join(meta["body_file"].as_str().unwrap())).unwrap();
            out.push(Fixture {
                id: meta["id"].as_str().unwrap().to_owned(),
                meta,
                body,
            });
        }
    }
    out
}

pub fn fixture(id: &str) -> Fixture {
    fixtures()
        .into_iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no fixture {id}"))
}

pub fn protocol_of(meta: &Value) -> Protocol {
    match meta["provider"].as_str().unwrap() {
        "openai-chat" | "openai-compat" => Protocol::OpenaiChat,
        "openai-responses" => Protocol::OpenaiResponses,
        "anthropic" => Protocol::Anthropic,
        "gemini" => Protocol::Gemini,
        "ollama" => Protocol::Ollama,
        other => panic!("unknown provider {other}"),
    }
}

fn opt_str(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

pub fn check(f: &Fixture, r: &ModelResponse) -> Vec<String> {
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
