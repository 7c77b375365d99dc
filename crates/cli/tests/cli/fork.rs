//! `rein op fork`: a run, then a fork after its tool step with another model, here and
//! through a server (the parity run); a fork wider than the original is refused, naming the
//! tool.

use super::*;

#[tokio::test]
async fn rein_op_fork_runs_another_model_from_a_step_and_shows_where_it_came_from() {
    let e = env(vec![
        calc("c1", "17*23"),
        Canned::openai_text("17 × 23 = 391."),
        Canned::openai_text("Three hundred ninety-one."),
    ])
    .await;
    let (code, _, err) = e
        .rein(&["run", "--tools", "calculator", "What is 17*23?"])
        .await;
    assert_eq!(code, 0, "{err}");
    let id = op_id(&err);

    let (code, out, err) = e
        .rein(&[
            "op",
            "fork",
            &id.to_string(),
            "--at",
            "2",
            "--model",
            "openai/gpt-4o",
            "--system",
            "Answer in words.",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Three hundred ninety-one."), "{out}");
    let after = err
        .split(" as ")
        .nth(1)
        .unwrap_or_else(|| panic!("the fork's id in: {err}"));
    let fork: OperationId = after[..36].parse().unwrap();
    let requests = e.server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["model"], "gpt-4o");
    assert!(requests[2].system_text().contains("Answer in words."));
    assert_eq!(
        requests[2].tool_result("c1"),
        "391",
        "the fork starts from the state after the tool step"
    );

    let (code, shown, err) = e.rein(&["op", "show", &fork.to_string()]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        shown.contains(&format!("forked     from {id} after step 2")),
        "{shown}"
    );
    assert_consistent(&e.store().await, fork).await;

    let (code, _, err) = e
        .rein(&[
            "op",
            "fork",
            &id.to_string(),
            "--at",
            "2",
            "--tools",
            "calculator,shell",
        ])
        .await;
    assert_ne!(code, 0);
    assert!(err.contains("shell is not among them"), "{err}");
    let (code, _, err) = e.rein(&["op", "fork", &id.to_string(), "--at", "40"]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("operation {id} has no step 40")),
        "{err}"
    );
    assert_eq!(
        e.server.requests().len(),
        3,
        "no refused fork asked a model"
    );
}
