//! Bad requests get the one error shape (`{"error": {"code", "message"}}`, a 4xx naming what
//! was wrong) and are never answered with a 5xx; the OpenAPI document lists every route.

use crate::common::Api;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_json_error_shape_and_never_a_500() {
    let e = Api::new(vec![]).await;
    let alice = e.token("alice").await;
    let raw = |body: String| {
        e.raw(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(("application/json", body)),
        )
    };
    let cases = [
        (
            "{not json".to_owned(),
            400,
            "invalid_request",
            "parse the request body as JSON",
        ),
        (
            json!({"inptu": "x"}).to_string(),
            400,
            "invalid_request",
            "unknown field `inptu`",
        ),
        (
            json!({"input": 5}).to_string(),
            400,
            "invalid_request",
            "input",
        ),
        (
            json!({"input": "x", "approval": "yolo"}).to_string(),
            400,
            "invalid_request",
            "approval `yolo`",
        ),
        (
            json!({"input": "  "}).to_string(),
            400,
            "invalid_request",
            "input is empty",
        ),
        (
            json!({"input": "x", "model": "nowhere/m"}).to_string(),
            422,
            "model_unavailable",
            "nowhere",
        ),
        (
            json!({"input": "x", "agent": "ghost"}).to_string(),
            422,
            "agent_missing",
            "no agent `ghost`",
        ),
        (
            json!({"input": "x".repeat(2 * 1024 * 1024)}).to_string(),
            413,
            "payload_too_large",
            "larger",
        ),
    ];
    for (body, status, code, says) in cases {
        let (got, v) = raw(body).await;
        assert_eq!(got, status, "{v}");
        assert_eq!(v["error"]["code"], code, "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message} should mention {says}");
    }
    let (status, body) = e
        .call("GET", "/v1/operations?status=bogus", Some(&alice), None)
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_request"))
    );
    let (status, body) = e.call("GET", "/v1/nowhere", Some(&alice), None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let (status, body) = e.call("DELETE", "/v1/operations", Some(&alice), None).await;
    assert_eq!(status, 405, "{body}");
    // Ids are checked by their format, and every refusal is in the one error shape: a path that
    // is not UTF-8 included (axum's own rejection would be text/plain).
    for path in [
        "/v1/operations/not-an-id",
        "/v1/operations/%FF",
        "/v1/operations/%FF/events",
        "/v1/tasks/nope",
        "/v1/tasks/task_0123456789abcdef0123456789ABCDEF",
        "/v1/agents/bad%20name",
        "/v1/topics/a%00b/messages",
    ] {
        let (status, body) = e.call("GET", path, Some(&alice), None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_request")),
            "{path}: {body}"
        );
    }
    // A cursor past what sequence numbers can be, and a topic id of the wrong shape, are
    // refused before anything is looked up (found by the API fuzz gate: it was a 200).
    for path in [
        format!(
            "/v1/operations/{}/events?after=9223372036854775808",
            rein_core::OperationId::new()
        ),
        "/v1/operations?topic=no%20spaces".to_owned(),
    ] {
        let (status, body) = e.call("GET", &path, Some(&alice), None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_request")),
            "{path}: {body}"
        );
    }
    // An over-long request target is a 414 in the same shape.
    let (status, body) = e
        .call(
            "GET",
            &format!("/v1/operations?agent={}", "a".repeat(20_000)),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (414, Some("uri_too_long")),
        "{body}"
    );
    let (status, body) = e
        .call(
            "GET",
            &format!("/v1/operations/{}", rein_core::OperationId::new()),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    // A caller-chosen topic id is refused before anything is written: empty, NUL, huge.
    for topic in [String::new(), "a\u{0}b".to_owned(), "t".repeat(200_000)] {
        let (status, body) = e
            .call(
                "POST",
                "/v1/operations",
                Some(&alice),
                Some(json!({"input": "hi", "topic": topic})),
            )
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("topic id") && m.len() < 300),
            "{body}"
        );
    }
    let (_, listed) = e.call("GET", "/v1/operations", Some(&alice), None).await;
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(0),
        "nothing was written"
    );
    // PostgreSQL refuses U+0000 in text: a schema-valid request that holds one is accepted,
    // the character shown as U+2400 in what is stored, on both backends.
    let (status, created) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "a\u{0}b"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let topic = created["topic_id"].as_str().unwrap();
    let (status, messages) = e
        .call(
            "GET",
            &format!("/v1/topics/{topic}/messages"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 200, "{messages}");
    assert!(messages.to_string().contains("a\u{2400}b"), "{messages}");
    // Task create refuses the fields only an edit applies: its document does not have them.
    let (status, body) = e
        .call(
            "POST",
            "/v1/tasks",
            Some(&alice),
            Some(json!({"title": "t", "instruction": "i", "review": "approved"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_request")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field `review`")),
        "{body}"
    );
    // A run's settings sit beside the operation's own fields; an unknown one is refused too.
    let (status, body) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "hi", "max_step": 3})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field `max_step`") && m.contains("`max_steps`")),
        "{body}"
    );
    let (status, doc) = e.call("GET", "/v1/openapi.json", None, None).await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.0.3");
    for path in [
        "/v1/operations",
        "/v1/operations/{id}/events",
        "/v1/agents/{name}",
        "/v1/tasks",
        "/v1/tasks/{id}/next",
        "/v1/topics/{id}/messages",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
    assert!(
        doc["components"]["schemas"]["CreateOperation"]["properties"]["input"].is_object(),
        "request schemas come from the code"
    );
    // Constraints the server enforces are declared: enums, formats, item counts, the SSE type.
    let list = &doc["paths"]["/v1/operations"]["get"]["parameters"];
    let status = list
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "status"))
        .expect("status parameter");
    assert_eq!(
        status["schema"]["anyOf"][0]["$ref"], "#/components/schemas/Status",
        "{status}"
    );
    assert!(
        doc["components"]["schemas"]["Status"]
            .to_string()
            .contains("\"waiting_for_human\""),
        "the status filter is an enum"
    );
    assert_eq!(
        doc["paths"]["/v1/operations/{id}"]["get"]["parameters"][0]["schema"]["format"],
        "uuid"
    );
    assert_eq!(
        doc["components"]["schemas"]["Decisions"]["properties"]["decisions"]["minItems"],
        1
    );
    assert!(
        doc["paths"]["/v1/operations/{id}/events"]["get"]["responses"]["200"]["content"]
            ["text/event-stream"]["schema"]["properties"]["data"]["contentSchema"]["properties"]
            ["seq"]
            .is_object()
    );
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            assert_eq!(
                op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error",
                "{method} {path} declares the error shape"
            );
        }
    }
    assert_eq!(e.server_errors(), [], "no request was answered with a 5xx");
}
