//! `web.search`: a query sent to the search backend this process is configured with
//! ([`SearchConfig`]), its results deduplicated, ranked and numbered for the model to cite.
//!
//! Each backend speaks its own API in a file of its own ([`searxng`], [`brave`], [`tavily`],
//! [`serper`]): it builds the request and reads the response into [`Hit`]s; what is common
//! (limits, deduplication, ranking, the text the model reads) is here. The backend's address
//! is the operator's, not the model's, so it is not put through the address check `web.fetch`
//! applies to every URL a model names (a self-hosted SearXNG often sits on a private network).

pub mod brave;
pub mod searxng;
pub mod serper;
pub mod tavily;

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// The search APIs `web.search` speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackend {
    /// A SearXNG instance's JSON API (`GET /search?format=json`; no key).
    Searxng,
    /// Brave Search's Web Search API (`X-Subscription-Token`).
    Brave,
    /// Tavily's search API (`Authorization: Bearer`).
    Tavily,
    /// Serper's Google Search API (`X-API-KEY`).
    Serper,
}

impl SearchBackend {
    /// Every backend, in the order documentation lists them.
    pub const ALL: [SearchBackend; 4] = [Self::Searxng, Self::Brave, Self::Tavily, Self::Serper];

    /// How configuration names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Tavily => "tavily",
            Self::Serper => "serper",
        }
    }

    /// Where the hosted API answers (SearXNG has no such place: its address is required).
    pub fn default_url(self) -> Option<&'static str> {
        match self {
            Self::Searxng => None,
            Self::Brave => Some("https://api.search.brave.com"),
            Self::Tavily => Some("https://api.tavily.com"),
            Self::Serper => Some("https://google.serper.dev"),
        }
    }

    /// Whether calls need an API key.
    pub fn needs_key(self) -> bool {
        match self {
            Self::Searxng => false,
            Self::Brave | Self::Tavily | Self::Serper => true,
        }
    }
}

impl std::str::FromStr for SearchBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|b| b.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|b| b.as_str()).collect();
                format!(
                    "unknown search backend `{s}` (one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// Why a search configuration cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SearchConfigError {
    /// The backend needs an address and none was given (SearXNG).
    #[error("web search backend `{0}` needs `url` (the instance's address)")]
    NoUrl(&'static str),
    /// The backend is a paid API and no key was given.
    #[error("web search backend `{0}` needs an API key (`api_key`, or REIN_WEB_SEARCH_API_KEY)")]
    NoKey(&'static str),
    /// The address is not an http(s) URL.
    #[error("web search url `{url}` is not an http(s) URL")]
    BadUrl {
        /// What was given.
        url: String,
    },
}

/// How `web.search` searches.
#[derive(Clone, Debug)]
pub struct SearchConfig {
    /// The API.
    pub backend: SearchBackend,
    /// Its base address, without a trailing slash (checked by [`SearchConfig::new`]).
    pub url: String,
    /// Its key, when it needs one.
    pub api_key: Option<String>,
    /// Results one call returns at most (a call may ask for fewer).
    pub max_results: u32,
    /// Searches one operation may make; later calls are refused, saying so.
    pub per_operation: u32,
    /// Time limit of one request.
    pub timeout: Duration,
    /// What one search costs (the plan's price per request), counted in the operation's
    /// spending; none: searches are free (a self-hosted SearXNG).
    pub price: Option<rein_core::usage::Usd>,
}

/// Results a call returns when it does not say (and at most, unless configured otherwise).
pub const DEFAULT_RESULTS: u32 = 5;
/// Searches an operation may make unless configured otherwise.
pub const DEFAULT_PER_OPERATION: u32 = 20;

impl SearchConfig {
    /// `backend` at `url` (its hosted address when `None`) with `api_key`, checked: a
    /// backend that needs an address or a key has one.
    pub fn new(
        backend: SearchBackend,
        url: Option<&str>,
        api_key: Option<String>,
    ) -> Result<Self, SearchConfigError> {
        let url = match url.or(backend.default_url()) {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None => return Err(SearchConfigError::NoUrl(backend.as_str())),
        };
        if reqwest::Url::parse(&url)
            .map(|u| !matches!(u.scheme(), "http" | "https"))
            .unwrap_or(true)
        {
            return Err(SearchConfigError::BadUrl { url });
        }
        let api_key = api_key.filter(|k| !k.trim().is_empty());
        if backend.needs_key() && api_key.is_none() {
            return Err(SearchConfigError::NoKey(backend.as_str()));
        }
        Ok(Self {
            backend,
            url,
            api_key,
            max_results: 10,
            per_operation: DEFAULT_PER_OPERATION,
            timeout: Duration::from_secs(20),
            price: None,
        })
    }
}

/// One result as every backend gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// The page's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// What the backend quotes of it.
    pub snippet: String,
    /// When it was published or changed, as the backend says it (absent when it does not).
    pub date: Option<String>,
    /// The backend's relevance score, when it gives one (higher is better); without one the
    /// backend's own order is the ranking.
    pub score: Option<f64>,
}

/// A search's request failed or its answer could not be read: what the model is told.
#[derive(Debug, thiserror::Error)]
pub enum SearchFailed {
    /// No answer.
    #[error("the {backend} search request failed: {message}")]
    Unreachable {
        /// Which backend.
        backend: &'static str,
        /// Why.
        message: String,
    },
    /// An answer other than success.
    #[error("the {backend} search API answered {status}: {body}")]
    Status {
        /// Which backend.
        backend: &'static str,
        /// The HTTP status.
        status: u16,
        /// What it said (its start), or what that status means for this backend.
        body: String,
    },
    /// A success whose body is not the backend's format.
    #[error("the {backend} search API answered something that is not its JSON: {message}")]
    Unreadable {
        /// Which backend.
        backend: &'static str,
        /// Why.
        message: String,
    },
}

/// What one call asks for, after limits.
#[derive(Clone, Debug)]
pub struct Query<'a> {
    /// The words.
    pub text: &'a str,
    /// How many results.
    pub count: u32,
}

