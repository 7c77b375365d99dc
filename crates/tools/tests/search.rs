//! `web.search` against local servers speaking each backend's API as the real one does: the
//! request's method, path, parameters, body and authentication asserted; the answer in the
//! backend's own JSON shape (with the fields rein ignores); results deduplicated, ranked,
//! numbered for citing; the limits per call and per operation; a result's URL fetched only
//! through the address check.

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use rein_core::OperationId;
use rein_tools::search::{SearchBackend, SearchConfig};
use rein_tools::web::{Web, WebConfig};
use rein_tools::{Tool, ToolContext};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// One request the fake backend received.
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Value,
}

impl Seen {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A backend answering every request with `status` and `body`, keeping what it was sent.
async fn backend(status: u16, body: Value) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let app = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, bytes: Bytes| {
            let kept = Arc::clone(&kept);
            let body = body.clone();
            async move {
                let query = uri
                    .query()
                    .map(|q| {
                        reqwest::Url::parse(&format!("http://x/?{q}"))
                            .unwrap()
                            .query_pairs()
                            .map(|(k, v)| (k.into_owned(), v.into_owned()))
                            .collect()
                    })
                    .unwrap_or_default();
                kept.lock().unwrap().push(Seen {
                    method,
                    path: uri.path().to_owned(),
                    query,
                    headers,
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                });
                (
                    StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/json")],
                    body.to_string(),
                )
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

fn cx(earlier_calls: u32) -> ToolContext {
    ToolContext {
        topic: None,
        earlier_calls,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        operation_id: OperationId::new(),
        working_directory: None,
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: Vec::new(),
        question_briefs: false,
        sandbox: Default::default(),
    }
}

fn web(backend: SearchBackend, url: &str, key: Option<&str>) -> Web {
    let mut search = SearchConfig::new(backend, Some(url), key.map(str::to_owned)).unwrap();
    search.per_operation = 3;
    search.max_results = 4;
    Web::new(WebConfig {
        search: Some(search),
        ..Default::default()
    })
}

async fn call(web: &Web, cx: &ToolContext, api: &str, args: Value) -> (bool, String) {
    let out = web.call(cx, api, args).await.unwrap();
    (out.success, out.content)
}

/// The numbered URLs of a rendered result list, in order.
fn cited(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("URL: "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn searxng_is_asked_for_json_and_its_scored_results_are_ranked_once_each() {
    let (url, seen) = backend(
        200,
        json!({
            "query": "rust ownership",
            "number_of_results": 0,
            "results": [
                {"url": "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html", "title": "What is Ownership?", "content": "Ownership is a set of rules…", "engine": "duckduckgo", "parsed_url": ["https", "doc.rust-lang.org", "/book/ch04-01-what-is-ownership.html", "", "", ""], "template": "default.html", "engines": ["duckduckgo", "brave"], "positions": [1, 2], "publishedDate": null, "score": 4.0, "category": "general"},
                {"url": "https://blog.example.org/ownership", "title": "Ownership <b>explained</b>", "content": "A <b>gentle</b> tour", "engine": "brave", "engines": ["brave"], "positions": [3], "publishedDate": "2026-03-01T00:00:00", "score": 6.5, "category": "general"},
                {"url": "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html#the-stack", "title": "dup", "content": "", "engine": "google", "engines": ["google"], "positions": [5], "publishedDate": null, "score": 1.0, "category": "general"}
            ],
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["rust borrowing"], "unresponsive_engines": []
        }),
    )
    .await;
    let web = web(SearchBackend::Searxng, &url, None);
    let (ok, text) = call(&web, &cx(0), "search", json!({"query": "rust ownership"})).await;
    assert!(ok, "{text}");
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (req.method.clone(), req.path.as_str()),
        (Method::GET, "/search")
    );
    assert_eq!(req.param("q"), Some("rust ownership"));
    assert_eq!(req.param("format"), Some("json"));
    assert_eq!(
        cited(&text),
        [
            "https://blog.example.org/ownership",
            "https://doc.rust-lang.org/book/ch04-01-what-is-ownership.html"
        ]
    );
    assert!(text.contains("[1] Ownership explained\n"), "{text}");
    assert!(
        text.contains("Date: 2026-03-01T00:00:00\nA gentle tour"),
        "{text}"
    );
    assert!(text.contains("cite a source you use as [n](URL)"), "{text}");
    // The system role asks for citations of the numbered sources.
    let role = web.manifest().system_role.unwrap();
    assert!(role.contains("[n](URL)"), "{role}");
}

#[tokio::test]
async fn brave_gets_its_subscription_token_and_count_and_its_web_results_are_read() {
    let (url, seen) = backend(
        200,
        json!({
            "type": "search",
            "query": {"original": "tokio select", "show_strict_warning": false, "is_navigational": false, "spellcheck_off": true, "country": "us", "more_results_available": true},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}]},
            "web": {
                "type": "search",
                "results": [
                    {"type": "search_result", "title": "select in tokio - Rust", "url": "https://docs.rs/tokio/latest/tokio/macro.select.html", "is_source_local": false, "is_source_both": false, "description": "Waits on multiple concurrent branches, returning when the <strong>first</strong> branch completes", "page_age": "2026-10-02T08:11:00", "profile": {"name": "Docs.rs", "url": "https://docs.rs", "long_name": "docs.rs", "img": "https://imgs.search.brave.com/x"}, "language": "en", "family_friendly": true, "meta_url": {"scheme": "https", "netloc": "docs.rs", "hostname": "docs.rs", "favicon": "https://imgs.search.brave.com/y", "path": "› tokio › latest"}, "age": "2 months ago"},
                    {"type": "search_result", "title": "Select | Tokio tutorial", "url": "https://tokio.rs/tokio/tutorial/select", "description": "So far, when we wanted to add concurrency…", "age": "March 4, 2025", "language": "en", "family_friendly": true}
                ],
                "family_friendly": true
            }
        }),
    )
    .await;
    let web = web(SearchBackend::Brave, &url, Some("BSA-test-key"));
    let (ok, text) = call(
        &web,
        &cx(0),
        "search",
        json!({"query": "tokio select", "count": 2}),
    )
    .await;
    assert!(ok, "{text}");
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (req.method.clone(), req.path.as_str()),
        (Method::GET, "/res/v1/web/search")
    );
    assert_eq!(req.param("q"), Some("tokio select"));
    assert_eq!(req.param("count"), Some("2"));
    assert_eq!(req.header("x-subscription-token"), Some("BSA-test-key"));
    assert_eq!(req.header("accept"), Some("application/json"));
    assert_eq!(
        cited(&text),
        [
            "https://docs.rs/tokio/latest/tokio/macro.select.html",
            "https://tokio.rs/tokio/tutorial/select"
        ]
    );
    assert!(text.contains("Date: 2026-10-02T08:11:00\nWaits on multiple concurrent branches, returning when the first branch completes"), "{text}");
    assert!(text.contains("Date: March 4, 2025"), "{text}");
}

