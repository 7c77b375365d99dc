//! `rein usage` here: this machine's runs summed by model (and by user for the operator), the
//! totals equal to the operation records' own.

use super::*;

#[tokio::test]
async fn usage_sums_this_machines_runs_as_op_list_shows_them() {
    let e = env(vec![Canned::openai_text("one"), Canned::openai_text("two")]).await;
    assert_eq!(e.rein(&["run", "first"]).await.0, 0);
    assert_eq!(
        e.rein(&["run", "--model", "openai/gpt-4o", "second"])
            .await
            .0,
        0
    );
    let (_, listed, _) = e.rein(&["--json", "op", "list"]).await;
    let recorded: f64 = listed
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cost"]
                .as_f64()
                .unwrap()
        })
        .sum();
    let (code, out, err) = e.rein(&["usage", "--by", "model"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("model "), "a header: {out}");
    assert!(
        out.contains("openai/gpt-4o ") && out.contains("openai/gpt-4o-mini"),
        "{out}"
    );
    let (_, json, _) = e.rein(&["--json", "usage", "--by", "model"]).await;
    let report: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(report["total"]["operations"], 2);
    let cost = report["total"]["cost"].as_f64().unwrap();
    assert!((cost - recorded).abs() < 1e-9, "{cost} vs {recorded}");
    let (_, by_user, _) = e.rein(&["--json", "usage", "--by", "user"]).await;
    let report: serde_json::Value = serde_json::from_str(by_user.trim()).unwrap();
    assert_eq!(report["total"]["operations"], 2, "{report}");
    let (code, _, err) = e.rein(&["usage", "--since", "yesterday"]).await;
    assert_eq!(code, 2, "clap refuses a date it cannot read: {err}");
}
