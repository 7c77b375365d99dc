//! A run's settings in `POST /v1/operations`: every setting an agent is made of, beside the
//! operation's own fields, over the agent's.

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::json;

/// The request's system role and tool list reach the model call, over the agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_settings_given_in_the_request_are_the_runs() {
    let e = Api::new(vec![Canned::openai_text("Done.")]).await;
    let token = e.token("alice").await;
    e.create_agents(
        &token,
        &[(
            "helper",
            json!({"system_role": "ROLE-AGENT", "tools": ["calculator", "todo"]}),
        )],
    )
    .await;
    let op = e
        .create_operation(
            &token,
            json!({
                "input": "hi",
                "agent": "helper",
                "system_role": "ROLE-REQUEST",
                "tools": ["calculator"],
            }),
        )
        .await;
    e.wait_status(&op, &token, "done").await;
    let requests = e.model.requests();
    let system = requests[0].system_text();
    assert!(system.contains("ROLE-REQUEST"), "{system}");
    assert!(!system.contains("ROLE-AGENT"), "{system}");
    let offered = requests[0].offered_tools();
    assert!(
        offered.iter().all(|t| t.starts_with("calculator")),
        "{offered:?}"
    );
}
