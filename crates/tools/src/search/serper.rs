//! Serper's Google Search API: `POST {url}/search` with a JSON body (`q`, `num`) and the key
//! in `X-API-KEY`. Web results are `organic`, in Google's order (`position`), each with `link`,
//! `snippet` and sometimes `date`.

use super::{Hit, Query, SearchConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    organic: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    title: String,
    #[serde(default)]
    link: String,
    #[serde(default)]
    snippet: Option<String>,
    #[serde(default)]
    date: Option<String>,
}

/// Serper serves at most this many results a request.
const MAX_COUNT: u32 = 100;

/// The request for `query`.
pub fn request(
    config: &SearchConfig,
    client: &reqwest::Client,
    query: &Query<'_>,
) -> reqwest::RequestBuilder {
    client
        .post(format!("{}/search", config.url))
        .header("x-api-key", config.api_key.as_deref().unwrap_or_default())
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
            "q": query.text,
            "num": query.count.clamp(1, MAX_COUNT),
            })
            .to_string(),
        )
}

/// The results of a response body.
pub fn hits(body: &str) -> Result<Vec<Hit>, serde_json::Error> {
    let r: Response = serde_json::from_str(body)?;
    Ok(r.organic
        .into_iter()
        .map(|x| Hit {
            title: x.title,
            url: x.link,
            snippet: x.snippet.unwrap_or_default(),
            date: x.date.filter(|d| !d.is_empty()),
            score: None,
        })
        .collect())
}
