//! `rein eval`: a dataset of 20 cases run by two versions of an agent against scripted models
//! (a judge among them) gives the expected per-case outcomes; a run against an earlier one as
//! its baseline exits 5 on a regression and 0 without one; runs are kept and listed.

use super::*;

/// Cases `c01`…`c20`, each asking for its answer; `c05` and `c10` also judged.
fn dataset() -> String {
    (1..=20)
        .map(|i| {
            let mut assert = vec![
                serde_json::json!({"type": "contains", "value": format!("answer {i}")}),
                serde_json::json!({"type": "max_steps", "value": 5}),
            ];
            if i == 5 || i == 10 {
                assert.push(serde_json::json!({"type": "judge", "rubric": "States the answer plainly."}));
            }
            serde_json::json!({"id": format!("c{i:02}"), "input": format!("Question {i}"), "assert": assert}).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn verdict(pass: bool, why: &str) -> Canned {
    Canned::openai_text(&serde_json::json!({"pass": pass, "reasoning": why}).to_string())
}

#[tokio::test]
async fn an_eval_compares_two_versions_of_an_agent_and_a_baseline_catches_a_regression() {
    let e = env(vec![]).await;
    for (args, what) in [
        (
            vec!["agent", "create", "solver", "--system", "Version one."],
            "v1",
        ),
        (
            vec!["agent", "edit", "solver", "--system", "Version two."],
            "v2",
        ),
    ] {
        let (code, _, err) = e.rein(&args).await;
        assert_eq!(code, 0, "{what}: {err}");
    }
    let v1 = |n: usize| -> Vec<Canned> {
        (0..n)
            .flat_map(|_| (1..=20).map(|i| Canned::openai_text(&format!("The answer {i}."))))
            .collect()
    };
    // Version two forgets case 3.
    let v2 = |n: usize| -> Vec<Canned> {
        (0..n)
            .flat_map(|_| {
                (1..=20).map(|i| {
                    Canned::openai_text(&if i == 3 {
                        "No idea.".to_owned()
                    } else {
                        format!("The answer {i}.")
                    })
                })
            })
            .collect()
    };
    e.server.route("Version one.", v1(3));
    e.server.route("Version two.", v2(2));
    e.server.route(
        "strict evaluator",
        vec![
            // Run A (v1): c05, c10.
            verdict(true, "plain"),
            verdict(true, "plain"),
            // Run B (v1 then v2).
            verdict(true, "plain"),
            verdict(true, "plain"),
            verdict(true, "plain"),
            verdict(false, "hedges instead of answering"),
            // Run C (v2).
            verdict(true, "plain"),
            verdict(false, "hedges instead of answering"),
            // Run D (v1).
            verdict(true, "plain"),
            verdict(true, "plain"),
        ],
    );
    let data = e.dir.join("cases.jsonl");
    std::fs::write(&data, dataset()).unwrap();
    let data = data.display().to_string();

    // A: version 1 alone, kept as the baseline.
    let (code, out, err) = e
        .rein(&[
            "--json",
            "eval",
            "run",
            &data,
            "--agent",
            "solver@1",
            "--concurrency",
            "1",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let baseline = e.dir.join("baseline.json");
    std::fs::write(&baseline, out.trim()).unwrap();
    let a: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(a["summary"][0]["passed"], 20, "{a:#}");

    // B: both versions, one table.
    let (code, out, err) = e
        .rein(&[
            "eval",
            "run",
            &data,
            "--agent",
            "solver@1",
            "--agent",
            "solver@2",
            "--concurrency",
            "1",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let row = |agent: &str| {
        out.lines()
            .find(|l| l.starts_with(agent))
            .unwrap_or_else(|| panic!("{agent}: {out}"))
            .to_owned()
    };
    assert!(
        row("solver@1").contains("20/20") && row("solver@1").contains("100%"),
        "{out}"
    );
    assert!(
        row("solver@2").contains("18/20") && row("solver@2").contains("90%"),
        "{out}"
    );
    assert!(
        out.contains("✗ c03 (solver@2): contains: \"answer 3\" is not in the answer"),
        "{out}"
    );
    assert!(
        out.contains("✗ c10 (solver@2): judge: hedges instead of answering"),
        "the judge's reasoning is kept: {out}"
    );
    assert_eq!(out.matches('✗').count(), 2, "{out}");

    // C: version 2 against version 1's run: regressions, exit 5.
    let (code, _, err) = e
        .rein(&[
            "eval",
            "run",
            &data,
            "--agent",
            "solver@2",
            "--concurrency",
            "1",
            "--baseline",
            &baseline.display().to_string(),
            // Outcomes and cost are what this test scripts; time is the machine's.
            "--latency-floor-ms",
            "600000",
        ])
        .await;
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("regression: c03 (solver@2): passed with solver@1, fails now (contains)"),
        "{err}"
    );
    assert!(err.contains("regression: c10 (solver@2)"), "{err}");
    assert!(err.contains("2 regressions against"), "{err}");

    // D: version 1 again: nothing regressed.
    let (code, _, err) = e
        .rein(&[
            "eval",
            "run",
            &data,
            "--agent",
            "solver@1",
            "--concurrency",
            "1",
            "--baseline",
            &baseline.display().to_string(),
            // Outcomes and cost are what this test scripts; time is the machine's.
            "--latency-floor-ms",
            "600000",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no regression against"), "{err}");

    // Kept and listed; one shown again.
    let (code, out, _) = e.rein(&["eval", "list"]).await;
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 4, "{out}");
    let id = a["id"].as_str().unwrap();
    let (code, shown, _) = e.rein(&["--json", "eval", "show", id]).await;
    assert_eq!(code, 0);
    let shown: serde_json::Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["results"].as_array().unwrap().len(), 20);
    assert!(shown["results"][0]["operation"].is_string());

    // Bad input, named.
    std::fs::write(e.dir.join("bad.jsonl"), "{\"id\": \"x\"}\n").unwrap();
    let (code, _, err) = e
        .rein(&[
            "eval",
            "run",
            &e.dir.join("bad.jsonl").display().to_string(),
            "--agent",
            "solver",
        ])
        .await;
    assert_ne!(code, 0);
    assert!(
        err.contains("bad.jsonl: line 1: missing field `input`"),
        "{err}"
    );
    let (code, _, err) = e.rein(&["eval", "run", &data, "--agent", "solver@9"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("agent `solver` has no version 9"), "{err}");
}
