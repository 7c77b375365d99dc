//! Fixture loading shared by rein-model's tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use rein_model::Protocol;
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
