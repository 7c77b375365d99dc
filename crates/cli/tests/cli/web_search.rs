//! `web.search` end to end: a model searches (a local SearXNG speaking its JSON API), fetches
//! the result it wants (a local page, reached because the configuration allows its address)
//! and answers citing it; what each step gave the model is in its next request.

use super::*;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PAGE: &str = r#"<!doctype html><html><head><title>Durable steps</title></head><body>
<nav><a href="/">Home</a> <a href="/pricing">Pricing</a></nav>
<article><h1>Durable steps</h1><p>rein commits every step before the next one starts,
so a crash loses at most the step under way.</p></article>
<footer>Copyright nobody</footer></body></html>"#;

/// A SearXNG instance and a web page on one loopback port: `/search` answers JSON listing
/// `/guide` (twice: once with a tracking parameter), `/guide` is the page. Every request line
/// is kept.
async fn site() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (kept, page_base) = (Arc::clone(&seen), base.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 8192];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let line = head.lines().next().unwrap_or_default().to_owned();
            kept.lock().unwrap().push(line.clone());
            let (kind, body) = if line.starts_with("GET /search?") {
                let results = serde_json::json!({
                    "query": "how does rein keep steps",
                    "number_of_results": 0,
                    "results": [
                        {"url": format!("{page_base}/guide"), "title": "Durable steps", "content": "rein commits every step…", "engine": "duckduckgo", "engines": ["duckduckgo"], "positions": [1], "publishedDate": "2026-11-30T00:00:00", "score": 2.0, "category": "general"},
                        {"url": format!("{page_base}/guide?utm_source=feed"), "title": "Durable steps (feed)", "content": "the same page", "engine": "brave", "engines": ["brave"], "positions": [2], "publishedDate": null, "score": 1.0, "category": "general"}
                    ],
                    "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []
                });
                ("application/json", results.to_string())
            } else {
                ("text/html; charset=utf-8", PAGE.to_owned())
            };
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(response.as_bytes()).await;
            let _ = s.shutdown().await;
        }
    });
    (base, seen)
}

#[tokio::test]
async fn a_model_searches_reads_a_result_and_answers_citing_it() {
    let (base, seen) = site().await;
    let page = format!("{base}/guide");
    let answer = format!("Every step is committed before the next starts [1]({page}).");
    let config = format!(
        "[web]\nallow = [\"127.0.0.1\"]\n[web.search]\nbackend = \"searxng\"\nurl = \"{base}\"\nper_operation = 2\n"
    );
    let e = env_with_config(
        vec![
            Canned::openai_tools(&[(
                "s1",
                "web__search",
                &serde_json::json!({"query": "how does rein keep steps"}).to_string(),
            )]),
            Canned::openai_tools(&[(
                "f1",
                "web__fetch",
                &serde_json::json!({"url": page}).to_string(),
            )]),
            Canned::openai_text(&answer),
        ],
        Some(&config),
    )
    .await;
    let (code, out, err) = e.rein(&["run", "how does rein keep steps?"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(&answer), "{out}");
    // The model was offered the search and told how to cite.
    let first = &e.server.requests()[0];
    assert!(
        first.body["tools"].to_string().contains("web__search"),
        "{}",
        first.body["tools"]
    );
    assert!(
        first
            .system_text()
            .contains("cite each source it relies on as [n](URL)"),
        "{}",
        first.system_text()
    );
    // SearXNG was asked for JSON; the two entries of one page became one numbered source.
    let lines = seen.lock().unwrap().clone();
    assert!(
        lines[0].starts_with("GET /search?q=how+does+rein+keep+steps&format=json"),
        "{lines:?}"
    );
    let results = last_tool_result(&e, 1);
    assert!(
        results.contains(&format!(
            "[1] Durable steps\nURL: {page}\nDate: 2026-11-30T00:00:00"
        )),
        "{results}"
    );
    assert!(!results.contains("[2]"), "{results}");
    // The page reached the model as its readable text: title and article, no navigation.
    let read = last_tool_result(&e, 2);
    assert!(
        read.contains("Title: Durable steps")
            && read.contains("so a crash loses at most the step under way"),
        "{read}"
    );
    assert!(
        !read.contains("Pricing") && !read.contains("Copyright"),
        "{read}"
    );
    assert_eq!(lines.len(), 2, "one search, one fetch: {lines:?}");
}

#[tokio::test]
async fn searches_past_the_operations_limit_are_refused_and_the_model_is_told() {
    let (base, seen) = site().await;
    let config =
        format!("[web.search]\nbackend = \"searxng\"\nurl = \"{base}\"\nper_operation = 1\n");
    let search = |id: &str| {
        Canned::openai_tools(&[(
            id,
            "web__search",
            &serde_json::json!({"query": "again"}).to_string(),
        )])
    };
    let e = env_with_config(
        vec![search("s1"), search("s2"), Canned::openai_text("enough")],
        Some(&config),
    )
    .await;
    let (code, out, err) = e.rein(&["run", "search twice"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(last_tool_result(&e, 1).contains("[1] Durable steps"));
    let refused = last_tool_result(&e, 2);
    assert!(
        refused.contains("This operation has made its 1 web searches"),
        "{refused}"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the second search sent nothing"
    );
}

#[tokio::test]
async fn a_search_backend_without_what_it_needs_is_refused_before_anything_runs() {
    if local_only(
        "a_search_backend_without_what_it_needs_is_refused_before_anything_runs",
        "the parity run's server would refuse the same file as it starts",
    ) {
        return;
    }
    let e = env_with_config(
        vec![Canned::openai_text("never")],
        Some("[web.search]\nbackend = \"brave\"\n"),
    )
    .await;
    let (code, _, err) = e.rein(&["run", "hi"]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("[web.search]: web search backend `brave` needs an API key"),
        "{err}"
    );
    assert!(e.server.requests().is_empty());
    let out = e
        .cmd(&["--json", "config", "show"])
        .env("REIN_WEB_SEARCH_API_KEY", "BSA-secret-key-123")
        .output()
        .await
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["web"]["search"]["backend"], "brave");
    assert_eq!(
        shown["web"]["search"]["url"],
        "https://api.search.brave.com"
    );
    assert_eq!(
        shown["web"]["search"]["api_key_from"],
        "env REIN_WEB_SEARCH_API_KEY"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("secret-key"));
}
