//! Tavily's search API: `POST {url}/search` with a JSON body (`query`, `max_results`,
//! `search_depth`) and the key as `Authorization: Bearer`. Results carry `content` (the
//! extract), a relevance `score` and, for news, `published_date`.

use super::{Hit, Query, SearchConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Response {
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
    content: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    published_date: Option<String>,
}

/// Tavily serves at most this many results a request.
const MAX_COUNT: u32 = 20;

/// The request for `query`.
pub fn request(
    config: &SearchConfig,
    client: &reqwest::Client,
    query: &Query<'_>,
) -> reqwest::RequestBuilder {
    client
        .post(format!("{}/search", config.url))
        .bearer_auth(config.api_key.as_deref().unwrap_or_default())
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
            "query": query.text,
            "max_results": query.count.clamp(1, MAX_COUNT),
            "search_depth": "basic",
            "include_answer": false,
            "include_raw_content": false,
            })
            .to_string(),
        )
}

/// The results of a response body.
pub fn hits(body: &str) -> Result<Vec<Hit>, serde_json::Error> {
    let r: Response = serde_json::from_str(body)?;
    Ok(r.results
        .into_iter()
        .map(|x| Hit {
            title: x.title,
            url: x.url,
            snippet: x.content.unwrap_or_default(),
            date: x.published_date.filter(|d| !d.is_empty()),
            score: x.score,
        })
        .collect())
}
