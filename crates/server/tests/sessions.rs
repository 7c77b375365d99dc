//! Signing in by name and password: a session cookie (HttpOnly, SameSite=Lax, Secure behind a
//! TLS proxy), its CSRF token required on every change, failed attempts limited per name, signing
//! out, admins ending sessions, disabled users and changed passwords ending them; and API
//! tokens that expire or carry scopes.

use crate::common::Api;
use axum::body::Body;
use axum::http::Request;
use rein_store::{Accounts, Sessions as _, UserRole};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// A user `name` with `password` (and an API token, returned).
async fn with_password(e: &Api, name: &str, password: &str) -> String {
    let token = e.token(name).await;
    let user = e.app.store.user_by_name(name).await.unwrap().unwrap();
    let phc = rein_server::signin::hash_password(password).unwrap();
    e.app
        .store
        .set_password(&user.id, Some(&phc))
        .await
        .unwrap();
    token
}

/// `method path` as a browser with `cookie` (and `csrf` when given) sends it.
async fn browser(
    e: &Api,
    method: &str,
    path: &str,
    cookie: &str,
    csrf: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("cookie", format!("theme=dark; {cookie}"));
    if let Some(c) = csrf {
        req = req.header("x-csrf-token", c);
    }
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Body::from(b.to_string())
        }
        None => Body::empty(),
    };
    let (status, _, value) = e.send(req.body(body).unwrap()).await;
    (status, value)
}

