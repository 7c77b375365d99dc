//! Skills, tool disclosure and the context report, end to end: a scripted OpenAI-protocol
//! server on loopback, a SQLite file, skills read from folders on disk.

use crate::common;

use common::ext;

use rein_core::spec::{AgentRef, ToolDisclosure};
use rein_model::Catalog;
use rein_model::testing::{Canned, Recorded, Server, serve};
use rein_operation::context_report::call_contexts;
use rein_operation::skills::SkillCatalog;
use rein_operation::{Driver, OperationSpec, RunEnd, StartOptions};
use rein_store::{SqlStore, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A marker only the skill's body contains.
const BODY_MARKER: &str = "Always run pdftotext with -layout.";
/// A marker only the skill's resource file contains.
const RESOURCE_MARKER: &str = "Page ranges are 1-based.";

struct Env {
    server: Server,
    store: Arc<SqlStore>,
    dir: PathBuf,
}

async fn env(responses: Vec<Canned>) -> Env {
    let (dir, store) = common::temp_store("rein-skills").await;
    Env {
        server: serve(responses, 11).await,
        store,
        dir,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Two good skills and a broken one under `<dir>/skills`.
fn skills(dir: &Path) -> SkillCatalog {
    let root = dir.join("skills");
    write(
        &root.join("pdf-tools/SKILL.md"),
        &format!(
            "---\nname: pdf-tools\ndescription: Extract text and tables from PDF files.\n---\n# PDF tools\n\n{BODY_MARKER}\nSee reference.md.\n"
        ),
    );
    write(&root.join("pdf-tools/reference.md"), RESOURCE_MARKER);
    write(
        &root.join("release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes from a changelog.\n---\nGroup changes by kind.\n",
    );
    write(
        &root.join("broken/SKILL.md"),
        "---\nname: broken\ndescription: [never closed\n---\nbody\n",
    );
    SkillCatalog::discover(&[root])
}

fn driver(e: &Env) -> Driver {
    Driver::new(
        e.store.clone(),
        Arc::new(common::openai_provider(&e.server.base)),
        common::gpt_4o_mini(),
        Arc::new(Catalog::builtin().unwrap()),
    )
}

fn spec(e: &Env) -> OperationSpec {
    OperationSpec {
        working_directory: Some(e.dir.display().to_string()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_skill_is_listed_until_activated_then_its_body_and_files_are_admitted() {
    let e = env(vec![
        Canned::openai_tools(&[("s1", "skills__activate", r#"{"name":"pdf-tools"}"#)]),
        Canned::openai_tools(&[(
            "r1",
            "files__read",
            r#"{"path":"skill://pdf-tools/reference.md"}"#,
        )]),
        Canned::openai_tools(&[(
            "w1",
            "files__write",
            r#"{"path":"skill://pdf-tools/reference.md","content":"x"}"#,
        )]),
        Canned::openai_text("Done."),
    ])
    .await;
    let catalog = skills(&e.dir);
    assert_eq!(catalog.skills().len(), 2, "{:?}", catalog.problems());
    let problem = &catalog.problems()[0];
    assert!(problem.file.ends_with("broken/SKILL.md"), "{problem}");
    assert_eq!(problem.line, Some(3), "{problem}");
    let d = driver(&e).with_skills(Arc::new(catalog));
    let opts = StartOptions {
        spec: OperationSpec {
            system_role: Some("You convert documents.".into()),
            agent: Some(AgentRef {
                name: "pdf-helper".into(),
                version: None,
            }),
            approval: rein_core::intervention::ApprovalMode::AutoRun,
            ..spec(&e)
        },
        ..Default::default()
    };
    let id = d.start("Summarize report.pdf", &opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 4);
    // Identity and the listing, never the body, before activation.
    let first = requests[0].system_text();
    assert!(first.contains("You convert documents."), "{first}");
    assert!(first.contains("Your name is pdf-helper."), "{first}");
    assert!(
        first.contains("- pdf-tools: Extract text and tables from PDF files.")
            && first.contains("- release-notes:"),
        "{first}"
    );
    assert!(!first.contains(BODY_MARKER), "{first}");
    assert!(
        requests[0]
            .offered_tools()
            .contains(&"skills__activate".to_owned())
    );
    // The activation's result carries the body and names the files; the head stays as it
    // was (the skill still listed), so the next request repeats the first one's prefix.
    let activated = requests[1].tool_result("s1");
    assert!(
        activated.contains(BODY_MARKER)
            && activated.contains("<skill name=\"pdf-tools\">")
            && activated.contains("skill://pdf-tools/reference.md"),
        "{activated}"
    );
    assert_eq!(requests[1].system_text(), first);
    assert_eq!(requests[3].system_text(), first);
    // Its resource file is readable, and read-only.
    assert_eq!(requests[2].tool_result("r1").trim_end(), RESOURCE_MARKER);
    let refused = requests[3].tool_result("w1");
    assert!(refused.contains("read-only"), "{refused}");
    let on_disk = std::fs::read_to_string(e.dir.join("skills/pdf-tools/reference.md")).unwrap();
    assert_eq!(on_disk, RESOURCE_MARKER);
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let active: Vec<(&str, u32, &str)> = op
        .state
        .activated_skills
        .iter()
        .map(|s| (s.name.as_str(), s.activated_at_step, s.source.as_str()))
        .collect();
    assert_eq!(active, [("pdf-tools", 2, "model")]);
}

#[tokio::test]
async fn a_skill_named_by_the_spec_is_admitted_from_the_first_call_and_kept_by_state() {
    let e = env(vec![
        Canned::openai_tools(&[("c1", "shell__run", r#"{"command":"ls"}"#)]),
        Canned::openai_text("Listed."),
    ])
    .await;
    let d = driver(&e).with_skills(Arc::new(skills(&e.dir)));
    let unknown = StartOptions {
        spec: OperationSpec {
            skills: vec!["pdf-tools".into(), "nope".into()],
            ..spec(&e)
        },
        ..Default::default()
    };
    let err = d.start("x", &unknown).await.unwrap_err();
    assert!(err.to_string().contains("no skill named nope"), "{err}");
    assert!(
        e.store
            .list_operations(&Default::default())
            .await
            .unwrap()
            .is_empty()
    );
    let opts = StartOptions {
        spec: OperationSpec {
            skills: vec!["pdf-tools".into()],
            ..spec(&e)
        },
        ..Default::default()
    };
    let id = d.start("List files", &opts).await.unwrap();
    let end = d.run(id).await.unwrap();
    // The shell asks for approval (manual mode); a driver with no skills at all continues it:
    // what the call admits comes from the operation's state, not from this process's catalog.
    assert!(matches!(end, RunEnd::WaitingForHuman { .. }), "{end:?}");
    drop(d);
    let other = driver(&e);
    let end = other
        .decide(id, None, rein_operation::Decision::Approve, Some("test"))
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let requests = e.server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert!(r.system_text().contains(BODY_MARKER));
    }
    // A process that has no skills lists none.
    assert!(requests[0].system_text().contains("- release-notes:"));
    assert!(!requests[1].system_text().contains("- release-notes:"));
}

fn with_sixty(mut d: Driver) -> Driver {
    for i in 0..60 {
        d = d.with_tool(Arc::new(ext::Ext(i)));
    }
    d
}

#[tokio::test]
async fn sixty_more_tools_are_listed_until_activated_and_all_sends_everything() {
    let e = env(vec![
        Canned::openai_tools(&[("a1", "tools__activate_tools", r#"{"tools":["ext07"]}"#)]),
        Canned::openai_tools(&[("x1", "ext07__run", r#"{"query":"flaky"}"#)]),
        Canned::openai_text("Nothing flaky."),
        Canned::openai_text("Everything at once."),
    ])
    .await;
    let d = with_sixty(driver(&e));
    // `auto` (the default): 60 schemas cost more than the threshold.
    let id = d
        .start(
            "Any flaky builds?",
            &StartOptions {
                spec: spec(&e),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let requests = e.server.requests();
    assert_eq!(requests[0].offered_tools(), ["tools__activate_tools"]);
    let listing = requests[0].system_text();
    for listed in ["- ext00:", "- ext59:", "- files:", "- shell:"] {
        assert!(listing.contains(listed), "{listed} not in {listing}");
    }
    // A listed tool's instructions wait for its schema.
    assert!(!listing.contains("Use ext07 only"), "{listing}");
    let after = requests[1].offered_tools();
    assert!(after.contains(&"ext07__run".to_owned()), "{after:?}");
    assert!(!after.contains(&"ext08__run".to_owned()), "{after:?}");
    let system = requests[1].system_text();
    assert!(
        system.contains("<tool name=\\\"ext07\\\">")
            && system.contains("Use ext07 only for project 7."),
        "{system}"
    );
    assert!(!system.contains("- ext07:"), "{system}");
    assert_eq!(requests[2].tool_result("x1"), "no results");
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.state.activated_tools[0].identifier, "ext07");

    // `all`: every schema, no listing.
    let all = StartOptions {
        spec: OperationSpec {
            tools_disclosure: ToolDisclosure::All,
            ..spec(&e)
        },
        ..Default::default()
    };
    let id = d.start("Everything", &all).await.unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let last = e.server.requests().pop().unwrap();
    let offered = last.offered_tools();
    assert!(
        offered.contains(&"ext00__run".to_owned()) && offered.contains(&"ext59__run".to_owned())
    );
    assert!(offered.contains(&"files__read".to_owned()));
    assert!(!offered.contains(&"tools__activate_tools".to_owned()));
    assert!(!last.system_text().contains("More tools are available"));
}

/// Tokens of a chat request as received, counted independently of the report: each message's
/// text and tool calls, and each function offered, with the estimator's framing.
fn request_tokens(r: &Recorded) -> u64 {
    let est = rein_context::TiktokenEstimator::default();
    let mut n = 0;
    for m in r.body["messages"].as_array().unwrap() {
        n += 4;
        match &m["content"] {
            serde_json::Value::String(s) => n += est.text(s),
            serde_json::Value::Array(parts) => {
                for p in parts {
                    n += est.text(p["text"].as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            n += 4
                + est.text(c["function"]["name"].as_str().unwrap_or_default())
                + est.text(c["function"]["arguments"].as_str().unwrap_or_default());
        }
    }
    for t in r.body["tools"].as_array().into_iter().flatten() {
        let f = &t["function"];
        n += 8
            + est.text(f["name"].as_str().unwrap_or_default())
            + est.text(f["description"].as_str().unwrap_or_default())
            + est.text(&f["parameters"].to_string());
    }
    n
}

#[tokio::test]
async fn each_call_reports_what_it_admitted_summing_to_the_request() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "a1",
            "tools__activate_tools",
            r#"{"tools":["ext03","ext04"]}"#,
        )]),
        Canned::openai_tools(&[("s1", "skills__activate", r#"{"name":"release-notes"}"#)]),
        Canned::openai_text("Notes written."),
    ])
    .await;
    let d = with_sixty(driver(&e)).with_skills(Arc::new(skills(&e.dir)));
    let opts = StartOptions {
        spec: OperationSpec {
            system_role: Some("You write release notes.".into()),
            ..spec(&e)
        },
        ..Default::default()
    };
    let id = d.start("Write the notes for 1.2", &opts).await.unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let requests = e.server.requests();
    let calls = call_contexts(&*e.store, id, None).await.unwrap();
    assert_eq!(calls.len(), requests.len());
    for (call, request) in calls.iter().zip(&requests) {
        let r = &call.report;
        assert_eq!(
            r.items.iter().map(|i| i.tokens).sum::<u64>(),
            r.total_tokens
        );
        let sent = request_tokens(request);
        let off = (r.total_tokens as f64 - sent as f64).abs() / sent as f64;
        assert!(
            off <= 0.02,
            "step {}: report {} vs request {sent}",
            call.step,
            r.total_tokens
        );
        let item = |name: &str| r.items.iter().find(|i| i.item == name).map(|i| i.tokens);
        assert!(
            item("system_role").is_some() && item("history").is_some(),
            "{r:?}"
        );
        assert!(
            item("tool_list").is_some() && item("tool_schemas").is_some(),
            "{r:?}"
        );
        let skills = r
            .processors
            .iter()
            .find(|p| p.processor == "skills")
            .unwrap();
        assert!(skills.changed >= 1 && skills.tokens_delta > 0, "{skills:?}");
    }
    // Activating two tools costs their schemas; a skill's body comes with its activation's
    // result, in the conversation, and leaves the skills listing as it was.
    let first = &calls[0].report;
    let last = &calls[2].report;
    let tokens = |r: &rein_core::event::ContextReport, name: &str| {
        r.items
            .iter()
            .find(|i| i.item == name)
            .map_or(0, |i| i.tokens)
    };
    assert!(tokens(last, "tool_schemas") > tokens(first, "tool_schemas"));
    assert!(tokens(last, "tool_list") < tokens(first, "tool_list"));
    assert_eq!(tokens(last, "skills"), tokens(first, "skills"));
    assert!(tokens(last, "history") > tokens(first, "history"));
    assert_eq!(calls[0].step, 1);
    // The same report through the step filter.
    let one = call_contexts(&*e.store, id, Some(calls[1].step))
        .await
        .unwrap();
    assert_eq!(one, vec![calls[1].clone()]);
    // The role is not a conversation message.
    assert_eq!(requests[0].body["messages"][0]["role"], "system");
}