/// Send `query` to the configured backend and read its results (not yet deduplicated).
pub async fn search(
    config: &SearchConfig,
    client: &reqwest::Client,
    query: &Query<'_>,
) -> Result<Vec<Hit>, SearchFailed> {
    let backend = config.backend.as_str();
    let request = match config.backend {
        SearchBackend::Searxng => searxng::request(config, client, query),
        SearchBackend::Brave => brave::request(config, client, query),
        SearchBackend::Tavily => tavily::request(config, client, query),
        SearchBackend::Serper => serper::request(config, client, query),
    };
    let resp =
        request
            .timeout(config.timeout)
            .send()
            .await
            .map_err(|e| SearchFailed::Unreachable {
                backend,
                message: e.without_url().to_string(),
            })?;
    let status = resp.status();
    let body = resp.text().await.map_err(|e| SearchFailed::Unreachable {
        backend,
        message: e.without_url().to_string(),
    })?;
    if !status.is_success() {
        let said = match (config.backend, status.as_u16()) {
            (SearchBackend::Searxng, 403) => "forbidden: this instance does not serve the JSON format (add `json` to `search.formats` in its settings.yml)".to_owned(),
            (_, 401 | 403) => format!("the API key was refused ({})", excerpt(&body)),
            (_, 429) => format!("too many requests: the plan's rate or quota is used up ({})", excerpt(&body)),
            _ => excerpt(&body),
        };
        return Err(SearchFailed::Status {
            backend,
            status: status.as_u16(),
            body: said,
        });
    }
    let unreadable = |e: serde_json::Error| SearchFailed::Unreadable {
        backend,
        message: e.to_string(),
    };
    match config.backend {
        SearchBackend::Searxng => searxng::hits(&body).map_err(unreadable),
        SearchBackend::Brave => brave::hits(&body).map_err(unreadable),
        SearchBackend::Tavily => tavily::hits(&body).map_err(unreadable),
        SearchBackend::Serper => serper::hits(&body).map_err(unreadable),
    }
}