/// Sign in: the status, the `Set-Cookie` header's `name=value` and whole text, the answer.
async fn sign_in(e: &Api, name: &str, password: &str, tls: bool) -> (u16, String, String, Value) {
    let mut req = Request::builder()
        .method("POST")
        .uri("/v1/sessions")
        .header("content-type", "application/json")
        .header("user-agent", "Chromium test");
    if tls {
        req = req.header("x-forwarded-proto", "https");
    }
    let body = json!({"name": name, "password": password}).to_string();
    let (status, headers, value) = e.send(req.body(Body::from(body)).unwrap()).await;
    let set = headers
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let pair = set.split(';').next().unwrap_or_default().to_owned();
    (status, pair, set, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_signs_in_changes_only_with_its_csrf_token_and_signs_out() {
    let e = Api::new(Vec::new()).await;
    with_password(&e, "ann", "correct horse battery").await;

    let (status, cookie, set, session) = sign_in(&e, "ann", "correct horse battery", false).await;
    assert_eq!(status, 201, "{session}");
    assert!(cookie.starts_with("rein_session=rein_s_"), "{set}");
    for part in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=1209600"] {
        assert!(set.contains(part), "{part} missing: {set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert_eq!(session["user"]["name"], "ann");
    let csrf = session["csrf"].as_str().unwrap().to_owned();

    // Reading needs only the cookie; the page reloaded asks for its CSRF token again.
    let (status, me) = browser(&e, "GET", "/v1/me", &cookie, None, None).await;
    assert_eq!((status, me["name"].as_str()), (200, Some("ann")));
    let (status, again) = browser(&e, "GET", "/v1/session", &cookie, None, None).await;
    assert_eq!((status, again["csrf"].as_str()), (200, Some(csrf.as_str())));

    // A change without the token, or with another, is refused and changes nothing.
    let agent = json!({"name": "helper", "config": {"model": "openai/gpt-4o-mini"}});
    for given in [None, Some("0".repeat(64).as_str())] {
        let (status, answer) = browser(
            &e,
            "POST",
            "/v1/agents",
            &cookie,
            given,
            Some(agent.clone()),
        )
        .await;
        assert_eq!(status, 403, "{answer}");
        assert_eq!(answer["error"]["code"], "csrf_token_invalid");
    }
    let (_, agents) = browser(&e, "GET", "/v1/agents", &cookie, None, None).await;
    assert_eq!(agents, json!([]), "nothing was made");
    let (status, answer) =
        browser(&e, "POST", "/v1/agents", &cookie, Some(&csrf), Some(agent)).await;
    assert_eq!(status, 201, "{answer}");

    // Another session's token does not do for this one.
    let (_, other_cookie, _, other) = sign_in(&e, "ann", "correct horse battery", false).await;
    assert_ne!(other["csrf"], session["csrf"]);
    let (status, _) = browser(
        &e,
        "DELETE",
        "/v1/agents/helper",
        &other_cookie,
        Some(&csrf),
        None,
    )
    .await;
    assert_eq!(status, 403);

    // Signing out ends this session (the cookie is removed), not the other one.
    let req = Request::builder()
        .method("DELETE")
        .uri("/v1/session")
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .body(Body::empty())
        .unwrap();
    let (status, headers, _) = e.send(req).await;
    assert_eq!(status, 204);
    let cleared = headers.get("set-cookie").unwrap().to_str().unwrap();
    assert!(
        cleared.starts_with("rein_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    let (status, answer) = browser(&e, "GET", "/v1/me", &cookie, None, None).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (401, Some("unauthorized"))
    );
    let (status, _) = browser(&e, "GET", "/v1/me", &other_cookie, None, None).await;
    assert_eq!(status, 200);

    // A token request has no session to show or end.
    let token = e.token("ann").await;
    let (status, _) = e.call("GET", "/v1/session", Some(&token), None).await;
    assert_eq!(status, 404);

    // Behind a TLS proxy the cookie is Secure.
    let (_, _, set, _) = sign_in(&e, "ann", "correct horse battery", true).await;
    assert!(set.contains("; Secure"), "{set}");
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_are_limited_per_name_and_say_nothing_of_which_names_exist() {
    let e = Api::new(Vec::new()).await;
    with_password(&e, "ann", "correct horse battery").await;
    with_password(&e, "bob", "bobs own password").await;
    e.token("nopass").await;

    // A wrong password, an unknown name, a user without a password: one answer.
    let mut answers = Vec::new();
    for (name, password) in [
        ("ann", "wrong password"),
        ("nobody", "whatever it is"),
        ("nopass", "whatever it is"),
    ] {
        let (status, cookie, _, answer) = sign_in(&e, name, password, false).await;
        assert_eq!((status, cookie.as_str()), (401, ""), "{name}: {answer}");
        answers.push(answer["error"]["message"].clone());
    }
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    // A name too long to be anyone's gets the same answer, and is not remembered.
    let long = "n".repeat(100_000);
    for _ in 0..6 {
        let (status, _, _, answer) = sign_in(&e, &long, "whatever it is", false).await;
        assert_eq!(status, 401, "{answer}");
        assert_eq!(answer["error"]["message"], answers[0]);
    }

    // Five failures of a name (any case) lock it, even for the right password.
    for _ in 0..4 {
        assert_eq!(sign_in(&e, "ANN", "wrong again", false).await.0, 401);
    }
    let req = ann_signs_in();
    let (status, headers, answer) = e.send(req).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (429, Some("too_many_attempts")),
        "{answer}"
    );
    let wait: u64 = headers
        .get("retry-after")
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=900).contains(&wait), "{wait}");

    // Another name is not locked.
    assert_eq!(sign_in(&e, "bob", "bobs own password", false).await.0, 201);
    // Another server on the same database counts the same failures: ann is locked there too.
    let replica = std::sync::Arc::new(rein_server::App::new(
        std::sync::Arc::clone(&e.app.store),
        std::sync::Arc::clone(&e.app.runner),
        std::sync::Arc::new(rein_server::Hub::default()),
        rein_server::AuthMode::Tokens,
        rein_server::ServerConfig::default(),
    ));
    let req = ann_signs_in();
    let there = rein_server::router(replica).oneshot(req).await.unwrap();
    assert_eq!(there.status(), 429, "the replica sees the five failures");
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}

/// `POST /v1/sessions` as ann with her right password.
fn ann_signs_in() -> Request<Body> {
    Request::builder()
        .method("POST")
        .uri("/v1/sessions")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"name": "ann", "password": "correct horse battery"}).to_string(),
        ))
        .unwrap()
}

