//! `rein agent export` and `rein agent import`: an agent written as a file and created again
//! (under another name, and in another database) with its settings and its own memories; a
//! file naming a model, tool or knowledge base the host cannot give is refused, naming it.

use super::*;
use rein_store::{Memories, MemoryCategory, MemoryPool, NewMemory};

#[tokio::test]
async fn an_agent_exports_and_imports_with_its_memories_and_refuses_what_the_host_lacks() {
    if super::local_only(
        "an_agent_exports_and_imports_with_its_memories_and_refuses_what_the_host_lacks",
        "its memories are seeded in this machine's pool",
    ) {
        return;
    }
    let e = env(vec![]).await;
    let (code, _, err) = e
        .rein(&[
            "agent",
            "create",
            "diary",
            "--memory",
            "agent",
            "--model",
            "openai/gpt-4o-mini",
            "--tools",
            "calculator",
            "--system",
            "Keep a diary.",
            "--max-steps",
            "7",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let fact = |subject: &str, text: &str| NewMemory {
        category: MemoryCategory::Preference,
        subject: subject.into(),
        text: text.into(),
        source_message: None,
        embedding: None,
    };
    e.store()
        .await
        .import_memories(
            None,
            "diary",
            &[
                fact("editor", "Uses Helix."),
                fact("city", "Lives in Lyon."),
            ],
        )
        .await
        .unwrap();
    let (code, file, err) = e.rein(&["agent", "export", "diary"]).await;
    assert_eq!(code, 0, "{err}");
    let exported: serde_json::Value = serde_json::from_str(file.trim()).unwrap();
    assert_eq!(exported["rein_agent"], 1);
    assert_eq!(
        exported["memories"].as_array().unwrap().len(),
        2,
        "{exported:#}"
    );
    let path = e.dir.join("diary.json");
    std::fs::write(&path, &file).unwrap();

    // Here under another name, and in a fresh database.
    let (code, out, err) = e
        .rein(&[
            "--json",
            "agent",
            "import",
            &path.display().to_string(),
            "--name",
            "diary2",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("imported agent diary2 with 2 of its memories"),
        "{err}"
    );
    let shown: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(shown["config"], exported["config"], "the same settings");
    let texts = |pool: MemoryPool<'static>| {
        let e = &e;
        async move {
            let mut t: Vec<String> = e
                .store()
                .await
                .list_memories(None, pool, false)
                .await
                .unwrap()
                .into_iter()
                .map(|m| m.text)
                .collect();
            t.sort();
            t
        }
    };
    assert_eq!(
        texts(MemoryPool::PrivateTo("diary2")).await,
        ["Lives in Lyon.", "Uses Helix."]
    );
    let other = e.dir.join("other.db");
    let (code, _, err) = e
        .rein(&[
            "--db",
            &other.display().to_string(),
            "agent",
            "import",
            &path.display().to_string(),
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, again, _) = e
        .rein(&[
            "--db",
            &other.display().to_string(),
            "--json",
            "agent",
            "show",
            "diary",
        ])
        .await;
    assert_eq!(code, 0);
    let again: serde_json::Value = serde_json::from_str(again.trim()).unwrap();
    assert_eq!(again["config"], exported["config"]);
    // The same name again: refused, nothing changed.
    let (code, _, err) = e
        .rein(&["agent", "import", &path.display().to_string()])
        .await;
    assert_ne!(code, 0);
    assert!(err.contains("agent `diary` already exists"), "{err}");

    // What this host cannot give, named.
    let refuse = |edit: &dyn Fn(&mut serde_json::Value), says: &str| {
        let mut v = exported.clone();
        edit(&mut v);
        v["name"] = serde_json::json!("refused");
        std::fs::write(&path, v.to_string()).unwrap();
        let says = says.to_owned();
        let e = &e;
        let path = path.clone();
        async move {
            let (code, _, err) = e
                .rein(&["agent", "import", &path.display().to_string()])
                .await;
            assert_ne!(code, 0);
            assert!(err.contains(&says), "{says}: {err}");
        }
    };
    refuse(
        &|v| v["config"]["model"] = serde_json::json!("mistral/mistral-large"),
        "mistral",
    )
    .await;
    refuse(
        &|v| v["config"]["tools"] = serde_json::json!(["calculator", "github/create_issue"]),
        "this host has no tool github",
    )
    .await;
    refuse(
        &|v| v["config"]["knowledge"] = serde_json::json!(["manuals"]),
        "no knowledge base named manuals",
    )
    .await;
    refuse(
        &|v| v["rein_agent"] = serde_json::json!(3),
        "agent format 3",
    )
    .await;
    let (_, list, _) = e.rein(&["agent", "list"]).await;
    assert!(!list.contains("refused"), "{list}");
}