#[tokio::test]
async fn tavily_gets_a_bearer_key_and_a_json_body_and_its_scores_rank() {
    let (url, seen) = backend(
        200,
        json!({
            "query": "sqlite wal mode",
            "follow_up_questions": null,
            "answer": null,
            "images": [],
            "results": [
                {"url": "https://example.net/wal-notes", "title": "WAL notes", "content": "Some notes on WAL", "score": 0.41, "raw_content": null},
                {"url": "https://www.sqlite.org/wal.html", "title": "Write-Ahead Logging", "content": "The default method by which SQLite implements atomic commit…", "score": 0.93, "raw_content": null, "published_date": "Mon, 02 Nov 2026 10:00:00 GMT"}
            ],
            "response_time": 1.09,
            "request_id": "123e4567-e89b-12d3-a456-426614174111"
        }),
    )
    .await;
    let web = web(SearchBackend::Tavily, &url, Some("tvly-dev-key"));
    let (ok, text) = call(
        &web,
        &cx(2),
        "search",
        json!({"query": "sqlite wal mode", "count": 20}),
    )
    .await;
    assert!(ok, "{text}");
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (req.method.clone(), req.path.as_str()),
        (Method::POST, "/search")
    );
    assert_eq!(req.header("authorization"), Some("Bearer tvly-dev-key"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.body["query"], "sqlite wal mode");
    // Twenty asked for, four configured: four sent.
    assert_eq!(req.body["max_results"], 4);
    assert_eq!(req.body["search_depth"], "basic");
    assert_eq!(
        cited(&text),
        [
            "https://www.sqlite.org/wal.html",
            "https://example.net/wal-notes"
        ]
    );
}

#[tokio::test]
async fn serper_gets_its_api_key_header_and_organic_results_keep_googles_order() {
    let (url, seen) = backend(
        200,
        json!({
            "searchParameters": {"q": "axum middleware", "type": "search", "num": 3, "engine": "google"},
            "knowledgeGraph": {"title": "Axum", "type": "Software"},
            "organic": [
                {"title": "axum::middleware - Rust", "link": "https://docs.rs/axum/latest/axum/middleware/index.html", "snippet": "Utilities for writing middleware.", "position": 1},
                {"title": "Middleware in axum", "link": "https://example.com/axum-mw?utm_source=serp", "snippet": "A guide", "date": "Aug 3, 2026", "position": 2, "sitelinks": [{"title": "Part 2", "link": "https://example.com/axum-mw/2"}]},
                {"title": "Middleware in axum (copy)", "link": "https://www.example.com/axum-mw/", "snippet": "Same page", "position": 3}
            ],
            "peopleAlsoAsk": [{"question": "What is tower?", "snippet": "…", "title": "t", "link": "https://example.org/tower"}],
            "relatedSearches": [{"query": "axum from_fn"}],
            "credits": 1
        }),
    )
    .await;
    let web = web(SearchBackend::Serper, &url, Some("serper-key"));
    let (ok, text) = call(
        &web,
        &cx(0),
        "search",
        json!({"query": "axum middleware", "count": 3}),
    )
    .await;
    assert!(ok, "{text}");
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (req.method.clone(), req.path.as_str()),
        (Method::POST, "/search")
    );
    assert_eq!(req.header("x-api-key"), Some("serper-key"));
    assert_eq!(req.body, json!({"q": "axum middleware", "num": 3}));
    assert_eq!(
        cited(&text),
        [
            "https://docs.rs/axum/latest/axum/middleware/index.html",
            "https://example.com/axum-mw?utm_source=serp"
        ]
    );
    assert!(text.contains("Date: Aug 3, 2026"), "{text}");
}

