//! `web`: `fetch` and, when a search backend is configured, `search` ([`crate::search`]).
//!
//! `web.fetch` is an HTTP(S) GET with size and time limits, a page reduced to its readable
//! Markdown ([`crate::readable`]). Every hop (the first request and each redirect) resolves its
//! host and refuses loopback, private, link-local and other non-public addresses (also when
//! wrapped in an IPv6 form: IPv4-mapped, IPv4-compatible, NAT64, 6to4) unless explicitly
//! allowed; the connection is then pinned to the checked address, so DNS cannot swap it
//! afterwards. `HTTP_PROXY`/`HTTPS_PROXY` are ignored, since a proxy would resolve the name
//! again, beyond the check. A search result's URL is a URL like any other: fetching it goes
//! through the same check. An operation with an egress allow-list (an agent's `egress`) fetches
//! only from the hosts it lists, checked at every hop before anything is sent.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;
use std::time::Duration;

/// web settings.
#[derive(Clone, Debug)]
pub struct WebConfig {
    /// Addresses allowed even though they are not public (a local docs server, tests).
    pub allow: Vec<IpAddr>,
    /// Largest body read.
    pub max_bytes: usize,
    /// Time limit per request.
    pub timeout: Duration,
    /// Redirects followed at most.
    pub max_redirects: u32,
    /// Where `web.search` searches (none: the tool offers `fetch` only).
    pub search: Option<crate::search::SearchConfig>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            max_bytes: 2 * 1024 * 1024,
            timeout: Duration::from_secs(20),
            max_redirects: 5,
            search: None,
        }
    }
}

/// The web tool.
pub struct Web {
    config: WebConfig,
    /// Talks to the search backend (the operator's address: no address check, proxies as
    /// the environment says).
    search_client: reqwest::Client,
}

impl Web {
    /// A web tool with `config`.
    pub fn new(config: WebConfig) -> Self {
        Self {
            config,
            search_client: reqwest::Client::builder()
                .user_agent("rein-web-search/0.1")
                .build()
                .unwrap_or_default(),
        }
    }
}

/// Whether `ip` is not a public internet address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10, carrier-grade NAT
                || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0.0/24
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let o = v6.octets();
            // The IPv4 address carried in the last 32 bits (NAT64, IPv4-compatible).
            let tail = std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15]);
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x2001 && s[1] == 0) // Teredo: tunnels to anywhere
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard only
                // IPv4-mapped `::ffff:a.b.c.d`.
                || v6.to_ipv4_mapped().is_some_and(|v4| is_internal(IpAddr::V4(v4)))
                // IPv4-compatible `::a.b.c.d` (deprecated; the kernel may still route it).
                || (s[..6] == [0; 6] && is_internal(IpAddr::V4(tail)))
                // NAT64 well-known `64:ff9b::/96` and local-use `64:ff9b:1::/48` prefixes.
                || (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && is_internal(IpAddr::V4(tail)))
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
                // 6to4 `2002:a.b.c.d::/48`.
                || (s[0] == 0x2002
                    && is_internal(IpAddr::V4(std::net::Ipv4Addr::new(o[2], o[3], o[4], o[5]))))
        }
    }
}

static SCRIPT: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?is)<(script|style|noscript|template)\b.*?</(script|style|noscript|template)\s*>",
    )
    .ok()
});
static BREAK: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)<(br|/p|/div|/h[1-6]|/tr|/section|/article|/header|/footer)\b[^>]*>")
        .ok()
});
static ITEM: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"(?i)<li\b[^>]*>").ok());
static TAG: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"(?s)<[^>]*>").ok());
static ENTITY: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);").ok());

/// HTML reduced to readable text: scripts and styles dropped, block ends as line breaks, list
/// items as bullets, tags stripped, common entities decoded, blank runs collapsed.
pub fn html_to_text(html: &str) -> String {
    let apply = |re: &Option<regex::Regex>, s: &str, with: &str| match re {
        Some(r) => r.replace_all(s, with).into_owned(),
        None => s.to_owned(),
    };
    let s = apply(&SCRIPT, html, "");
    let s = apply(&BREAK, &s, "\n");
    let s = apply(&ITEM, &s, "\n- ");
    let s = apply(&TAG, &s, "");
    let s = match &*ENTITY {
        Some(re) => re
            .replace_all(&s, |c: &regex::Captures<'_>| {
                let e = &c[1];
                let decoded = match e {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    "nbsp" => Some(' '),
                    _ if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16)
                        .ok()
                        .and_then(char::from_u32),
                    _ if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
                    _ => None,
                };
                decoded.map_or_else(|| c[0].to_owned(), String::from)
            })
            .into_owned(),
        None => s,
    };
    let mut out = String::new();
    let mut blank = false;
    for line in s
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    {
        if line.is_empty() {
            if !blank && !out.is_empty() {
                out.push('\n');
            }
            blank = true;
        } else {
            out.push_str(&line);
            out.push('\n');
            blank = false;
        }
    }
    out.trim().to_owned()
}

