//! Brave Search's Web Search API: `GET {url}/res/v1/web/search?q=…&count=N` with the key in
//! `X-Subscription-Token`. Web results are under `web.results`, each with `description` (the
//! snippet, with `<strong>` marks) and `page_age` (ISO date) or `age` (relative words).

use super::{Hit, Query, SearchConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    page_age: Option<String>,
    #[serde(default)]
    age: Option<String>,
}

/// Brave serves at most this many results a request.
const MAX_COUNT: u32 = 20;

/// The request for `query`.
pub fn request(
    config: &SearchConfig,
    client: &reqwest::Client,
    query: &Query<'_>,
) -> reqwest::RequestBuilder {
    let count = query.count.clamp(1, MAX_COUNT).to_string();
    client
        .get(format!("{}/res/v1/web/search", config.url))
        .query(&[("q", query.text), ("count", count.as_str())])
        .header("accept", "application/json")
        .header(
            "x-subscription-token",
            config.api_key.as_deref().unwrap_or_default(),
        )
}

/// The results of a response body (none when it has no web section).
pub fn hits(body: &str) -> Result<Vec<Hit>, serde_json::Error> {
    let r: Response = serde_json::from_str(body)?;
    Ok(r.web
        .map(|w| w.results)
        .unwrap_or_default()
        .into_iter()
        .map(|x| Hit {
            title: x.title,
            url: x.url,
            snippet: x.description.unwrap_or_default(),
            date: x.page_age.or(x.age).filter(|d| !d.is_empty()),
            score: None,
        })
        .collect())
}
