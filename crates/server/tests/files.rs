//! `/v1/files` and attachments: an upload's type comes from its content (a PNG named
//! `notes.txt` is an image), its bytes come back only to its owner and only as an attachment;
//! an upload over the server's limit is refused with 413 before anything is stored (said in
//! `Content-Length`, or found while reading a body that does not say); files reach the model
//! through `attachments` on `POST /v1/operations` and `file` / `image_url` parts of chat
//! completions; another user's file id and a deleted one are refused.

use crate::common::Api;
use axum::body::Body;
use axum::http::Request;
use rein_model::testing::Canned;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt as _;

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
const BOUNDARY: &str = "rein-test-boundary";

/// A multipart body with one `file` part named `name`, and a `purpose`.
fn form(name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nuser_data\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// `POST /v1/files` of `name` with `bytes` (saying its length unless `chunked`).
async fn upload(e: &Api, token: &str, name: &str, bytes: &[u8], chunked: bool) -> (u16, Value) {
    let body = form(name, bytes);
    let mut req = Request::post("/v1/files")
        .header("authorization", format!("Bearer {token}"))
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        );
    let body = if chunked {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            body.chunks(4096).map(|c| Ok(c.to_vec())).collect();
        Body::from_stream(futures::stream::iter(chunks))
    } else {
        req = req.header("content-length", body.len().to_string());
        Body::from(body)
    };
    let (status, _, value) = e.send(req.body(body).unwrap()).await;
    (status, value)
}

