//! Operations as files: exported, imported into a fresh database (SQLite, and PostgreSQL when
//! there is one) under new ids, shown the same, and replayed and forked there; a file naming a
//! model this process cannot reach or an MCP server it lacks is refused, naming it.

use super::*;
use rein_operation::{DriverError, ForkChanges, ForkOptions, ReplayOptions};
use rein_store::{OperationArchive, Trigger};

/// What an operation shows, ids aside: its figures, steps and conversation.
async fn shown(store: &dyn Store, id: OperationId) -> serde_json::Value {
    let op = store.load_operation(id).await.unwrap().unwrap();
    let r = &op.record;
    let steps: Vec<_> = store
        .steps(id)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.step_index, s.status, s.instructions))
        .collect();
    let messages: Vec<_> = op
        .state
        .messages
        .iter()
        .map(|m| (m.role, m.text_content(), m.tool_calls.len()))
        .collect();
    let events: Vec<_> = store
        .events(id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.seq, serde_json::to_value(&e).unwrap()["type"].clone()))
        .collect();
    serde_json::json!({
        "status": r.status, "steps": format!("{steps:?}"), "messages": format!("{messages:?}"),
        "events": format!("{events:?}"), "tokens": r.total_tokens, "cost": r.cost,
        "step_count": r.step_count, "prompt": r.prompt,
    })
}

async fn round_trip(into: Arc<dyn Store>, e: &Env, id: OperationId, archive: &OperationArchive) {
    // A process with what the operation ran with: its model's provider and the deploy tool.
    let driver = Driver::new(
        into.clone(),
        Arc::new(openai_provider(e)),
        ModelRef {
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
        },
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Deploy {
        runs: e.runs.clone(),
        block: false,
        policy: InterventionPolicy::Required,
    }));
    let (imported, topic) = driver.import_operation(archive, None).await.unwrap();
    assert_ne!(imported, id);
    assert_eq!(topic, format!("topic_{imported}"));
    assert_eq!(
        shown(&*into, imported).await,
        shown(&*e.store, id).await,
        "shown the same after the round trip"
    );
    // A second import of the same file: other ids, both kept.
    let (again, _) = driver.import_operation(archive, None).await.unwrap();
    assert_ne!(again, imported);

    // It replays here: the request its step 3 sent, to its own model.
    let before = e.server.requests().len();
    e.server
        .route("gpt-4o-mini", vec![tools(&[calc("c2", "391+1")])]);
    let replay = driver
        .replay(&ReplayOptions {
            from: imported,
            step: 3,
            models: vec![ModelRef {
                provider: "openai".into(),
                model: "gpt-4o-mini".into(),
            }],
            runs: 1,
        })
        .await
        .unwrap();
    assert_eq!(replay.answers[0].same_tool_calls, Some(true));
    let sent = e.server.requests();
    assert_eq!(
        serde_json::to_string(&sent[before].body).unwrap(),
        serde_json::to_string(&sent[1].body).unwrap(),
        "the imported operation's step 3 asks what the original's asked"
    );
    // And forks here.
    e.server.push(Canned::openai_text("Forked here."));
    let fork = driver
        .fork(&ForkOptions {
            from: imported,
            at: 4,
            changes: ForkChanges::default(),
            trigger: Trigger::Cli,
            admission: None,
            max_cost: None,
            max_tokens: None,
        })
        .await
        .unwrap();
    driver.run(fork.id).await.unwrap();
    let forked = into.load_operation(fork.id).await.unwrap().unwrap();
    assert_eq!(
        forked.state.messages.last().unwrap().text_content(),
        "Forked here."
    );
}

#[tokio::test]
async fn an_exported_operation_imports_into_a_fresh_database_and_replays_and_forks_there() {
    let e = env(vec![
        tools(&[calc("c1", "17*23")]),
        tools(&[calc("c2", "391+1")]),
        Canned::openai_text("392."),
    ])
    .await;
    let d = driver(&e, false);
    let id = d
        .start("What is 17*23, plus one?", &steady(&["calculator"]))
        .await
        .unwrap();
    d.run(id).await.unwrap();
    let archive = d.export_operation(id).await.unwrap();
    // Through its text, as a file carries it.
    let text = serde_json::to_string(&archive).unwrap();
    let archive: OperationArchive = serde_json::from_str(&text).unwrap();

    let (_, sqlite) = common::temp_store("rein-import").await;
    round_trip(sqlite, &e, id, &archive).await;
    if let Some(scratch) =
        rein_testkit::postgres_scratch("importing an operation into PostgreSQL", "rein_import")
            .await
    {
        let pg = rein_store::SqlStore::open(&scratch.url, rein_store::Synchronous::Normal)
            .await
            .unwrap();
        round_trip(Arc::new(pg), &e, id, &archive).await;
        scratch.drop().await;
    }

    // What this process cannot run is refused, naming it, before anything is written.
    let (_, empty) = common::temp_store("rein-import-refused").await;
    let elsewhere = Driver::new(
        empty.clone(),
        Arc::new(openai_provider(&e)),
        ModelRef {
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
        },
        Arc::new(Catalog::builtin().unwrap()),
    );
    let refused = elsewhere.import_operation(&archive, None).await;
    let Err(DriverError::MissingTools { tools, .. }) = &refused else {
        panic!("{refused:?}")
    };
    assert_eq!(
        tools,
        &["deploy".to_owned()],
        "this process lacks the tool it ran with"
    );
    // A model whose provider this process does not have.
    let mut other = archive.clone();
    for r in &mut other.rows {
        if r.table == "operation_setup"
            && let Some(serde_json::Value::String(spec)) = r.row.get_mut("spec")
        {
            let mut v: serde_json::Value = serde_json::from_str(spec).unwrap();
            v["model"] = serde_json::json!({"provider": "mistral", "model": "mistral-large"});
            v["mcp_servers"] = serde_json::json!([]);
            *spec = v.to_string();
        }
    }
    let refused = elsewhere.import_operation(&other, None).await;
    let Err(e @ DriverError::ModelUnavailable(_)) = &refused else {
        panic!("{refused:?}")
    };
    assert!(e.to_string().contains("mistral"), "{e}");
    assert!(
        empty
            .list_operations(&rein_store::OperationFilter::default())
            .await
            .unwrap()
            .is_empty(),
        "nothing was written"
    );
}
