//! AG-UI (`/v1/ag-ui`) and the AI SDK's UI message stream (`/v1/ui/chat`) beyond what their
//! client libraries drive (rein-cli's `serve::front_ends`): a conversation that waits takes no
//! new message, resume entries must name what waits and say something rein can read, parts it
//! cannot read are refused naming them, another user's conversation is not found, a rejection
//! goes on, a question is an interrupt an option answers, and a chat's stream resumes after an
//! event of its log with only the rest.

use crate::common::{Api, calc};
use rein_model::testing::Canned;
use serde_json::{Value, json};
use std::time::Duration;

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

fn run(thread: &str, content: Value, extra: Value) -> Value {
    let mut input = json!({
        "threadId": thread, "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": content}],
        "forwardedProps": {"agent": "careful"},
    });
    if let (Some(i), Some(extra)) = (input.as_object_mut(), extra.as_object()) {
        i.extend(extra.clone());
    }
    input
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_ag_ui_conversation_is_resumed_only_by_what_it_waits_on() {
    let e = Api::new(Vec::new()).await;
    e.model.route(
        "ROLE-CAREFUL",
        vec![calc("k1", "2+2"), Canned::openai_text("Not run, then.")],
    );
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    e.create_agents(
        &alice,
        &[(
            "careful",
            json!({"system_role": "ROLE-CAREFUL", "tools": ["calculator"], "approval": "allow-list"}),
        )],
    )
    .await;
    let (status, headers, events) = e
        .stream(
            "POST",
            "/v1/ag-ui",
            &alice,
            Some(run("t1", json!("Add."), json!({}))),
        )
        .await;
    assert_eq!(status, 200, "{events:?}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(end["outcome"]["interrupts"][0]["id"], "k1", "{end}");

    // Another user's conversation is not theirs to look at or add to.
    let (status, body) = e
        .call(
            "POST",
            "/v1/ag-ui",
            Some(&bob),
            Some(run("t1", json!("Hi."), json!({}))),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    // It waits: a new message is a conflict naming why.
    let (status, body) = e
        .call(
            "POST",
            "/v1/ag-ui",
            Some(&alice),
            Some(run("t1", json!("More."), json!({}))),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("waits for a decision")
    );
    // A resume entry names what waits and says something readable.
    let resume = |entry: Value| run("t1", json!("Add."), json!({"resume": [entry]}));
    let (status, body) = e
        .call(
            "POST",
            "/v1/ag-ui",
            Some(&alice),
            Some(resume(json!({"interruptId": "nope", "status": "resolved"}))),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = e
        .call(
            "POST",
            "/v1/ag-ui",
            Some(&alice),
            Some(resume(
                json!({"interruptId": "k1", "status": "resolved", "payload": {"maybe": 1}}),
            )),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    // A part rein cannot read is refused, naming it, before anything runs.
    let (status, body) = e
        .call(
            "POST",
            "/v1/ag-ui",
            Some(&alice),
            Some(run(
                "t2",
                json!([{"type": "text", "text": "Listen."}, {"type": "audio", "source": {"type": "data", "value": "AAAA", "mimeType": "audio/wav"}}]),
                json!({}),
            )),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("content part 1 (audio)"),
        "{body}"
    );
    // Rejected: the run goes on without the call.
    let (status, _, events) = e
        .stream(
            "POST",
            "/v1/ag-ui",
            &alice,
            Some(resume(json!({"interruptId": "k1", "status": "cancelled", "payload": {"reason": "not now"}}))),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        events.last().unwrap()["outcome"]["type"],
        "success",
        "{events:?}"
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("no result: {events:#?}"));
    assert!(
        result["content"].as_str().unwrap().contains("not now"),
        "{result}"
    );
    assert!(
        !types(&events).contains(&"TOOL_CALL_START"),
        "the waiting call was shown by the last run: {events:?}"
    );
    assert_eq!(
        e.model.requests().len(),
        2,
        "nothing refused reached the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_stream_resumes_after_an_event_with_only_the_rest() {
    let e = Api::new(Vec::new()).await;
    e.model.route(
        "ROLE-SLOW",
        vec![
            calc("s1", "6*7"),
            // Long enough for the resume below to start while the answer is being written.
            Canned::openai_text("It is 42.").after(Duration::from_secs(5)),
        ],
    );
    let alice = e.token("alice").await;
    e.create_agents(
        &alice,
        &[(
            "slow",
            json!({"system_role": "ROLE-SLOW", "tools": ["calculator"], "approval": "auto-run"}),
        )],
    )
    .await;
    let body = json!({"id": "chat-1", "agent": "slow", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Multiply."}]}
    ]});
    let resumed = async {
        // The operation's tool result is committed; the answer is still being written.
        let op = rein_testkit::eventually("the chat's operation", || async {
            let (_, ops) = e.call("GET", "/v1/operations", Some(&alice), None).await;
            ops.as_array()?
                .iter()
                .find(|o| o["topic_id"] == "chat-1")
                .and_then(|o| o["id"].as_str())
                .map(str::to_owned)
        })
        .await;
        let after = rein_testkit::eventually("its tool result committed", || async {
            e.events(&op, &alice)
                .await
                .iter()
                .find(|ev| ev["type"] == "tool_result")
                .and_then(|ev| ev["seq"].as_u64())
        })
        .await;
        e.stream(
            "GET",
            &format!("/v1/ui/chat/chat-1/stream?after={after}"),
            &alice,
            None,
        )
        .await
    };
    let ((status, _, whole), (rest_status, headers, rest)) =
        tokio::join!(e.stream("POST", "/v1/ui/chat", &alice, Some(body)), resumed);
    assert_eq!(rest_status, 200);
    assert_eq!(headers["x-vercel-ai-ui-message-stream"], "v1");
    let rest_types = types(&rest);
    assert_eq!(rest_types.first(), Some(&"start"), "{rest:?}");
    assert!(!rest_types.contains(&"tool-input-start"), "{rest:?}");
    assert!(!rest_types.contains(&"tool-output-available"), "{rest:?}");
    assert!(
        rest.iter()
            .any(|c| c["type"] == "text-delta" && c["delta"] == "It is 42."),
        "{rest:?}"
    );
    assert_eq!(rest.last(), Some(&json!("[DONE]")), "{rest:?}");
    assert_eq!(status, 200);
    let whole_types = types(&whole);
    for t in [
        "start",
        "tool-input-start",
        "tool-input-available",
        "tool-output-available",
        "text-start",
        "text-delta",
        "text-end",
        "data-rein-usage",
        "finish",
    ] {
        assert_eq!(
            whole_types.iter().filter(|w| **w == t).count(),
            1,
            "{t} once: {whole:?}"
        );
    }
    // Nothing runs now: a reconnect finds nothing, a stop has nothing to stop.
    let (status, _) = e
        .call("GET", "/v1/ui/chat/chat-1/stream", Some(&alice), None)
        .await;
    assert_eq!(status, 204);
    let (status, body) = e
        .call("POST", "/v1/ui/chat/chat-1/stop", Some(&alice), None)
        .await;
    assert_eq!(status, 409, "{body}");
    let bob = e.token("bob").await;
    let (status, body) = e
        .call("GET", "/v1/ui/chat/chat-1/stream", Some(&bob), None)
        .await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ag_ui_question_is_an_interrupt_answered_by_the_next_run() {
    let question = json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    let e = Api::new(vec![
        Canned::openai_tools(&[("q1", "ask_user__ask", &question.to_string())]),
        Canned::openai_text("Holding the release."),
    ])
    .await;
    let alice = e.token("alice").await;
    let input = |extra: Value| {
        let mut i = json!({
            "threadId": "release", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "Ship it if I agree."}],
        });
        if let (Some(i), Some(extra)) = (i.as_object_mut(), extra.as_object()) {
            i.extend(extra.clone());
        }
        i
    };
    let (_, _, events) = e
        .stream("POST", "/v1/ag-ui", &alice, Some(input(json!({}))))
        .await;
    let interrupt = &events.last().unwrap()["outcome"]["interrupts"][0];
    assert_eq!(interrupt["id"], "q1", "{events:?}");
    assert_eq!(interrupt["reason"], "question");
    assert_eq!(interrupt["message"], "Deploy to production now?");
    assert_eq!(
        interrupt["responseSchema"]["properties"]["option"]["enum"],
        json!(["yes", "no"])
    );
    // An option the question does not have is refused; one it has answers it.
    let answer = |option: &str| {
        input(
            json!({"resume": [{"interruptId": "q1", "status": "resolved", "payload": {"option": option}}]}),
        )
    };
    let (status, body) = e
        .call("POST", "/v1/ag-ui", Some(&alice), Some(answer("maybe")))
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, _, events) = e
        .stream("POST", "/v1/ag-ui", &alice, Some(answer("no")))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        events.last().unwrap()["outcome"]["type"],
        "success",
        "{events:?}"
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("no result: {events:#?}"));
    assert_eq!(result["toolCallId"], "q1");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "TEXT_MESSAGE_CONTENT" && e["delta"] == "Holding the release."),
        "{events:?}"
    );
}