#[tokio::test]
async fn refusals_name_the_key_the_format_and_the_limit() {
    let (url, _) = backend(
        401,
        json!({"error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.", "status": 401}, "type": "ErrorResponse"}),
    )
    .await;
    let (ok, text) = call(
        &web(SearchBackend::Brave, &url, Some("bad")),
        &cx(0),
        "search",
        json!({"query": "x"}),
    )
    .await;
    assert!(!ok);
    assert!(
        text.contains("brave search API answered 401: the API key was refused")
            && text.contains("SUBSCRIPTION_TOKEN_INVALID"),
        "{text}"
    );
    let (url, _) = backend(403, json!("Forbidden")).await;
    let (ok, text) = call(
        &web(SearchBackend::Searxng, &url, None),
        &cx(0),
        "search",
        json!({"query": "x"}),
    )
    .await;
    assert!(!ok && text.contains("search.formats"), "{text}");
    // The operation's fourth search (three allowed) is refused before any request.
    let (url, seen) = backend(200, json!({"results": []})).await;
    let web = web(SearchBackend::Searxng, &url, None);
    let (ok, text) = call(&web, &cx(3), "search", json!({"query": "x"})).await;
    assert!(!ok && text.contains("its 3 web searches"), "{text}");
    assert!(seen.lock().unwrap().is_empty());
    let (ok, text) = call(&web, &cx(2), "search", json!({"query": "nothing"})).await;
    assert!(ok && text.contains("No results for \"nothing\""), "{text}");
}

#[tokio::test]
async fn a_result_pointing_inside_the_network_is_not_fetched() {
    let (url, _) = backend(
        200,
        json!({"results": [
            {"url": "http://169.254.169.254/latest/meta-data/", "title": "Cloud metadata", "content": "keys", "score": 2.0},
            {"url": "http://10.0.0.7/admin", "title": "Admin", "content": "panel", "score": 1.0}
        ]}),
    )
    .await;
    let web = web(SearchBackend::Searxng, &url, None);
    let (ok, text) = call(&web, &cx(0), "search", json!({"query": "metadata"})).await;
    assert!(ok, "{text}");
    for target in cited(&text) {
        let (ok, refused) = call(&web, &cx(0), "fetch", json!({"url": target})).await;
        assert!(!ok, "{target} was fetched: {refused}");
        assert!(
            refused.contains("internal targets are not fetched"),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn without_a_backend_only_fetch_is_offered() {
    let web = Web::new(WebConfig::default());
    let m = web.manifest();
    assert_eq!(
        m.apis.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        ["fetch"]
    );
    assert!(m.system_role.is_none());
    let (ok, text) = call(&web, &cx(0), "search", json!({"query": "x"})).await;
    assert!(!ok && text.contains("not configured"), "{text}");
}

#[tokio::test]
async fn an_answered_search_costs_its_price_and_a_refused_one_nothing() {
    let (url, _) = backend(200, json!({"results": []})).await;
    let mut search = SearchConfig::new(SearchBackend::Searxng, Some(&url), None).unwrap();
    search.price = Some(rein_core::Usd::from_dollars(0.005));
    let web = Web::new(WebConfig {
        search: Some(search.clone()),
        ..Default::default()
    });
    let out = web
        .call(&cx(0), "search", json!({"query": "x"}))
        .await
        .unwrap();
    assert!(out.success);
    assert_eq!(out.cost, rein_core::Usd::from_dollars(0.005));
    let (refusing, _) = backend(429, json!({"error": "quota"})).await;
    search.url = refusing;
    let web = Web::new(WebConfig {
        search: Some(search),
        ..Default::default()
    });
    let out = web
        .call(&cx(0), "search", json!({"query": "x"}))
        .await
        .unwrap();
    assert!(
        !out.success && out.content.contains("too many requests"),
        "{}",
        out.content
    );
    assert!(out.cost.is_zero());
}