/// Whether `host` is in the egress allow-list `list`: equal to an entry (any case), or under
/// an entry `*.domain` (a subdomain of it, or the domain itself).
pub fn egress_allows(list: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    list.iter().any(|entry| {
        let entry = entry.trim_end_matches('.').to_ascii_lowercase();
        match entry.strip_prefix("*.") {
            Some(domain) => {
                host == domain
                    || host
                        .strip_suffix(domain)
                        .is_some_and(|rest| rest.ends_with('.'))
            }
            None => host == entry,
        }
    })
}

/// Why `entry` cannot be an egress allow-list entry (a host name or address, or `*.` and a
/// domain; no scheme, port or path), or `None` when it can.
pub fn egress_entry_problem(entry: &str) -> Option<&'static str> {
    let host = entry.strip_prefix("*.").unwrap_or(entry);
    if host.is_empty() {
        return Some("it names no host");
    }
    if entry.len() > 253 {
        return Some("a host name has at most 253 characters");
    }
    if host.contains("://") || host.contains('/') {
        return Some("it is a host (example.com), not a URL");
    }
    if host.contains('*') {
        return Some("only a leading `*.` is a wildcard");
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
    {
        return Some("a host has only letters, digits, dots and dashes");
    }
    None
}

impl Web {
    async fn check(&self, url: &reqwest::Url) -> Result<SocketAddr, String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("refused {url}: only http and https are fetched"));
        }
        let host = url
            .host_str()
            .ok_or_else(|| format!("refused {url}: no host"))?;
        let port = url.port_or_known_default().unwrap_or(80);
        let host_for_lookup = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host_for_lookup, port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .collect();
        if let Some(bad) = addrs
            .iter()
            .find(|a| is_internal(a.ip()) && !self.config.allow.contains(&a.ip()))
        {
            return Err(format!(
                "refused {url}: {host} resolves to {}, a loopback, private or link-local address (internal targets are not fetched)",
                bad.ip()
            ));
        }
        addrs
            .first()
            .copied()
            .ok_or_else(|| format!("cannot resolve {host}"))
    }

    async fn fetch(&self, start: &str, egress: Option<&[String]>) -> Result<String, String> {
        let mut url =
            reqwest::Url::parse(start).map_err(|e| format!("`{start}` is not a valid URL: {e}"))?;
        for _ in 0..=self.config.max_redirects {
            // Every hop, redirects too: an allowed host cannot bounce the request elsewhere.
            if let Some(list) = egress {
                let host = url.host_str().unwrap_or_default();
                if !egress_allows(list, host) {
                    return Err(format!(
                        "refused {url}: {host} is not in this agent's egress allow-list ({}); nothing was sent",
                        list.join(", ")
                    ));
                }
            }
            let addr = self.check(&url).await?;
            let host = url.host_str().unwrap_or_default().to_owned();
            // Proxy variables are ignored: a proxy would resolve the name itself, after this
            // check, and could reach what the check refused.
            let client = reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(self.config.timeout)
                .resolve(&host, addr)
                .user_agent("rein-web-fetch/0.1")
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
            let mut resp = client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| format!("fetching {url} failed: {}", e.without_url()))?;
            let status = resp.status();
            if status.is_redirection() {
                let location = resp
                    .headers()
                    .get("location")
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| format!("{url} redirected without a location"))?;
                url = url
                    .join(location)
                    .map_err(|e| format!("bad redirect location `{location}`: {e}"))?;
                continue;
            }
            let content_type = resp
                .headers()
                .get("content-type")
                .and_then(|c| c.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let mut body = Vec::new();
            let mut truncated = false;
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| format!("reading {url} failed: {}", e.without_url()))?
            {
                body.extend_from_slice(&chunk);
                if body.len() > self.config.max_bytes {
                    body.truncate(self.config.max_bytes);
                    truncated = true;
                    break;
                }
            }
            let textual = content_type.is_empty()
                || content_type.starts_with("text/")
                || content_type.contains("json")
                || content_type.contains("xml");
            if !textual {
                return Err(format!(
                    "{url} returned {content_type} ({} bytes), which is not text",
                    body.len()
                ));
            }
            let raw = String::from_utf8_lossy(&body);
            let mut text = if content_type.contains("html") || raw.trim_start().starts_with('<') {
                let page = crate::readable::readable(&raw);
                match page.title {
                    Some(title) => format!("Title: {title}\n\n{}", page.text),
                    None => page.text,
                }
            } else {
                raw.into_owned()
            };
            if truncated {
                text.push_str(&format!(
                    "\n[... truncated at {} bytes ...]",
                    self.config.max_bytes
                ));
            }
            let head = format!("{url} ({})\n\n", status.as_u16());
            return if status.is_success() {
                Ok(head + &text)
            } else {
                Err(head + &text)
            };
        }
        Err(format!(
            "too many redirects (more than {})",
            self.config.max_redirects
        ))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    /// The http(s) URL to fetch
    #[schemars(length(min = 1))]
    url: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// What to search the web for
    #[schemars(length(min = 1, max = 400))]
    query: String,
    /// How many results (at most the configured number; 5 unless given)
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    count: Option<u32>,
}