/// The start of an error body, on one line.
fn excerpt(body: &str) -> String {
    let one_line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

/// The address two results share when they are the same page: no fragment, no tracking
/// parameters, no `www.`, no trailing slash, scheme and host in lower case.
pub fn same_page_key(url: &str) -> String {
    let Ok(mut u) = reqwest::Url::parse(url) else {
        return url.trim().to_ascii_lowercase();
    };
    u.set_fragment(None);
    let kept: Vec<(String, String)> = u
        .query_pairs()
        .filter(|(k, _)| {
            !(k.starts_with("utm_") || matches!(k.as_ref(), "fbclid" | "gclid" | "ref" | "ref_src"))
        })
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if kept.is_empty() {
        u.set_query(None);
    } else {
        u.query_pairs_mut().clear().extend_pairs(kept);
    }
    let host = u
        .host_str()
        .unwrap_or_default()
        .trim_start_matches("www.")
        .to_owned();
    let scheme = match u.scheme() {
        "http" | "https" => "web",
        other => other,
    };
    let path = u.path().trim_end_matches('/');
    let query = u.query().map(|q| format!("?{q}")).unwrap_or_default();
    format!("{scheme}://{host}{path}{query}")
}

/// `hits` ranked (by score where the backend gives scores, keeping its order among equals),
/// each page once (its best-ranked entry), the first `count`. Results that are not http(s)
/// addresses are dropped: nothing else can be fetched or cited.
pub fn rank(mut hits: Vec<Hit>, count: usize) -> Vec<Hit> {
    hits.retain(|h| h.url.starts_with("http://") || h.url.starts_with("https://"));
    // A stable sort: equal (or absent) scores keep the backend's order.
    hits.sort_by(|a, b| {
        b.score
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&a.score.unwrap_or(f64::NEG_INFINITY))
    });
    let mut seen = HashSet::new();
    hits.retain(|h| seen.insert(same_page_key(&h.url)));
    hits.truncate(count);
    hits
}

/// The results as the model reads them: numbered, each with its address and date, the
/// numbers being what it cites.
pub fn render(query: &str, backend: SearchBackend, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("No results for \"{query}\" ({}).", backend.as_str());
    }
    let mut out = format!(
        "Results for \"{query}\" ({}); cite a source you use as [n](URL):\n",
        backend.as_str()
    );
    for (i, h) in hits.iter().enumerate() {
        // Backends mark matched words in titles and snippets with HTML (`<b>`, `<strong>`).
        let title = one_line(&crate::web::html_to_text(&h.title));
        let title = if title.is_empty() {
            h.url.clone()
        } else {
            title
        };
        out.push_str(&format!("\n[{}] {title}\nURL: {}\n", i + 1, h.url));
        if let Some(date) = &h.date {
            out.push_str(&format!("Date: {}\n", one_line(date)));
        }
        let snippet = one_line(&crate::web::html_to_text(&h.snippet));
        if !snippet.is_empty() {
            out.push_str(&snippet);
            out.push('\n');
        }
    }
    out.trim_end().to_owned()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str, score: Option<f64>) -> Hit {
        Hit {
            title: url.into(),
            url: url.into(),
            snippet: String::new(),
            date: None,
            score,
        }
    }

    #[test]
    fn the_same_page_is_listed_once_at_its_best_rank() {
        let hits = vec![
            hit("https://example.com/a?utm_source=x", Some(0.2)),
            hit("https://www.example.com/a/", Some(0.9)),
            hit("http://example.com/a#part", Some(0.5)),
            hit("https://example.com/a?page=2", Some(0.1)),
            hit("ftp://example.com/a", Some(1.0)),
        ];
        let ranked: Vec<String> = rank(hits, 10).into_iter().map(|h| h.url).collect();
        assert_eq!(
            ranked,
            ["https://www.example.com/a/", "https://example.com/a?page=2"]
        );
    }

    #[test]
    fn without_scores_the_backends_order_stands_and_the_count_cuts() {
        let hits = (0..6)
            .map(|i| hit(&format!("https://e.org/{i}"), None))
            .collect();
        let ranked: Vec<String> = rank(hits, 3).into_iter().map(|h| h.url).collect();
        assert_eq!(
            ranked,
            ["https://e.org/0", "https://e.org/1", "https://e.org/2"]
        );
    }

    #[test]
    fn a_configuration_names_what_it_lacks() {
        assert_eq!(
            SearchConfig::new(SearchBackend::Searxng, None, None).unwrap_err(),
            SearchConfigError::NoUrl("searxng")
        );
        assert_eq!(
            SearchConfig::new(SearchBackend::Brave, None, Some(" ".into())).unwrap_err(),
            SearchConfigError::NoKey("brave")
        );
        assert!(matches!(
            SearchConfig::new(SearchBackend::Searxng, Some("file:///etc"), None),
            Err(SearchConfigError::BadUrl { .. })
        ));
        let c = SearchConfig::new(SearchBackend::Tavily, None, Some("k".into())).unwrap();
        assert_eq!(c.url, "https://api.tavily.com");
        assert_eq!("serper".parse(), Ok(SearchBackend::Serper));
        assert!(
            "google"
                .parse::<SearchBackend>()
                .unwrap_err()
                .contains("searxng, brave")
        );
    }
}
