//! What a call costs in prompt tokens as the capability surface grows (prints, not a timed
//! test): an agent with the built-in tools, 60 MCP-like tools and 20 skills, its requests built
//! by the real path (the driver, the context pipeline, a local OpenAI-protocol server), under
//! disclosure `all`, `progressive` and `auto`, on the first call and on the call after the
//! model activated two tools and one skill. The figures are the context report of each call
//! (estimated tokens per admitted item); `all` is the anchor, measured in the same run.
//!
//! `cargo bench -p rein-operation --bench disclosure`
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use common::ext;

use rein_core::OperationId;
use rein_core::event::ContextReport;
use rein_core::spec::ToolDisclosure;
use rein_model::Catalog;
use rein_model::testing::{Canned, serve};
use rein_operation::context_report::call_contexts;
use rein_operation::skills::SkillCatalog;
use rein_operation::{Driver, OperationSpec, RunEnd, StartOptions};
use std::path::Path;
use std::sync::Arc;

/// 20 skills of a realistic size: a one-line description, a body of about 400 words.
fn skills(root: &Path) -> SkillCatalog {
    let paragraph = "Check the inputs before you start, name every assumption, and keep the \
        steps small enough that each can be verified on its own. When a step fails, say which \
        one and why, then propose the smallest change that would let it pass. ";
    for i in 0..20 {
        let name = format!("skill-{i:02}");
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let body = format!("# Skill {i}\n\n{}", paragraph.repeat(10));
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: Procedures for area {i} of the project (reviews, release checklists, incident notes).\n---\n{body}\n"
            ),
        )
        .unwrap();
    }
    let catalog = SkillCatalog::discover(&[root.to_path_buf()]);
    assert_eq!(catalog.skills().len(), 20, "{:?}", catalog.problems());
    catalog
}

/// The first two calls' reports under `disclosure`: before and after activating `ext03`,
/// `ext04` (where tools are listed) and `skill-07`.
async fn reports(dir: &Path, disclosure: ToolDisclosure, progressive: bool) -> Vec<ContextReport> {
    let mut calls = vec![("k1", "skills__activate", r#"{"name":"skill-07"}"#)];
    if progressive {
        calls.push((
            "t1",
            "tools__activate_tools",
            r#"{"tools":["ext03","ext04"]}"#,
        ));
    }
    let server = serve(
        vec![Canned::openai_tools(&calls), Canned::openai_text("Done.")],
        1,
    )
    .await;
    let (store_dir, store) = common::temp_store("rein-bench-disclosure").await;
    let mut d = Driver::new(
        store.clone(),
        Arc::new(common::openai_provider(&server.base)),
        common::gpt_4o_mini(),
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_skills(Arc::new(skills(&dir.join("skills"))));
    for i in 0..60 {
        d = d.with_tool(Arc::new(ext::Ext(i)));
    }
    let opts = StartOptions {
        spec: OperationSpec {
            tools_disclosure: disclosure,
            system_role: Some("You maintain the project's services.".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d
        .start("Prepare the release checklist.", &opts)
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let reports = call_contexts(&*store, id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.report)
        .collect();
    let _ = std::fs::remove_dir_all(store_dir);
    reports
}

fn item(r: &ContextReport, name: &str) -> u64 {
    r.items
        .iter()
        .find(|i| i.item == name)
        .map_or(0, |i| i.tokens)
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("rein-bench-disclosure-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = [
        ("all", ToolDisclosure::All, false),
        ("progressive", ToolDisclosure::Progressive, true),
        ("auto", ToolDisclosure::Auto, true),
    ];
    println!("built-in tools + 60 MCP-like tools + 20 skills; estimated prompt tokens per call");
    println!(
        "{:<12} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}   {:>6}",
        "disclosure", "call", "total", "schemas", "list", "skills", "system", "vs all"
    );
    let mut anchor: Vec<u64> = Vec::new();
    for (name, disclosure, progressive) in rows {
        let reports = reports(&dir, disclosure, progressive).await;
        for (i, r) in reports.iter().enumerate() {
            if name == "all" {
                anchor.push(r.total_tokens);
            }
            let label = if i == 0 { "first" } else { "after" };
            println!(
                "{:<12} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8}   {:>5.1}%",
                name,
                label,
                r.total_tokens,
                item(r, "tool_schemas"),
                item(r, "tool_list"),
                item(r, "skills"),
                item(r, "system_role"),
                100.0 * r.total_tokens as f64 / anchor[i] as f64
            );
        }
    }
    println!(
        "first: the first call; after: the call after the model activated ext03, ext04 (listed modes) and skill-07"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