impl Web {
    async fn search(&self, cx: &ToolContext, args: SearchArgs) -> ToolOutput {
        use crate::search::{Query, rank, render, search};
        let Some(config) = &self.config.search else {
            return ToolOutput::failed(
                "Web search is not configured on this host ([web.search] in rein's configuration).",
            );
        };
        if cx.earlier_calls >= config.per_operation {
            return ToolOutput::failed(format!(
                "This operation has made its {} web searches (the limit per operation): answer from the results you have, or fetch one of their pages.",
                config.per_operation
            ));
        }
        let count = args
            .count
            .unwrap_or(crate::search::DEFAULT_RESULTS)
            .clamp(1, config.max_results.max(1));
        let query = Query {
            text: args.query.trim(),
            count,
        };
        let mut out = match search(config, &self.search_client, &query).await {
            Ok(hits) => {
                let hits = rank(hits, count as usize);
                ToolOutput::ok(render(query.text, config.backend, &hits))
            }
            Err(e) => ToolOutput::failed(e.to_string()),
        };
        // A refused search is not billed by the backend.
        if let Some(price) = config.price.filter(|_| out.success) {
            out.cost = price;
        }
        out
    }
}

impl Tool for Web {
    fn manifest(&self) -> ToolManifest {
        let mut apis = vec![ToolApi {
            name: "fetch".into(),
            // Worded as before readable Markdown, so recorded requests (the demo's cassette)
            // still match: the answer is still the page's text.
            description:
                "GET an http(s) URL and return its text (HTML is converted to readable text)."
                    .into(),
            parameters: crate::parameters_of::<FetchArgs>(),
            intervention: None,
            cost: None,
        }];
        if let Some(search) = &self.config.search {
            apis.insert(
                0,
                ToolApi {
                    name: "search".into(),
                    description: format!(
                        "Search the web ({}); returns numbered results with title, URL, date and snippet. At most {} searches per task.",
                        search.backend.as_str(),
                        search.per_operation
                    ),
                    parameters: crate::parameters_of::<SearchArgs>(),
                    intervention: None,
                    // Charged by `search` itself, and only for answered searches.
                    cost: None,
                },
            );
        }
        ToolManifest {
            identifier: "web".into(),
            kind: ToolKind::Builtin,
            title: "Web".into(),
            description: if self.config.search.is_some() {
                "Search the web and read public pages as text.".into()
            } else {
                "Fetch public web pages as text.".into()
            },
            system_role: self.config.search.as_ref().map(|_| {
                "When an answer uses what `web.search` or `web.fetch` returned, cite each source it relies on as [n](URL), with the number and URL the search results give; read a page with `web.fetch` before relying on more than its snippet."
                    .into()
            }),
            apis,
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::Idempotent
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            if api == "search" {
                let args = tool_args!("web/search", args, SearchArgs);
                return Ok(self.search(cx, args).await);
            }
            let args = tool_args!("web/fetch", args, FetchArgs);
            Ok(match self.fetch(&args.url, cx.egress.as_deref()).await {
                Ok(text) => ToolOutput::ok(text),
                Err(e) => ToolOutput::failed(e),
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod egress_tests {
    use super::{egress_allows, egress_entry_problem};

    #[test]
    fn an_allow_list_admits_its_hosts_and_their_subdomains_only_where_it_says() {
        let list = vec!["docs.rs".to_owned(), "*.example.com".to_owned()];
        for ok in [
            "docs.rs",
            "DOCS.RS.",
            "example.com",
            "a.example.com",
            "a.b.example.com",
        ] {
            assert!(egress_allows(&list, ok), "{ok}");
        }
        for no in [
            "evil-docs.rs",
            "docs.rs.evil.net",
            "badexample.com",
            "attacker.example",
            "",
        ] {
            assert!(!egress_allows(&list, no), "{no}");
        }
        assert!(!egress_allows(&[], "docs.rs"));
        assert_eq!(
            egress_entry_problem("https://docs.rs"),
            Some("it is a host (example.com), not a URL")
        );
        assert_eq!(
            egress_entry_problem("a.*.com"),
            Some("only a leading `*.` is a wildcard")
        );
        assert_eq!(egress_entry_problem("*."), Some("it names no host"));
        assert_eq!(egress_entry_problem("*.example.com"), None);
        assert_eq!(egress_entry_problem("10.0.0.1"), None);
        assert_eq!(
            egress_entry_problem(&"a".repeat(254)),
            Some("a host name has at most 253 characters")
        );
    }
}
