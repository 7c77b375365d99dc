//! Tool manifests stored once per distinct set (migration 44): an operation's setup names its
//! set by the SHA-256 of the set's JSON (`operation_setup.manifests_hash`), and the set's JSON
//! is in `tool_manifest_sets`. Thousands of operations of the same agents share a handful of
//! sets, where each used to carry its own copy (about 14 KB). Sets are only ever written here,
//! from the manifests an operation holds, so a hash always names the JSON it was computed
//! from; exports write each operation's manifests inline (see `portable.rs`) and imports load
//! them inline, so no file can plant a set under a hash it does not match.

use super::statement::Statement;
use super::to_json;
use crate::StoreError;
use rein_core::tool::ToolManifestMap;
use sha2::{Digest, Sha256};

/// The statement that records `manifests` as a set (nothing when it is already recorded), and
/// the hash an operation's setup names it by.
pub(super) fn record(manifests: &ToolManifestMap) -> Result<(Statement, String), StoreError> {
    let text = to_json(manifests, "tool manifests")?;
    let hash = hash_of(&text);
    let insert = Statement::new(
        "INSERT INTO tool_manifest_sets (hash, manifests) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING",
    )
    .arg(hash.as_str())
    .arg(text);
    Ok((insert, hash))
}

/// The SHA-256 of a set's JSON, in hex.
fn hash_of(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The manifests' JSON an operation's setup row holds: its set's when it names one (an error
/// when that set is missing: the operation would otherwise run without its tools), else what
/// it stored inline (set up before migration 44), if anything.
pub(super) fn stored_text(
    operation: &str,
    hash: Option<String>,
    from_set: Option<String>,
    inline: Option<String>,
) -> Result<Option<String>, StoreError> {
    match (hash, from_set) {
        (Some(_), Some(text)) => Ok(Some(text)),
        (Some(hash), None) => Err(StoreError::NotFound(format!(
            "tool manifests of operation {operation} (its set {hash} is missing)"
        ))),
        (None, _) => Ok(inline),
    }
}

/// The SQL expression an export reads `operation_setup.tool_manifests` with: the set's JSON
/// inline, so a file holds everything the operation needs wherever it is imported.
pub(super) const EXPORTED_MANIFESTS: &str = "COALESCE((SELECT m.manifests FROM tool_manifest_sets m \
     WHERE m.hash = operation_setup.manifests_hash), operation_setup.tool_manifests)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_sets_have_one_hash_and_different_ones_another() {
        let a = ToolManifestMap::new();
        let (_, h1) = record(&a).unwrap();
        let (_, h2) = record(&a.clone()).unwrap();
        assert_eq!(h1, h2);
        assert_eq!(h1.len(), 64);
        // The hash of `{}`, as any SHA-256 tool computes it.
        assert_eq!(
            h1,
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn a_setup_that_names_a_missing_set_is_an_error_not_an_operation_without_tools() {
        let e = stored_text("op_1", Some("abc".into()), None, None).unwrap_err();
        assert!(e.to_string().contains("op_1"), "{e}");
        assert_eq!(
            stored_text("op_1", None, None, Some("{}".into())).unwrap(),
            Some("{}".into())
        );
        assert_eq!(
            stored_text("op_1", Some("abc".into()), Some("{\"a\":1}".into()), None).unwrap(),
            Some("{\"a\":1}".into())
        );
    }
}

/// Tests on the real backends: operations with equal manifests share one set, a step that
/// changes an operation's manifests gives it another, an export carries them inline and its
/// import loads them, and rows from before migration 44 still load.
#[cfg(test)]
mod stored {
    use super::super::*;
    use crate::{Portable, PortableRow, Store};
    use rein_core::state::AgentState;
    use rein_core::tool::{ToolManifest, ToolManifestMap};
    use sqlx::Row;

    fn manifests(tools: &[&str]) -> Arc<ToolManifestMap> {
        Arc::new(
            tools
                .iter()
                .map(|t| {
                    let m: ToolManifest = serde_json::from_value(serde_json::json!({
                        "identifier": t, "description": format!("the {t} tool"), "apis": []
                    }))
                    .unwrap();
                    ((*t).to_owned(), Arc::new(m))
                })
                .collect(),
        )
    }

    fn operation(tools: &[&str]) -> NewOperation {
        let mut state = AgentState::new(OperationId::new());
        state.tool_manifests = manifests(tools);
        NewOperation {
            prompt: None,
            next_context: Some(rein_core::engine::initial_context(&state)),
            state,
            topic_id: format!("t-{}", OperationId::new()),
            agent: None,
            trigger: Trigger::Api,
            parent_operation: None,
            owner: Some("u1".to_owned()),
            spec: Default::default(),
            admission: None,
            thread: None,
            gate: None,
            response: None,
        }
    }

    /// `(manifests_hash, tool_manifests)` of each operation's setup row.
    async fn setups(
        store: &SqlStore,
        ids: &[OperationId],
    ) -> Vec<(Option<String>, Option<String>)> {
        let mut out = Vec::new();
        for id in ids {
            let row = sqlx::query(
                "SELECT manifests_hash, tool_manifests FROM operation_setup WHERE operation_id = $1",
            )
            .bind(id.to_string())
            .fetch_one(&store.pool)
            .await
            .unwrap();
            out.push((row.try_get(0).unwrap(), row.try_get(1).unwrap()));
        }
        out
    }

    async fn manifests_of(store: &SqlStore, id: OperationId) -> Arc<ToolManifestMap> {
        store
            .load_operation(id)
            .await
            .unwrap()
            .unwrap()
            .state
            .tool_manifests
    }

    async fn sets(store: &SqlStore) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM tool_manifest_sets")
            .fetch_one(&store.pool)
            .await
            .unwrap()
    }

    async fn check(store: &SqlStore) {
        let (a, b, c) = (
            operation(&["calc", "web"]),
            operation(&["calc", "web"]),
            operation(&["calc"]),
        );
        let ids = [
            a.state.operation_id,
            b.state.operation_id,
            c.state.operation_id,
        ];
        for op in [&a, &b, &c] {
            store.create_operation(op).await.unwrap();
        }
        let rows = setups(store, &ids).await;
        assert!(
            rows.iter()
                .all(|(h, inline)| h.is_some() && inline.is_none()),
            "{rows:?}"
        );
        assert_eq!(rows[0].0, rows[1].0, "equal manifests, one set");
        assert_ne!(rows[0].0, rows[2].0);
        assert_eq!(sets(store).await, 2);
        for (id, op) in ids.iter().zip([&a, &b, &c]) {
            assert_eq!(manifests_of(store, *id).await, op.state.tool_manifests);
        }

        // A step that changes the first one's manifests names another set; the second keeps
        // the shared one.
        let mut after = a.state.clone();
        after.tool_manifests = manifests(&["calc", "web", "shell"]);
        after.step_count = 1;
        let commit = StepCommit {
            thread_id: None,
            children: Vec::new(),
            step_index: 1,
            state: after.clone(),
            topic_id: a.topic_id.clone(),
            changes: StateChanges::between(&a.state, &after),
            events: Vec::new(),
            tool_executions: vec![],
            interventions: vec![],
            instructions: vec![rein_core::instruction::InstructionKind::CallLlm.into()],
            next_context: None,
            operation_id: ids[0],
        };
        assert_eq!(
            store.commit_step(&commit).await.unwrap(),
            CommitOutcome::Committed
        );
        let rows = setups(store, &ids).await;
        assert_ne!(rows[0].0, rows[1].0);
        assert_eq!(sets(store).await, 3);
        assert_eq!(manifests_of(store, ids[0]).await, after.tool_manifests);
        assert_eq!(manifests_of(store, ids[1]).await, b.state.tool_manifests);

        // An export holds the manifests inline and no hash; its import loads them inline.
        let mut rows: Vec<PortableRow> = Vec::new();
        store
            .export_operation(ids[1], &mut |r| {
                rows.push(r);
                Ok(())
            })
            .await
            .unwrap();
        let setup = rows.iter().find(|r| r.table == "operation_setup").unwrap();
        assert!(!setup.row.contains_key("manifests_hash"), "{:?}", setup.row);
        let inline: ToolManifestMap =
            serde_json::from_str(setup.row["tool_manifests"].as_str().unwrap()).unwrap();
        assert_eq!(inline, *b.state.tool_manifests);
        let copy = OperationId::new();
        let (old, new) = (ids[1].to_string(), copy.to_string());
        let (old_topic, new_topic) = (b.topic_id.clone(), format!("t-{copy}"));
        store
            .import_operation(&rows, &|_, _, v| match v {
                serde_json::Value::String(s) => {
                    serde_json::Value::String(s.replace(&old, &new).replace(&old_topic, &new_topic))
                }
                other => other.clone(),
            })
            .await
            .unwrap();
        assert_eq!(setups(store, &[copy]).await[0].0, None, "imported inline");
        assert_eq!(manifests_of(store, copy).await, b.state.tool_manifests);
        assert_eq!(sets(store).await, 3, "an import writes no set");

        // A setup naming a set that is gone is an error naming the operation, not an
        // operation without its tools.
        sqlx::query("DELETE FROM tool_manifest_sets WHERE hash = $1")
            .bind(rows_hash(store, ids[2]).await)
            .execute(&store.pool)
            .await
            .unwrap();
        let e = store.load_operation(ids[2]).await.unwrap_err();
        assert!(e.to_string().contains(&ids[2].to_string()), "{e}");
    }

    async fn rows_hash(store: &SqlStore, id: OperationId) -> String {
        setups(store, &[id]).await[0].0.clone().unwrap()
    }

    #[tokio::test]
    async fn sqlite_operations_share_their_manifest_sets() {
        let dir = std::env::temp_dir().join(format!("rein-sets-{}", OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap();
        check(&store).await;
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn postgres_operations_share_their_manifest_sets() {
        let Some(scratch) = rein_testkit::postgres_scratch(
            "postgres_operations_share_their_manifest_sets",
            "rein_sets",
        )
        .await
        else {
            return;
        };
        let store = SqlStore::open(&scratch.url, Synchronous::Normal)
            .await
            .unwrap();
        check(&store).await;
        store.close().await;
        scratch.drop().await;
    }
}
