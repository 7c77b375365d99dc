//! An allow-list from the command line: `rein run --approval allow-list --allow calculator`
//! runs the calculator unasked and asks for the rest, saying why (on stderr and in `rein op
//! show`); the allow-list holds when another process approves.

use super::*;

#[tokio::test]
async fn an_allow_list_from_the_command_line_runs_the_calculator_and_asks_for_the_rest() {
    let e = env(vec![
        Canned::openai_tools(&[
            (
                "c1",
                "calculator__evaluate",
                &serde_json::json!({"expression": "6*7"}).to_string(),
            ),
            (
                "l1",
                "ledger__append",
                &serde_json::json!({"entry": "paid"}).to_string(),
            ),
        ]),
        Canned::openai_text("42, and paid."),
    ])
    .await;
    let (code, _, err) = e
        .rein(&[
            "run",
            "--approval",
            "allow-list",
            "--allow",
            "calculator",
            "sum and pay",
        ])
        .await;
    assert_eq!(code, 3, "parks on the ledger: {err}");
    assert!(err.contains("pending l1 ledger/append"), "{err}");
    assert!(
        err.contains(
            "why: ledger/append is not on the allow-list [approval_mode:allow_list] (mode)"
        ),
        "{err}"
    );
    assert_eq!(e.ledger_lines(), 0);
    let id = op_id(&err).to_string();
    let (_, shown, _) = e.rein(&["op", "show", &id]).await;
    assert!(
        shown.contains("approval   allow-list, unasked: calculator"),
        "{shown}"
    );
    assert!(
        shown.contains("why: ledger/append is not on the allow-list"),
        "{shown}"
    );
    // Another process approves; the allow-list still holds (the calculator had run unasked).
    let (code, out, err) = e.rein(&["approve", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("42, and paid."), "{out}");
    assert_eq!(e.ledger_lines(), 1);
    let results: Vec<String> = e.server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| rein_model::testing::data_text(m["content"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(results, ["42", "appended paid"]);
}

#[tokio::test]
async fn tool_rules_from_the_command_line_are_read_before_anything_is_saved() {
    let e = env(vec![]).await;
    let (code, _, err) = e
        .rein(&["agent", "create", "ruled", "--tool-rule", "shell=sometimes"])
        .await;
    assert_ne!(code, 0);
    assert!(err.contains("rule for `shell`"), "{err}");
    let (code, _, err) = e
        .rein(&[
            "agent",
            "create",
            "ruled",
            "--tool-rule",
            r#"shell=[{"match":{"command":{"type":"regex","pattern":"("}},"policy":"always"}]"#,
        ])
        .await;
    assert_ne!(code, 0);
    assert!(err.contains("regex"), "{err}");
    let (_, out, _) = e.rein(&["agent", "list"]).await;
    assert!(!out.contains("ruled"), "nothing saved: {out}");
    let (code, _, err) = e
        .rein(&[
            "agent",
            "create",
            "ruled",
            "--tool-rule",
            "calculator=always",
            "--tool-rule",
            r#"shell=[{"match":{"command":"git push*"},"policy":"required"},{"policy":"never"}]"#,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = e.rein(&["--json", "agent", "show", "ruled"]).await;
    assert_eq!(code, 0, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        shown["config"]["tool_rules"]["calculator"], "always",
        "{out}"
    );
    assert_eq!(
        shown["config"]["tool_rules"]["shell"][0]["match"]["command"], "git push*",
        "{out}"
    );
}