/// The lock's arithmetic over the store: five failures within the window lock a name (any
/// case) until the oldest leaves it, a success forgets them, and old failures are let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_lock_a_name_for_the_window_then_age_out() {
    use rein_server::signin::{
        FAILURE_WINDOW, MAX_FAILURES, count_failure, forget_failures, locked_for,
    };
    let e = Api::new(Vec::new()).await;
    let store = &*e.app.store;
    // Whole microseconds: what the store keeps.
    let t0 =
        chrono::DateTime::from_timestamp_micros(chrono::Utc::now().timestamp_micros()).unwrap();
    let window = chrono::Duration::from_std(FAILURE_WINDOW).unwrap();
    for i in 0..MAX_FAILURES {
        assert_eq!(
            locked_for(store, "Ann", t0).await.unwrap(),
            None,
            "attempt {i}"
        );
        count_failure(store, "Ann", t0).await.unwrap();
    }
    let minute = chrono::Duration::minutes(1);
    let wait = locked_for(store, "ann", t0 + minute)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(wait, (window - minute).to_std().unwrap());
    assert_eq!(
        locked_for(store, "bob", t0).await.unwrap(),
        None,
        "another name"
    );
    assert_eq!(
        locked_for(store, "ann", t0 + window + minute)
            .await
            .unwrap(),
        None,
        "aged out"
    );
    // A failure long after lets the old ones go.
    count_failure(store, "carl", t0 + window * 2).await.unwrap();
    assert_eq!(
        store
            .sign_in_failures("ann", t0 - window)
            .await
            .unwrap()
            .count,
        0,
        "the old rows are gone"
    );
    for _ in 0..MAX_FAILURES {
        count_failure(store, "dora", t0).await.unwrap();
    }
    forget_failures(store, "DORA").await.unwrap();
    assert_eq!(
        locked_for(store, "dora", t0).await.unwrap(),
        None,
        "a success forgets"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_when_an_admin_ends_them_the_user_is_disabled_or_the_password_changes() {
    let e = Api::new(Vec::new()).await;
    let root = with_password(&e, "root", "the admins password").await;
    let root_id = e.app.store.user_by_name("root").await.unwrap().unwrap().id;
    e.app
        .store
        .set_role(&root_id, UserRole::Admin)
        .await
        .unwrap();
    let bob_token = with_password(&e, "bob", "bobs own password").await;

    let (_, first, _, _) = sign_in(&e, "bob", "bobs own password", false).await;
    let (_, second, _, _) = sign_in(&e, "bob", "bobs own password", false).await;
    let (status, list) = e
        .call("GET", "/v1/users/bob/sessions", Some(&root), None)
        .await;
    assert_eq!(status, 200);
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["client"], "Chromium test");
    assert!(!list.to_string().contains("rein_s_"), "no secrets: {list}");
    let (status, _) = e
        .call("GET", "/v1/users/bob/sessions", Some(&bob_token), None)
        .await;
    assert_eq!(status, 404, "a member sees no one's sessions");

    let (status, ended) = e
        .call("DELETE", "/v1/users/bob/sessions", Some(&root), None)
        .await;
    assert_eq!((status, ended["ended"].as_u64()), (200, Some(2)));
    for cookie in [&first, &second] {
        assert_eq!(
            browser(&e, "GET", "/v1/me", cookie, None, None).await.0,
            401
        );
    }

    // Disabled, a user's sessions stop; enabled, they work again.
    let (_, third, _, session) = sign_in(&e, "bob", "bobs own password", false).await;
    e.call(
        "PATCH",
        "/v1/users/bob",
        Some(&root),
        Some(json!({"disabled": true})),
    )
    .await;
    assert_eq!(
        browser(&e, "GET", "/v1/me", &third, None, None).await.0,
        401
    );
    let (status, _, _, _) = sign_in(&e, "bob", "bobs own password", false).await;
    assert_eq!(status, 401, "a disabled user cannot sign in");
    e.call(
        "PATCH",
        "/v1/users/bob",
        Some(&root),
        Some(json!({"disabled": false})),
    )
    .await;
    assert_eq!(
        browser(&e, "GET", "/v1/me", &third, None, None).await.0,
        200
    );

    // Changing your own password needs the current one; then your sessions end.
    let csrf = session["csrf"].as_str().unwrap();
    let change = |current: &str| json!({"password": "a brand new one", "current": current});
    let (status, answer) = browser(
        &e,
        "PUT",
        "/v1/users/bob/password",
        &third,
        Some(csrf),
        Some(change("not it")),
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("wrong_password")),
        "{answer}"
    );
    let (status, answer) = browser(
        &e,
        "PUT",
        "/v1/users/bob/password",
        &third,
        Some(csrf),
        Some(json!({"password": "short", "current": "bobs own password"})),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = browser(
        &e,
        "PUT",
        "/v1/users/bob/password",
        &third,
        Some(csrf),
        Some(change(&"0".repeat(257))),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer.to_string().contains("current"), "{answer}");
    let (status, answer) = browser(
        &e,
        "PUT",
        "/v1/users/bob/password",
        &third,
        Some(csrf),
        Some(change("bobs own password")),
    )
    .await;
    assert_eq!(status, 204, "{answer}");
    assert_eq!(
        browser(&e, "GET", "/v1/me", &third, None, None).await.0,
        401
    );
    assert_eq!(sign_in(&e, "bob", "bobs own password", false).await.0, 401);
    assert_eq!(sign_in(&e, "bob", "a brand new one", false).await.0, 201);
    // Nobody else's: a member may not set another's; an admin sets anyone's without it.
    let (status, _) = e
        .call(
            "PUT",
            "/v1/users/root/password",
            Some(&bob_token),
            Some(json!({"password": "taken over now"})),
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = e
        .call(
            "PUT",
            "/v1/users/bob/password",
            Some(&root),
            Some(json!({"password": "reset by root"})),
        )
        .await;
    assert_eq!(status, 204);
    assert_eq!(sign_in(&e, "bob", "reset by root", false).await.0, 201);
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_expire_and_carry_scopes() {
    let e = Api::new(Vec::new()).await;
    let root = e.admin_token("root").await;
    e.token("bob").await;
    let make = |body: Value| async {
        let (status, made) = e
            .call("POST", "/v1/users/bob/tokens", Some(&root), Some(body))
            .await;
        assert_eq!(status, 201, "{made}");
        (
            made["token"].as_str().unwrap().to_owned(),
            made["id"].as_str().unwrap().to_owned(),
        )
    };

    // A read token reads, and changes nothing; it may still sign itself out.
    let (read, _) = make(json!({"scopes": ["read"]})).await;
    assert_eq!(e.call("GET", "/v1/agents", Some(&read), None).await.0, 200);
    let (status, answer) = e
        .call(
            "POST",
            "/v1/agents",
            Some(&read),
            Some(json!({"name": "helper", "config": {}})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("insufficient_scope")),
        "{answer}"
    );
    let (status, answer) = e
        .call(
            "POST",
            "/v1/operations",
            Some(&read),
            Some(json!({"input": "hi"})),
        )
        .await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(
        e.call("DELETE", "/v1/tokens/current", Some(&read), None)
            .await
            .0,
        204
    );
    assert_eq!(e.call("GET", "/v1/agents", Some(&read), None).await.0, 401);

    // An admin's token without `admin` acts as a member.
    let (status, made) = e
        .call(
            "POST",
            "/v1/users/root/tokens",
            Some(&root),
            Some(json!({"scopes": ["run"]})),
        )
        .await;
    assert_eq!(status, 201);
    let run_only = made["token"].as_str().unwrap();
    let (status, me) = e.call("GET", "/v1/me", Some(run_only), None).await;
    assert_eq!((status, me["role"].as_str()), (200, Some("member")));
    assert_eq!(
        e.call("GET", "/v1/users", Some(run_only), None).await.0,
        404
    );

    // Listed with their scopes and expiry; bad requests name what is wrong.
    let soon = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let (_, id) = make(json!({"expires_at": soon, "scopes": ["read", "run"]})).await;
    let (_, list) = e
        .call("GET", "/v1/users/bob/tokens", Some(&root), None)
        .await;
    let listed = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(listed["scopes"], json!(["read", "run"]));
    assert!(listed["expires_at"].as_str().is_some(), "{listed}");
    let past = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    for (body, refused, names) in [
        (json!({"expires_at": past}), 422, "expires_at"),
        (json!({"scopes": []}), 400, "scopes"),
        (json!({"scopes": ["root"]}), 400, "scopes"),
        (
            json!({"device": "laptop", "scopes": ["read"]}),
            422,
            "device token",
        ),
    ] {
        let (status, answer) = e
            .call(
                "POST",
                "/v1/users/bob/tokens",
                Some(&root),
                Some(body.clone()),
            )
            .await;
        assert_eq!(status, refused, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{body}: {message}");
    }

    // An expired token authenticates nothing.
    let bob = e.app.store.user_by_name("bob").await.unwrap().unwrap();
    let token = rein_server::new_token().unwrap();
    let spec = rein_store::TokenSpec {
        expires_at: Some(chrono::Utc::now() - chrono::Duration::seconds(1)),
        ..Default::default()
    };
    e.app
        .store
        .add_token(&bob.id, &rein_server::hash_token(&token), &spec)
        .await
        .unwrap();
    let (status, answer) = e.call("GET", "/v1/me", Some(&token), None).await;
    assert_eq!(status, 401, "{answer}");
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}

/// A member manages their own tokens: made from a signed-in browser (shown once, usable),
/// never by a token (even one of every scope, which could otherwise outlive itself), listed
/// and revoked by any credential of theirs; another user's token is not theirs to revoke.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_makes_tokens_in_the_browser_and_lists_and_revokes_their_own() {
    let e = Api::new(Vec::new()).await;
    let ann_token = with_password(&e, "ann", "correct horse battery").await;
    let bob_token = e.token("bob").await;
    let (_, cookie, _, session) = sign_in(&e, "ann", "correct horse battery", false).await;
    let csrf = session["csrf"].as_str().unwrap().to_owned();

    // A token cannot make a token: refused, nothing made.
    let (_, before) = e.call("GET", "/v1/me/tokens", Some(&ann_token), None).await;
    let (status, answer) = e
        .call(
            "POST",
            "/v1/me/tokens",
            Some(&ann_token),
            Some(json!({"label": "ci"})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("insufficient_scope")),
        "{answer}"
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sign in in a browser"),
        "{answer}"
    );
    let (_, after) = e.call("GET", "/v1/me/tokens", Some(&ann_token), None).await;
    assert_eq!(before, after, "nothing was made");

    // The browser makes one (CSRF required), shown once; it authenticates as ann, read only.
    let body = json!({"label": "ci", "scopes": ["read"]});
    let (status, _) = browser(
        &e,
        "POST",
        "/v1/me/tokens",
        &cookie,
        None,
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, 403, "without the CSRF token");
    let (status, made) = browser(
        &e,
        "POST",
        "/v1/me/tokens",
        &cookie,
        Some(&csrf),
        Some(body),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["user"], "ann");
    let ci = made["token"].as_str().unwrap().to_owned();
    let id = made["id"].as_str().unwrap().to_owned();
    let (status, me) = e.call("GET", "/v1/me", Some(&ci), None).await;
    assert_eq!((status, me["name"].as_str()), (200, Some("ann")));
    let (status, _) = e
        .call(
            "POST",
            "/v1/agents",
            Some(&ci),
            Some(json!({"name": "x", "config": {}})),
        )
        .await;
    assert_eq!(status, 403, "a read token");

    // Listed with its label and scopes, never the token itself; bad input named.
    let (status, list) = browser(&e, "GET", "/v1/me/tokens", &cookie, None, None).await;
    assert_eq!(status, 200);
    let listed = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        (listed["label"].as_str(), &listed["scopes"]),
        (Some("ci"), &json!(["read"]))
    );
    assert!(!list.to_string().contains(&ci), "{list}");
    let (status, answer) = browser(
        &e,
        "POST",
        "/v1/me/tokens",
        &cookie,
        Some(&csrf),
        Some(json!({"scopes": []})),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("scopes"),
        "{answer}"
    );

    // Bob cannot revoke ann's token, nor see it; ann revokes it with her other token.
    let (status, _) = e
        .call(
            "DELETE",
            &format!("/v1/me/tokens?id={id}"),
            Some(&bob_token),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (_, bobs) = e.call("GET", "/v1/me/tokens", Some(&bob_token), None).await;
    assert!(!bobs.to_string().contains(&id), "{bobs}");
    assert_eq!(
        e.call("GET", "/v1/me", Some(&ci), None).await.0,
        200,
        "still valid"
    );
    let (status, _) = e
        .call(
            "DELETE",
            &format!("/v1/me/tokens?id={id}"),
            Some(&ann_token),
            None,
        )
        .await;
    assert_eq!(status, 204);
    assert_eq!(e.call("GET", "/v1/me", Some(&ci), None).await.0, 401);
    let (status, answer) = e
        .call(
            "DELETE",
            &format!("/v1/me/tokens?id={id}"),
            Some(&ann_token),
            None,
        )
        .await;
    assert_eq!(status, 404, "{answer}");
    assert!(e.server_errors().is_empty(), "{:?}", e.server_errors());
}
