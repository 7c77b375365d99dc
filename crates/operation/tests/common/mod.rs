//! What the driver tests and benches share: a SQLite store in a fresh temporary folder, an
//! OpenAI-protocol provider pointed at a scripted server, and an MCP-like tool ([`ext`]).
#![allow(dead_code)]

pub mod ext;
pub mod in_process;

use rein_core::OperationId;
use rein_core::state::ModelRef;
use rein_model::registry::{ProviderConfig, Quirks};
use rein_model::transport::Timeouts;
use rein_model::{Protocol, Provider, ReqwestTransport};
use rein_store::{SqlStore, Synchronous};
use std::path::PathBuf;
use std::sync::Arc;

/// A new folder under the system's temporary directory (`PREFIX-<id>`) and a SQLite store
/// (`rein.db`, synchronous NORMAL) in it.
pub async fn temp_store(prefix: &str) -> (PathBuf, Arc<SqlStore>) {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
        .await
        .unwrap();
    (dir, Arc::new(store))
}

/// The provider `openai` (OpenAI Chat protocol, a dummy key) at `base` (a scripted server).
pub fn openai_provider(base: &str) -> Provider {
    provider_at("openai", Protocol::OpenaiChat, &format!("{base}/v1"))
}

/// Provider `id` speaking `protocol` at `base_url` (a scripted server's), with a dummy key.
pub fn provider_at(id: &str, protocol: Protocol, base_url: &str) -> Provider {
    let config = ProviderConfig {
        id: id.into(),
        protocol,
        base_url: base_url.into(),
        api_key: Some("k".into()),
        headers: Default::default(),
        quirks: Quirks::default(),
    };
    Provider::new(
        config,
        Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap()),
    )
}

/// A driver over `store` whose model is `openai/gpt-4o-mini` at the scripted `server`.
pub fn driver(
    server: &rein_model::testing::Server,
    store: &Arc<SqlStore>,
) -> rein_operation::Driver {
    rein_operation::Driver::new(
        store.clone(),
        Arc::new(openai_provider(&server.base)),
        gpt_4o_mini(),
        Arc::new(rein_model::Catalog::builtin().unwrap()),
    )
}

/// `openai/gpt-4o-mini`, the model the tests run (priced in the built-in catalog).
pub fn gpt_4o_mini() -> ModelRef {
    ModelRef {
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
    }
}

/// Return once the wall clock has passed `t` (a recorded deadline or expiry): the wait is on
/// the instant the store recorded, not a guess at it.
pub async fn wait_past(t: chrono::DateTime<chrono::Utc>) {
    while chrono::Utc::now() <= t {
        let left = (t - chrono::Utc::now()).to_std().unwrap_or_default();
        tokio::time::sleep(left + std::time::Duration::from_millis(5)).await;
    }
}

/// A driver over `store` for operations that never call a model (its provider points nowhere).
pub fn driver_without_model(store: &Arc<SqlStore>) -> rein_operation::Driver {
    rein_operation::Driver::new(
        store.clone(),
        Arc::new(openai_provider("http://127.0.0.1:9")),
        gpt_4o_mini(),
        Arc::new(rein_model::Catalog::builtin().unwrap()),
    )
}

/// What every committed operation satisfies, whatever happened to it: events gapless, each
/// message stored once (compressed ones kept in the history), the history's model view is the
/// state, usage counted once (one message per model call).
pub async fn assert_consistent(store: &SqlStore, id: OperationId) {
    use rein_store::Store;
    let events = store.events(id, None).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "gapless event sequence"
    );
    let op = store.load_operation(id).await.unwrap().unwrap();
    let ids: std::collections::HashSet<_> = op.state.messages.iter().map(|m| m.id).collect();
    assert_eq!(ids.len(), op.state.messages.len(), "no duplicated messages");
    let topic = store.topic_messages(&op.record.topic_id).await.unwrap();
    let replaced: usize = topic.iter().map(|m| m.summarizes.len()).sum();
    assert_eq!(
        topic.len(),
        op.state.messages.len() + replaced,
        "every message stored once; compressed ones stay in the history"
    );
    // Same messages (parallel results created in the same millisecond may list in another
    // order; the context pipeline pairs them with their calls either way).
    let mut view: Vec<_> = rein_core::message::model_view(topic)
        .into_iter()
        .map(|m| m.id)
        .collect();
    let mut state_ids: Vec<_> = op.state.messages.iter().map(|m| m.id).collect();
    view.sort();
    state_ids.sort();
    assert_eq!(view, state_ids, "the history's model view is the state");
    let history = store.topic_messages(&op.record.topic_id).await.unwrap();
    let per_message: u64 = history
        .iter()
        .filter_map(|m| m.usage.map(|u| u.total))
        .sum();
    assert_eq!(
        op.record.total_tokens, per_message,
        "usage counted once: the total is the sum of the calls"
    );
    assert_eq!(
        history.iter().filter(|m| m.usage.is_some()).count() as u64,
        op.state.usage.llm.calls,
        "one message per model call (compression summaries included)"
    );
}
