//! `rein op replay`: a step's model call compared across models as a table and as JSON, and a
//! trajectory replayed by another model up to where it diverges; here and through a server.

use super::*;

#[tokio::test]
async fn rein_op_replay_compares_models_on_a_step_and_finds_where_a_chain_diverges() {
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
    e.server.route("gpt-4o-mini", vec![calc("c1", "17*23")]);
    e.server.route(
        "openai/gpt-4o",
        vec![Canned::openai_text("About 400.").with_usage(70, 9)],
    );
    let (code, out, err) = e
        .rein(&[
            "op",
            "replay",
            &id,
            "--step",
            "1",
            "--models",
            "openai/gpt-4o-mini,openai/gpt-4o",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let line = |start: &str, run: &str| {
        out.lines()
            .find(|l| l.starts_with(start) && l[28..].trim_start().starts_with(run))
            .unwrap_or_else(|| panic!("a {start} row, run {run}:\n{out}"))
            .to_owned()
    };
    let was = line("openai/gpt-4o-mini", "was");
    assert!(was.contains("→ calculator/evaluate"), "{out}");
    let mini = line("openai/gpt-4o-mini", "1");
    assert!(mini.contains(" same "), "{out}");
    let four = line("openai/gpt-4o ", "1");
    assert!(
        four.contains("70/9") && four.contains("other") && four.contains("About 400."),
        "{out}"
    );

    e.server.route(
        "openai/gpt-4o",
        // The first call as the original's; then another tool instead of the answer.
        vec![calc("k", "17*23"), calc("k2", "391*1")],
    );
    let (code, out, err) = e
        .rein(&[
            "--json",
            "op",
            "replay",
            &id,
            "--chain",
            "--model",
            "openai/gpt-4o",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let chain: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(chain["diverged_at"], 3, "{chain:#}");
    assert_eq!(chain["steps"][0]["answers"][0]["same_tool_calls"], true);

    let (code, _, err) = e
        .rein(&[
            "op",
            "replay",
            &id,
            "--step",
            "2",
            "--models",
            "openai/gpt-4o",
        ])
        .await;
    assert_ne!(code, 0);
    assert!(err.contains("not a model call"), "{err}");
}