/// `GET path` answered with bytes: the status, the headers and the bytes.
async fn download(e: &Api, token: &str, path: &str) -> (u16, axum::http::HeaderMap, Vec<u8>) {
    let req = Request::get(path)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let resp = rein_server::router(Arc::clone(&e.app))
        .oneshot(req)
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, bytes.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_are_sniffed_kept_once_and_shown_only_to_their_owner() {
    let e = Api::new(vec![]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, png) = upload(&e, &alice, "notes.txt", PNG, false).await;
    assert_eq!(status, 200, "{png}");
    assert_eq!(png["object"], "file");
    assert_eq!(png["filename"], "notes.txt");
    assert_eq!(png["media_type"], "image/png", "sniffed, not named");
    assert_eq!(png["bytes"], PNG.len());
    let id = png["id"].as_str().unwrap().to_owned();
    let (status, again) = upload(&e, &alice, "copy.png", PNG, false).await;
    assert_eq!(status, 200, "{again}");
    assert_ne!(again["id"], png["id"]);
    assert_eq!(again["sha256"], png["sha256"]);

    let (status, list) = e.call("GET", "/v1/files", Some(&alice), None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    assert_eq!(list["data"][0]["id"], again["id"], "newest first");
    let (status, list) = e.call("GET", "/v1/files?limit=1", Some(&alice), None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["has_more"], true);

    let (status, headers, bytes) = download(&e, &alice, &format!("/v1/files/{id}/content")).await;
    assert_eq!(status, 200);
    assert_eq!(bytes, PNG);
    assert_eq!(headers["content-type"], "image/png");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"notes.txt\""),
        "{headers:?}"
    );
    // An uploaded page is never served as one.
    let (_, page) = upload(&e, &alice, "x.html", b"<script>alert(1)</script>", false).await;
    let (_, headers, _) = download(
        &e,
        &alice,
        &format!("/v1/files/{}/content", page["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(headers["content-type"], "application/octet-stream");

    // Bob sees none of it.
    for (method, path) in [
        ("GET", format!("/v1/files/{id}")),
        ("GET", format!("/v1/files/{id}/content")),
        ("DELETE", format!("/v1/files/{id}")),
    ] {
        let (status, _, _) = download(&e, &bob, &path).await;
        if method == "GET" {
            assert_eq!(status, 404, "{path}");
        } else {
            let (status, body) = e.call(method, &path, Some(&bob), None).await;
            assert_eq!(status, 404, "{body}");
        }
    }
    let (_, list) = e.call("GET", "/v1/files", Some(&bob), None).await;
    assert_eq!(list["data"], json!([]));

    // Deleting one upload keeps the other's bytes.
    let (status, deleted) = e
        .call("DELETE", &format!("/v1/files/{id}"), Some(&alice), None)
        .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(
        deleted,
        json!({"id": id, "object": "file", "deleted": true})
    );
    let (status, _, bytes) = download(
        &e,
        &alice,
        &format!("/v1/files/{}/content", again["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(bytes, PNG);
    let (status, _) = e
        .call("GET", &format!("/v1/files/{id}"), Some(&alice), None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_over_the_limit_is_refused_before_anything_is_stored() {
    let config = rein_server::ServerConfig {
        upload_limit: 10_000,
        ..Default::default()
    };
    let e = Api::with_config(vec![], config).await;
    let alice = e.token("alice").await;
    let big = vec![b'a'; 200_000];
    for chunked in [false, true] {
        let (status, body) = upload(&e, &alice, "big.txt", &big, chunked).await;
        assert_eq!(status, 413, "chunked {chunked}: {body}");
        assert_eq!(body["error"]["code"], "payload_too_large");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("at most 10000 bytes"),
            "{body}"
        );
    }
    let (status, ok) = upload(&e, &alice, "small.txt", &big[..10_000], true).await;
    assert_eq!(status, 200, "{ok}");
    let (_, list) = e.call("GET", "/v1/files", Some(&alice), None).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attached_files_reach_the_model_and_others_ids_or_deleted_ones_are_refused() {
    let e = Api::new(vec![
        Canned::openai_text("North leads."),
        Canned::openai_text("A chart."),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (_, csv) = upload(
        &e,
        &alice,
        "sales.csv",
        b"region,total\nnorth,30\nsouth,12\n",
        false,
    )
    .await;
    let (_, png) = upload(&e, &alice, "chart.txt", PNG, false).await;
    let (csv, png) = (
        csv["id"].as_str().unwrap().to_owned(),
        png["id"].as_str().unwrap().to_owned(),
    );
    let op = e
        .create_operation(
            &alice,
            json!({"input": "Which region leads?", "attachments": [csv, png]}),
        )
        .await;
    e.wait_status(&op, &alice, "done").await;
    let body = &e.model.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    let parts = user["content"].as_array().unwrap();
    assert_eq!(parts[0]["text"], "Which region leads?");
    assert!(
        parts[1]["text"].as_str().unwrap().starts_with(
            "<data source=\"file\">\n<file name=\"sales.csv\" type=\"text/csv\">\nregion,total"
        ),
        "{parts:?}"
    );
    assert_eq!(parts[2]["type"], "image_url");
    assert!(
        parts[2]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,"),
        "{parts:?}"
    );

    // Chat completions: an uploaded file by id, an image as a data URL.
    let (status, answer) = e
        .call(
            "POST",
            "/v1/chat/completions",
            Some(&alice),
            Some(json!({
                "model": "openai/gpt-4o-mini",
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "What is in these?"},
                    {"type": "file", "file": {"file_id": csv}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
                ]}]
            })),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let body = &e.model.requests()[1].body;
    let parts = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(parts[0]["text"], "What is in these?");
    assert!(
        parts[1]["text"].as_str().unwrap().contains("north,30"),
        "{parts:?}"
    );
    assert_eq!(
        parts[2]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );

    // Bob cannot attach alice's file; nobody can attach a deleted one.
    let (status, body) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "Read it.", "attachments": [csv]})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "file_missing");
    let (status, body) = e
        .call(
            "POST",
            "/v1/chat/completions",
            Some(&bob),
            Some(
                json!({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "Read it."}, {"type": "file", "file": {"file_id": csv}}
                ]}]}),
            ),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "file_missing");
    let (status, _) = e
        .call("DELETE", &format!("/v1/files/{csv}"), Some(&alice), None)
        .await;
    assert_eq!(status, 200);
    let (status, body) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&alice),
            Some(json!({"input": "Again.", "attachments": [csv]})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("no file {csv} of yours")),
        "{body}"
    );
    assert_eq!(
        e.model.requests().len(),
        2,
        "nothing refused reached the model"
    );
    // A part rein does not read is refused naming it.
    let (status, body) = e
        .call(
            "POST",
            "/v1/chat/completions",
            Some(&alice),
            Some(json!({"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Hear it."}, {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}
            ]}]})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("content part 1 (input_audio)"),
        "{body}"
    );
}
