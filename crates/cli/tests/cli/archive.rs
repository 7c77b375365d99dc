//! `rein op export` and `rein op import`: an operation written as a file and loaded again under
//! new ids shows the same and replays; a file that is not one is refused, saying so; here and
//! through a server.

use super::*;

/// `op show`'s lines, with the ids and times that differ between two copies taken out.
fn without_ids(shown: &str, ids: &[&str]) -> String {
    let mut s = shown.to_owned();
    for id in ids {
        s = s.replace(id, "ID");
    }
    s.lines()
        .filter(|l| !l.trim_start().starts_with("created") && !l.contains(" at "))
        .map(|l| {
            // A step's time is its line's end.
            l.split("  20").next().unwrap_or(l).to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn an_exported_operation_imports_again_shows_the_same_and_replays() {
    let e = env(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
    ])
    .await;
    let (code, _, err) = e
        .rein(&["run", "--tools", "calculator", "What is 17*23?"])
        .await;
    assert_eq!(code, 0, "{err}");
    let id = op_id(&err).to_string();
    let (code, file, err) = e.rein(&["op", "export", &id]).await;
    assert_eq!(code, 0, "{err}");
    let path = e.dir.join("op.json");
    std::fs::write(&path, &file).unwrap();
    let (code, out, err) = e.rein(&["op", "import", &path.display().to_string()]).await;
    assert_eq!(code, 0, "{err}");
    let imported = out
        .trim()
        .strip_prefix("imported as operation ")
        .and_then(|rest| rest.get(..36))
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    assert_ne!(imported, id);
    let (_, original, _) = e.rein(&["op", "show", &id]).await;
    let (code, copy, err) = e.rein(&["op", "show", &imported]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        without_ids(&copy, &[&imported]),
        without_ids(&original, &[&id]),
        "the copy shows as the original"
    );

    e.server.route("gpt-4o-mini", vec![calc("c1", "17*23")]);
    let (code, out, err) = e
        .rein(&[
            "--json",
            "op",
            "replay",
            &imported,
            "--step",
            "1",
            "--models",
            "openai/gpt-4o-mini",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let replay: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(replay["answers"][0]["same_tool_calls"], true, "{replay:#}");

    std::fs::write(&path, r#"{"rein_operation": 9, "exported_at": "2026-12-05T00:00:00Z", "operation": "x", "owner": null, "rows": []}"#).unwrap();
    let (code, _, err) = e.rein(&["op", "import", &path.display().to_string()]).await;
    assert_ne!(code, 0);
    assert!(err.contains("operation format 9"), "{err}");
}
