//! SearXNG's JSON API: `GET {url}/search?q=…&format=json`, no key (an instance serves JSON
//! only when its `settings.yml` lists `json` under `search.formats`; otherwise it answers 403).
//! Results carry an engine-merged `score`, and `publishedDate` when an engine dated them.

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
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default, rename = "publishedDate")]
    published_date: Option<String>,
    #[serde(default)]
    score: Option<f64>,
}

/// The request for `query` (SearXNG returns a page of about twenty; the count is applied
/// after).
pub fn request(
    config: &SearchConfig,
    client: &reqwest::Client,
    query: &Query<'_>,
) -> reqwest::RequestBuilder {
    client
        .get(format!("{}/search", config.url))
        .query(&[("q", query.text), ("format", "json"), ("pageno", "1")])
        .header("accept", "application/json")
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
