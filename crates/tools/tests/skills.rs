//! Skills on disk: discovery order and what is left out (with file and line), and the files
//! tool on `skill://` paths (only an active skill's folder, read-only, confined to it).

use rein_core::OperationId;
use rein_tools::skills::SkillCatalog;
use rein_tools::{BuiltinConfig, ToolContext, ToolRegistry};
use serde_json::json;
use std::path::{Path, PathBuf};

fn temp() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rein-skills-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn skill(root: &Path, folder: &str, front: &str, body: &str) {
    std::fs::create_dir_all(root.join(folder)).unwrap();
    std::fs::write(
        root.join(folder).join("SKILL.md"),
        format!("---\n{front}\n---\n{body}\n"),
    )
    .unwrap();
}

#[test]
fn discovery_keeps_the_first_of_a_name_and_reports_the_rest_with_their_line() {
    let (project, home) = (temp(), temp());
    skill(
        &project,
        "deploy",
        "name: deploy\ndescription: Project deploys.",
        "project",
    );
    skill(
        &home,
        "deploy",
        "name: deploy\ndescription: Home deploys.",
        "home",
    );
    skill(
        &home,
        "notes",
        "name: notes\ndescription: Take notes.\nallowed-tools: [files/read, todo]",
        "n",
    );
    skill(&home, "misnamed", "name: other\ndescription: d", "b");
    skill(&home, "upper", "description: d\nname: Upper", "b");
    skill(
        &home,
        "tabs",
        "name: tabs\ndescription: d\n\tbad: indent",
        "b",
    );
    std::fs::create_dir_all(home.join("no-skill-here")).unwrap();
    let missing = home.join("does-not-exist");
    let c = SkillCatalog::discover(&[project.clone(), missing, home.clone()]);
    let names: Vec<&str> = c.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["deploy", "notes"]);
    assert_eq!(c.get("deploy").unwrap().body, "project");
    assert_eq!(
        c.get("notes").unwrap().allowed_tools,
        ["files/read", "todo"]
    );
    let mut problems: Vec<(String, Option<usize>)> = c
        .problems()
        .iter()
        .map(|p| {
            let folder = p.file.parent().unwrap().file_name().unwrap();
            (folder.to_string_lossy().into_owned(), p.line)
        })
        .collect();
    problems.sort();
    assert_eq!(
        problems,
        [
            ("deploy".to_owned(), None),
            ("misnamed".to_owned(), Some(2)),
            ("tabs".to_owned(), Some(4)),
            ("upper".to_owned(), Some(3)),
        ]
    );
    let shown = c
        .problems()
        .iter()
        .find(|p| p.line == Some(2))
        .unwrap()
        .to_string();
    assert!(
        shown.contains("misnamed/SKILL.md:2:") && shown.contains("folder name"),
        "{shown}"
    );
}

#[tokio::test]
async fn files_read_an_active_skills_folder_only_and_never_write_it() {
    let (wd, skills) = (temp(), temp());
    skill(&skills, "guide", "name: guide\ndescription: d", "b");
    std::fs::write(skills.join("guide/ref.md"), "reference text").unwrap();
    std::fs::write(skills.join("secret.txt"), "outside the skill").unwrap();
    let reg = ToolRegistry::with_builtins(&BuiltinConfig::default()).unwrap();
    let cx = ToolContext {
        topic: None,
        earlier_calls: 0,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        operation_id: OperationId::new(),
        working_directory: Some(wd.clone()),
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: vec![("guide".into(), skills.join("guide"))],
        question_briefs: false,
        sandbox: Default::default(),
    };
    let files = reg.get("files").unwrap();
    let call = |api: &'static str, args: serde_json::Value| {
        let cx = cx.clone();
        async move {
            let out = files.call(&cx, api, args).await.unwrap();
            (out.success, out.content)
        }
    };
    let (ok, text) = call("read", json!({"path": "skill://guide/ref.md"})).await;
    assert!(ok && text.trim_end() == "reference text", "{text}");
    let (ok, listing) = call("list", json!({"path": "skill://guide"})).await;
    assert!(
        ok && listing.contains("ref.md") && listing.contains("SKILL.md"),
        "{listing}"
    );
    for (api, args, why) in [
        (
            "read",
            json!({"path": "skill://guide/../secret.txt"}),
            "outside",
        ),
        (
            "read",
            json!({"path": "skill://other/ref.md"}),
            "no active skill named `other`",
        ),
        (
            "write",
            json!({"path": "skill://guide/ref.md", "content": "x"}),
            "read-only",
        ),
        (
            "edit",
            json!({"path": "skill://guide/ref.md", "old_text": "reference", "new_text": "x"}),
            "read-only",
        ),
    ] {
        let (ok, text) = call(api, args.clone()).await;
        assert!(!ok && text.contains(why), "{api} {args}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(skills.join("guide/ref.md")).unwrap(),
        "reference text"
    );
}
