//! Topics through the API: created, titled, renamed, searched, branched by edits and
//! regenerations, switched, deleted (with or without their operations), per user.

use crate::common::Api;
use rein_model::testing::Canned;
use serde_json::{Value, json};

/// Topics through the API: created empty (409 on a taken id, 422 for an agent the caller does
/// not have), titled by the first prompt, renamed, found by what their messages say; an edit and
/// a regeneration through `POST /v1/operations` are sibling branches in `GET …/tree`, switched
/// with `PUT …/active`; what does not fit is refused naming why; another user sees none of it;
/// deleting keeps the operations' records unless asked to delete them, and waits for running
/// operations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_are_created_searched_branched_and_deleted_through_the_api() {
    let e = Api::new(vec![
        Canned::openai_text("Paris."),
        Canned::openai_text("Paris, France."),
        Canned::openai_text("Rome."),
        Canned::openai_text_then_stall("Still going"),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let call = |method: &'static str, path: String, token: &String, body: Option<Value>| {
        let (e, token) = (&e, token.clone());
        async move { e.call(method, &path, Some(&token), body).await }
    };

    let (status, topic) = call(
        "POST",
        "/v1/topics".into(),
        &alice,
        Some(json!({"id": "trip"})),
    )
    .await;
    assert_eq!(status, 201, "{topic}");
    assert_eq!(topic["title_source"], "prompt");
    let (status, body) = call(
        "POST",
        "/v1/topics".into(),
        &alice,
        Some(json!({"id": "trip"})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("conflict"))
    );
    let (status, body) = call(
        "POST",
        "/v1/topics".into(),
        &alice,
        Some(json!({"agent": "nobody"})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("agent_missing"))
    );

    let op = e
        .create_operation(
            &alice,
            json!({"input": "Capital of France?", "topic": "trip"}),
        )
        .await;
    e.wait_status(&op, &alice, "done").await;
    let (_, tree) = call("GET", "/v1/topics/trip/tree".into(), &alice, None).await;
    assert_eq!(tree["topic"]["title"], "Capital of France?");
    let texts = |tree: &Value| -> Vec<String> {
        let ids: Vec<&str> = tree["active_path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        ids.iter()
            .map(|id| {
                let m = tree["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["id"] == *id)
                    .unwrap();
                m["content"][0]["text"].as_str().unwrap_or("").to_owned()
            })
            .collect()
    };
    assert_eq!(texts(&tree), ["Capital of France?", "Paris."]);
    let id_of = |tree: &Value, text: &str| -> String {
        tree["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["content"][0]["text"] == text)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (answer, question) = (id_of(&tree, "Paris."), id_of(&tree, "Capital of France?"));

    // What does not fit: named, nothing started.
    for (body, status, code) in [
        (json!({"topic": "trip"}), 422, "input_missing"),
        (
            json!({"topic": "trip", "regenerate": answer, "input": "again"}),
            422,
            "branch_does_not_fit",
        ),
        (
            json!({"topic": "trip", "edit": answer, "input": "x"}),
            422,
            "branch_does_not_fit",
        ),
        (
            json!({"topic": "trip", "edit": question, "regenerate": answer, "input": "x"}),
            422,
            "branch_does_not_fit",
        ),
        (json!({"regenerate": answer}), 422, "branch_does_not_fit"),
        (
            json!({"topic": "trip", "edit": "00000000-0000-4000-8000-000000000000", "input": "x"}),
            422,
            "message_missing",
        ),
    ] {
        let (got, reply) = call("POST", "/v1/operations".into(), &alice, Some(body.clone())).await;
        assert_eq!(
            (got, reply["error"]["code"].as_str()),
            (status, Some(code)),
            "{body} -> {reply}"
        );
    }

    let regen = e
        .create_operation(&alice, json!({"topic": "trip", "regenerate": answer}))
        .await;
    e.wait_status(&regen, &alice, "done").await;
    let edit = e
        .create_operation(
            &alice,
            json!({"topic": "trip", "edit": question, "input": "Capital of Italy?"}),
        )
        .await;
    e.wait_status(&edit, &alice, "done").await;
    let (_, tree) = call("GET", "/v1/topics/trip/tree".into(), &alice, None).await;
    assert_eq!(texts(&tree), ["Capital of Italy?", "Rome."]);
    assert_eq!(tree["branches"][0]["index"], 2);
    assert_eq!(
        tree["branches"][0]["alternatives"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (status, tree) = call(
        "PUT",
        "/v1/topics/trip/active".into(),
        &alice,
        Some(json!({"message": question})),
    )
    .await;
    assert_eq!(status, 200, "{tree}");
    assert_eq!(
        texts(&tree),
        ["Capital of France?", "Paris, France."],
        "the newest answer under it"
    );
    let (status, body) = call(
        "PUT",
        "/v1/topics/trip/active".into(),
        &alice,
        Some(json!({"message": "00000000-0000-4000-8000-000000000000"})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("message_missing"))
    );
    let requests = e.model.requests();
    let seen = |i: usize| requests[i].body["messages"].to_string();
    assert!(
        !seen(1).contains("Paris.") && seen(1).contains("Capital of France?"),
        "{}",
        seen(1)
    );
    assert!(
        !seen(2).contains("France") && seen(2).contains("Capital of Italy?"),
        "{}",
        seen(2)
    );

    // Rename and search; bob sees none of it.
    let (status, renamed) = call(
        "PATCH",
        "/v1/topics/trip".into(),
        &alice,
        Some(json!({"title": "  Capitals  "})),
    )
    .await;
    assert_eq!(
        (
            status,
            renamed["title"].as_str(),
            renamed["title_source"].as_str()
        ),
        (200, Some("Capitals"), Some("user"))
    );
    let (_, found) = call("GET", "/v1/topics?search=ITALY".into(), &alice, None).await;
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    let (_, found) = call("GET", "/v1/topics?search=content".into(), &alice, None).await;
    assert!(
        found.as_array().unwrap().is_empty(),
        "not the stored JSON: {found}"
    );
    for (method, path) in [
        ("GET", "/v1/topics/trip/tree"),
        ("PATCH", "/v1/topics/trip"),
        ("DELETE", "/v1/topics/trip"),
    ] {
        let body = (method == "PATCH").then(|| json!({"title": "mine"}));
        let (status, _) = call(method, path.into(), &bob, body).await;
        assert_eq!(status, 404, "{method} {path}");
    }
    let (_, found) = call("GET", "/v1/topics?search=Italy".into(), &bob, None).await;
    assert!(found.as_array().unwrap().is_empty());
    // A page at a time: after the first topic of the list, the rest; a cursor that is not
    // one of yours is refused, naming it.
    let (status, _) = call(
        "POST",
        "/v1/topics".into(),
        &alice,
        Some(json!({"id": "later"})),
    )
    .await;
    assert_eq!(status, 201);
    let (_, all) = call("GET", "/v1/topics".into(), &alice, None).await;
    let all = all.as_array().unwrap().clone();
    assert_eq!(all[0]["id"], "later", "{all:?}");
    assert!(all.len() >= 2, "{all:?}");
    let first = all[0]["id"].as_str().unwrap();
    let (status, rest) = call("GET", format!("/v1/topics?before={first}"), &alice, None).await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(rest.as_array().unwrap()[..], all[1..]);
    for cursor in [first, "nowhere"] {
        let (status, refused) =
            call("GET", format!("/v1/topics?before={cursor}"), &bob, None).await;
        assert_eq!(status, 404, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(cursor)),
            "{refused}"
        );
    }

    // A running operation holds the deletion; once done, the conversation goes and the
    // records stay (or go, when asked).
    let running = e
        .create_operation(&alice, json!({"input": "Keep going", "topic": "trip"}))
        .await;
    e.wait_status(&running, &alice, "running").await;
    let (status, body) = call("DELETE", "/v1/topics/trip".into(), &alice, None).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&running),
        "{body}"
    );
    let (status, _) = call(
        "POST",
        format!("/v1/operations/{running}/cancel"),
        &alice,
        None,
    )
    .await;
    assert_eq!(status, 202);
    e.wait_status(&running, &alice, "interrupted").await;
    let (status, deleted) = call("DELETE", "/v1/topics/trip".into(), &alice, None).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(
        (
            deleted["operations"].as_u64(),
            deleted["operation_records"].as_str()
        ),
        (Some(4), Some("keep"))
    );
    let (status, _) = call("GET", format!("/v1/operations/{op}"), &alice, None).await;
    assert_eq!(status, 200, "the record is kept");
    let (status, _) = call("GET", "/v1/topics/trip/tree".into(), &alice, None).await;
    assert_eq!(status, 404);

    let (_, other) = call(
        "POST",
        "/v1/topics".into(),
        &alice,
        Some(json!({"title": "Scratch"})),
    )
    .await;
    let other = other["id"].as_str().unwrap().to_owned();
    assert_eq!(e.model.requests().len(), 4);
    e.model.push(Canned::openai_text("Noted."));
    let note = e
        .create_operation(&alice, json!({"input": "Note this", "topic": other}))
        .await;
    e.wait_status(&note, &alice, "done").await;
    let (_, t) = call("GET", format!("/v1/topics/{other}/tree"), &alice, None).await;
    assert_eq!(t["topic"]["title"], "Scratch", "a chosen title stays");
    let (status, deleted) = call(
        "DELETE",
        format!("/v1/topics/{other}?operations=delete"),
        &alice,
        None,
    )
    .await;
    assert_eq!(
        (status, deleted["operation_records"].as_str()),
        (200, Some("delete"))
    );
    let (status, _) = call("GET", format!("/v1/operations/{note}"), &alice, None).await;
    assert_eq!(status, 404, "the record went too");
}
