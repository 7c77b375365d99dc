//! Providers users bring (`/v1/settings/providers`): a user's own key is the one their
//! operations send, another user's operations send theirs or the server's; no answer, event
//! or stored byte carries a key in the clear; what cannot be a key, a base URL or a provider
//! is refused, naming it; the server's key never goes to a base URL a user chose.

use crate::common::Api;
use rein_model::testing::Canned;
use rein_operation::own_models::OwnProviderKeys;
use rein_operation::secrets::SecretKey;
use rein_store::OwnProviders as _;
use serde_json::json;

const ALICE_KEY: &str = "sk-alice-7f3e9a1c5d2b8e4f";

fn authorization(r: &rein_model::testing::Recorded) -> String {
    r.header("authorization").to_owned()
}

async fn bring(
    e: &Api,
    token: &str,
    provider: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    e.call(
        "PUT",
        &format!("/v1/settings/providers/{provider}"),
        Some(token),
        Some(body),
    )
    .await
}

/// Alice's key reaches the model for her operations, Bob's operations use the server's; no
/// answer, event or database byte holds Alice's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_own_key_is_the_one_their_operations_send() {
    let e = Api::new(vec![
        Canned::openai_text("Mine."),
        Canned::openai_text("Server's."),
    ])
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, stored) = bring(&e, &alice, "openai", json!({"api_key": ALICE_KEY})).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["provider"], "openai");
    assert_eq!(stored["has_key"], true);

    let op = e.create_operation(&alice, json!({"input": "hi"})).await;
    e.wait_status(&op, &alice, "done").await;
    let theirs = e.create_operation(&bob, json!({"input": "hi"})).await;
    e.wait_status(&theirs, &bob, "done").await;
    let requests = e.model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(authorization(&requests[0]), format!("Bearer {ALICE_KEY}"));
    assert_eq!(authorization(&requests[1]), "Bearer sk-test");

    // Only Alice sees her providers; nobody sees the key.
    let (_, mine) = e
        .call("GET", "/v1/settings/providers", Some(&alice), None)
        .await;
    assert_eq!(mine.as_array().unwrap().len(), 1, "{mine}");
    let (_, bobs) = e
        .call("GET", "/v1/settings/providers", Some(&bob), None)
        .await;
    assert_eq!(bobs, json!([]));
    e.events(&op, &alice).await;
    e.call("GET", &format!("/v1/operations/{op}"), Some(&alice), None)
        .await;
    let answered = e.bodies.lock().unwrap().clone();
    assert!(!answered.is_empty());
    assert!(
        !contains(&answered, ALICE_KEY.as_bytes()),
        "an answer carried the key"
    );
    if !e.db_url().starts_with("postgres") {
        for file in [e.db_url(), format!("{}-wal", e.db_url())] {
            if let Ok(bytes) = std::fs::read(&file) {
                assert!(
                    !contains(&bytes, ALICE_KEY.as_bytes()),
                    "{file} holds the key"
                );
            }
        }
    }
    let sealed = e.app.store.sealed_keys().await.unwrap();
    assert_eq!(sealed.len(), 1);
    assert!(!sealed[0].key.sealed.contains(ALICE_KEY));

    // Forgotten, her operations use the server's again.
    let (status, _) = e
        .call(
            "DELETE",
            "/v1/settings/providers/openai",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let (status, body) = e
        .call(
            "DELETE",
            "/v1/settings/providers/openai",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
    e.model.push(Canned::openai_text("Server's again."));
    let again = e.create_operation(&alice, json!({"input": "hi"})).await;
    e.wait_status(&again, &alice, "done").await;
    assert_eq!(authorization(&e.model.requests()[2]), "Bearer sk-test");
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}

/// `POST /v1/operations` refused before anything runs, as a model this user cannot reach:
/// the message.
async fn refused_start(e: &Api, token: &str) -> String {
    let (status, refused) = e
        .call(
            "POST",
            "/v1/operations",
            Some(token),
            Some(json!({"input": "hi"})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "model_unavailable", "{refused}");
    refused["error"]["message"].as_str().unwrap().to_owned()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// With the server's keys not lent, a user without their own is refused before anything
/// runs, told how to store one; a user with theirs runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_lends_no_keys_runs_only_users_own() {
    let e = Api::with_own_provider_keys(
        vec![Canned::openai_text("Mine.")],
        OwnProviderKeys {
            secret: Some(SecretKey::generate().unwrap()),
            lend_keys: false,
            base_urls: false,
        },
    )
    .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let message = refused_start(&e, &bob).await;
    assert!(message.contains("lends none"), "{message}");
    assert!(
        message.contains("rein settings provider set openai"),
        "{message}"
    );

    // Base URLs are the admin's to allow.
    let (status, body) = bring(
        &e,
        &alice,
        "openai",
        json!({"api_key": ALICE_KEY, "base_url": "https://llm.example/v1"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("base URL"),
        "{body}"
    );

    let (status, body) = bring(&e, &alice, "openai", json!({"api_key": ALICE_KEY})).await;
    assert_eq!(status, 200, "{body}");
    let op = e.create_operation(&alice, json!({"input": "hi"})).await;
    e.wait_status(&op, &alice, "done").await;
    assert_eq!(
        authorization(&e.model.requests()[0]),
        format!("Bearer {ALICE_KEY}")
    );
}

/// A base URL of the user's own never receives the server's key: without their own key the
/// operation is refused, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_key_never_goes_to_a_users_base_url() {
    let e = Api::new(vec![]).await;
    let alice = e.token("alice").await;
    let (status, body) = bring(
        &e,
        &alice,
        "openai",
        json!({"base_url": "http://127.0.0.1:9/v1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["has_key"], false);
    let message = refused_start(&e, &alice).await;
    assert!(
        message.contains("not sent to a base URL you chose"),
        "{message}"
    );
    assert!(e.model.requests().is_empty());
}

/// What cannot be a key, a base URL or a provider is refused with what was wrong, and
/// nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_a_provider_setting_is_refused_naming_it() {
    let e = Api::new(vec![]).await;
    let alice = e.token("alice").await;
    let cases = [
        (
            "openai",
            json!({}),
            422,
            "give an API key, a base URL, or both",
        ),
        (
            "openai",
            json!({"api_key": "sk with space"}),
            422,
            "API key has spaces",
        ),
        (
            "openai",
            json!({"api_key": "sk\u{7}bell"}),
            422,
            "API key has spaces",
        ),
        (
            "openai",
            json!({"api_key": "x".repeat(4097)}),
            422,
            "longer than 4096",
        ),
        (
            "openai",
            json!({"base_url": "ftp://host/v1"}),
            422,
            "http:// or https://",
        ),
        (
            "openai",
            json!({"base_url": "https://user:pw@host/v1"}),
            422,
            "without credentials",
        ),
        ("openai", json!({"api_key": "k", "extra": 1}), 400, "extra"),
        (
            "Not_An_Id",
            json!({"api_key": "k"}),
            400,
            "not a provider id",
        ),
        (
            "no-such-provider",
            json!({"api_key": "k"}),
            422,
            "no-such-provider",
        ),
    ];
    for (provider, body, want, says) in cases {
        let (status, answer) = bring(&e, &alice, provider, body.clone()).await;
        assert_eq!(status, want, "{provider}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{provider} {body}: {message}");
    }
    // A provider of one's own is one with a base URL; `google` is stored as `gemini`.
    let (status, body) = bring(
        &e,
        &alice,
        "my-gateway",
        json!({"api_key": "k", "base_url": "https://gw.example/v1"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = bring(&e, &alice, "google", json!({"api_key": "k"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["provider"], "gemini");
    let (_, list) = e
        .call("GET", "/v1/settings/providers", Some(&alice), None)
        .await;
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["gemini", "my-gateway"]);
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}

/// A sealed key moved to another user's row does not open: that user's operation is refused
/// naming the provider, and the model is never called with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_key_moved_to_another_user_does_not_open() {
    use rein_store::Accounts;
    let e = Api::new(vec![]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, _) = bring(&e, &alice, "openai", json!({"api_key": ALICE_KEY})).await;
    assert_eq!(status, 200);
    let store = &e.app.store;
    let alice_id = store.user_by_name("alice").await.unwrap().unwrap().id;
    let bob_id = store.user_by_name("bob").await.unwrap().unwrap().id;
    let mut stolen = store.own_providers(&alice_id).await.unwrap().remove(0);
    stolen.updated_at = chrono::Utc::now();
    store.put_own_provider(&bob_id, &stolen).await.unwrap();
    let message = refused_start(&e, &bob).await;
    assert!(message.contains("does not open"), "{message}");
    assert!(!message.contains(ALICE_KEY));
    assert!(e.model.requests().is_empty());
}

/// Rotating the secret key reseals every stored key: the new key opens them, the old one no
/// longer does, and a rotation run again moves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_the_secret_key_reseals_every_stored_key() {
    let old = SecretKey::generate().unwrap();
    let e = Api::with_own_provider_keys(
        vec![],
        OwnProviderKeys {
            secret: Some(old.clone()),
            lend_keys: true,
            base_urls: true,
        },
    )
    .await;
    for user in ["alice", "bob"] {
        let token = e.token(user).await;
        let (status, _) = bring(
            &e,
            &token,
            "openai",
            json!({"api_key": format!("sk-{user}")}),
        )
        .await;
        assert_eq!(status, 200);
    }
    let new = SecretKey::generate().unwrap();
    let store = &*e.app.store;
    assert_eq!(
        rein_operation::own_models::rotate(store, &old, &new)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        rein_operation::own_models::rotate(store, &old, &new)
            .await
            .unwrap(),
        0
    );
    for s in store.sealed_keys().await.unwrap() {
        assert_eq!(s.key.key_id, new.id());
        let opened = new.open(&s.user_id, &s.place.label(), &s.key).unwrap();
        assert!(opened.starts_with("sk-"));
        assert!(old.open(&s.user_id, &s.place.label(), &s.key).is_err());
    }
    // A key sealed with neither refuses the whole rotation.
    let third = SecretKey::generate().unwrap();
    let e2 = rein_operation::own_models::rotate(store, &third, &SecretKey::generate().unwrap())
        .await
        .unwrap_err();
    assert!(e2.to_string().contains(new.id()), "{e2}");
}
