//! MCP servers users define for their own operations, within the server's policy: a user
//! names a Streamable HTTP endpoint on an origin the admin allows (`rein serve
//! --user-mcp-origin`) and the headers to send it; the headers are sealed with the server's
//! secret key ([`crate::secrets`]) as provider keys are. Only that user's operations are
//! offered its tools. A process connects to a user's server when one of their operations
//! first needs it and keeps the connection a while for the next ([`OwnMcp::tools_for`]); no
//! user runs a program on the server.

use crate::secrets::{SecretError, SecretKey};
use rein_store::{OwnMcpServer, OwnMcpServers, SealedFor, StoreError};
use rein_tools::ToolRegistry;
use rein_tools::mcp::{McpServer, McpServerConfig, McpTransport};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Headers a user may not set: the transport's own.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "mcp-protocol-version",
    "mcp-session-id",
    "transfer-encoding",
];

/// At most this many headers per server.
pub const MAX_HEADERS: usize = 16;

/// How long a connection to a user's server serves new runs before the next run connects
/// again (a server restarted meanwhile has forgotten the session).
const REUSE_FOR: Duration = Duration::from_secs(300);

/// Time a user's server has to answer the handshake and the tool list.
const STARTUP: Duration = Duration::from_secs(15);

/// An origin (`scheme://host[:port]`) users' MCP servers may be on, as an admin gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpOrigin(String);

impl std::str::FromStr for McpOrigin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let origin = origin_of(s).ok_or_else(|| {
            format!(
                "`{s}` is not an origin: give http:// or https:// and a host, with an optional port"
            )
        })?;
        if origin != s.trim_end_matches('/').to_ascii_lowercase() {
            return Err(format!(
                "`{s}` is not an origin: give only the scheme, host and port (`{origin}`)"
            ));
        }
        Ok(Self(origin))
    }
}

impl std::fmt::Display for McpOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `scheme://host[:port]` of an http(s) URL, lower-cased; `None` when it is not one (or
/// names credentials).
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    Some(format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// What a user defines for a server: its endpoint and the headers to send it.
#[derive(Clone, Debug, Default)]
pub struct Define {
    /// Its Streamable HTTP endpoint.
    pub url: String,
    /// Request headers (`Authorization`, ...), sealed when stored.
    pub headers: BTreeMap<String, String>,
}

/// Why a user's MCP server was not stored (or cannot be used).
#[derive(Debug, thiserror::Error)]
pub enum DefineRefusal {
    /// This server lets users define no MCP servers.
    #[error(
        "this server does not let users define MCP servers (its admin allows origins with `rein serve --user-mcp-origin`)"
    )]
    NotServed,
    /// The name is not one a tool can have.
    #[error(
        "MCP server name `{0}`: use 1 to 32 lower-case letters, digits and `-`, starting with a letter"
    )]
    BadName(String),
    /// A tool of this server has the name.
    #[error("`{0}` is the name of one of this server's tools; choose another")]
    NameTaken(String),
    /// The URL is not an http(s) URL.
    #[error("MCP server URL `{given}`: {why}")]
    BadUrl {
        /// The URL (its start).
        given: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The URL's origin is not one the admin allows.
    #[error("MCP servers on {origin} are not allowed here; allowed: {allowed}")]
    OriginNotAllowed {
        /// The URL's origin.
        origin: String,
        /// The origins allowed, comma-separated.
        allowed: String,
    },
    /// A header is unusable.
    #[error("header `{name}`: {why}")]
    BadHeader {
        /// Its name (its start).
        name: String,
        /// What is wrong.
        why: &'static str,
    },
    /// Too many headers.
    #[error("at most {MAX_HEADERS} headers")]
    TooManyHeaders,
    /// The server did not answer the handshake and tool list.
    #[error("{0}")]
    Unreachable(String),
    /// Sealing the headers failed.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The names [`check_name`] takes, as a JSON Schema pattern.
pub const NAME_PATTERN: &str = "^[a-z][a-z0-9-]{0,31}$";

/// Whether `name` can name a user's MCP server: it becomes a tool identifier and the start of
/// each of its tools' wire names (`NAME__tool`).
pub fn check_name(name: &str) -> Result<(), DefineRefusal> {
    let ok = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(DefineRefusal::BadName(name.chars().take(64).collect()))
    }
}

fn check_header(name: &str, value: &str) -> Result<(), DefineRefusal> {
    let bad = |why| DefineRefusal::BadHeader {
        name: name.chars().take(64).collect(),
        why,
    };
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || name.len() > 64 || !name.bytes().all(token) {
        return Err(bad(
            "a header name is 1 to 64 letters, digits or !#$%&'*+-.^_`|~",
        ));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(bad("the MCP transport sets it"));
    }
    if value.len() > 4096 {
        return Err(bad("its value is longer than 4096 bytes"));
    }
    if !value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return Err(bad("its value has control or non-ASCII characters"));
    }
    Ok(())
}

/// A connection kept for the next runs of a user's server, as defined when it was made.
struct Connected {
    url: String,
    updated_at: chrono::DateTime<chrono::Utc>,
    at: Instant,
    server: Arc<McpServer>,
}

/// The tools of an operation's owner's MCP servers, for one run.
#[derive(Default)]
pub struct OwnTools {
    /// The servers that answered, as tools.
    pub(crate) registry: ToolRegistry,
    /// The servers that did not, by name, with why.
    pub(crate) unreachable: BTreeMap<String, String>,
}

impl OwnTools {
    /// Whether the owner has no servers.
    pub fn is_empty(&self) -> bool {
        self.registry.manifests().is_empty() && self.unreachable.is_empty()
    }

    /// The servers' manifests, by identifier.
    pub fn manifests(&self) -> Vec<rein_core::tool::ToolManifest> {
        self.registry.manifests()
    }

    /// The servers that did not answer, by name, with why.
    pub fn unreachable(&self) -> &BTreeMap<String, String> {
        &self.unreachable
    }
}

/// Users' MCP servers in this process: the policy, the secret key that seals their headers,
/// and the connections kept.
pub struct OwnMcp {
    secret: Option<SecretKey>,
    origins: Vec<McpOrigin>,
    connected: Mutex<HashMap<(String, String), Connected>>,
}

impl OwnMcp {
    /// Users may define servers on `origins` (none: they define none); their headers are
    /// sealed and opened with `secret`.
    pub fn new(secret: Option<SecretKey>, origins: Vec<McpOrigin>) -> Self {
        Self {
            secret,
            origins,
            connected: Mutex::default(),
        }
    }

    /// Whether users may define servers here.
    pub fn serves(&self) -> bool {
        self.secret.is_some() && !self.origins.is_empty()
    }

    /// The origins users' servers may be on.
    pub fn origins(&self) -> &[McpOrigin] {
        &self.origins
    }

    /// Store `owner`'s server `name` as `define` says, replacing theirs of that name, once it
    /// answered the handshake and listed its tools (their names are returned); `taken` says
    /// whether one of this process's tools has the name.
    pub async fn define(
        &self,
        store: &(dyn OwnMcpServers + Sync),
        owner: &str,
        name: &str,
        define: Define,
        taken: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<(OwnMcpServer, Vec<String>), DefineRefusal> {
        let Some(secret) = self.secret.as_ref().filter(|_| self.serves()) else {
            return Err(DefineRefusal::NotServed);
        };
        check_name(name)?;
        if taken(name) {
            return Err(DefineRefusal::NameTaken(name.to_owned()));
        }
        self.check_url(&define.url)?;
        if define.headers.len() > MAX_HEADERS {
            return Err(DefineRefusal::TooManyHeaders);
        }
        for (k, v) in &define.headers {
            check_header(k, v)?;
        }
        let server = McpServer::connect(config(name, &define.url, define.headers.clone()))
            .await
            .map_err(|e| DefineRefusal::Unreachable(e.to_string()))?;
        let tools = rein_tools::Tool::manifest(&*server)
            .apis
            .into_iter()
            .map(|a| a.name)
            .collect();
        let headers = if define.headers.is_empty() {
            None
        } else {
            let json = serde_json::to_string(&define.headers)
                .map_err(|e| StoreError::corrupt("MCP server headers", e))?;
            let label = SealedFor::McpServer(name.to_owned()).label();
            Some(secret.seal(owner, &label, &json)?)
        };
        let own = OwnMcpServer {
            name: name.to_owned(),
            url: define.url,
            header_names: define.headers.into_keys().collect(),
            headers,
            updated_at: chrono::Utc::now(),
        };
        store.put_own_mcp_server(owner, &own).await?;
        self.keep(owner, &own, server);
        Ok((own, tools))
    }

    fn check_url(&self, url: &str) -> Result<(), DefineRefusal> {
        let bad = |why| DefineRefusal::BadUrl {
            given: url.chars().take(120).collect(),
            why,
        };
        if url.len() > 2048 {
            return Err(bad("longer than 2048 bytes"));
        }
        if !url.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad("it has spaces, control or non-ASCII characters"));
        }
        let origin = origin_of(url).ok_or_else(|| {
            bad("it must be http:// or https:// with a host, without credentials")
        })?;
        if self.origins.iter().any(|o| o.0 == origin) {
            Ok(())
        } else {
            Err(DefineRefusal::OriginNotAllowed {
                origin,
                allowed: self
                    .origins
                    .iter()
                    .map(|o| o.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }

    fn keep(&self, owner: &str, own: &OwnMcpServer, server: Arc<McpServer>) {
        let mut map = self.connected.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, c| c.at.elapsed() < REUSE_FOR);
        map.insert(
            (owner.to_owned(), own.name.clone()),
            Connected {
                url: own.url.clone(),
                updated_at: own.updated_at,
                at: Instant::now(),
                server,
            },
        );
    }

    /// Forget the connection to `owner`'s server `name` (it was deleted).
    pub fn forget(&self, owner: &str, name: &str) {
        let mut map = self.connected.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&(owner.to_owned(), name.to_owned()));
    }

    /// The tools of `owner`'s servers that `wanted` names, for one run: a kept connection where the server is as
    /// defined when it was made, else a new one. A server that does not answer (or whose
    /// origin is no longer allowed, or whose headers do not open) is listed with why; a
    /// server named as one of this process's tools (`taken`) is left out, named.
    pub async fn tools_for(
        &self,
        store: &(dyn OwnMcpServers + Sync),
        owner: Option<&str>,
        wanted: &(dyn Fn(&str) -> bool + Sync),
        taken: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<OwnTools, StoreError> {
        let mut out = OwnTools::default();
        let Some(owner) = owner else {
            return Ok(out);
        };
        let defined = store.own_mcp_servers(owner).await?;
        for own in defined.into_iter().filter(|s| wanted(&s.name)) {
            match self.connection(owner, &own, taken).await {
                Ok(server) => {
                    if let Err(e) = out.registry.register(server) {
                        out.unreachable.insert(own.name, e.to_string());
                    }
                }
                Err(why) => {
                    out.unreachable.insert(own.name, why);
                }
            }
        }
        Ok(out)
    }

    async fn connection(
        &self,
        owner: &str,
        own: &OwnMcpServer,
        taken: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Arc<McpServer>, String> {
        if taken(&own.name) {
            return Err(format!(
                "this server has a tool named `{}` now; rename yours",
                own.name
            ));
        }
        self.check_url(&own.url).map_err(|e| e.to_string())?;
        {
            let map = self.connected.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = map.get(&(owner.to_owned(), own.name.clone()))
                && c.url == own.url
                && c.updated_at == own.updated_at
                && c.at.elapsed() < REUSE_FOR
            {
                return Ok(Arc::clone(&c.server));
            }
        }
        let headers = match &own.headers {
            None => BTreeMap::new(),
            Some(sealed) => {
                let secret = self
                    .secret
                    .as_ref()
                    .ok_or_else(|| SecretError::NoKey.to_string())?;
                let label = SealedFor::McpServer(own.name.clone()).label();
                let json = secret
                    .open(owner, &label, sealed)
                    .map_err(|e| e.to_string())?;
                serde_json::from_str(&json)
                    .map_err(|e| format!("its stored headers cannot be read: {e}"))?
            }
        };
        let server = McpServer::connect(config(&own.name, &own.url, headers))
            .await
            .map_err(|e| e.to_string())?;
        self.keep(owner, own, Arc::clone(&server));
        Ok(server)
    }
}

fn config(name: &str, url: &str, headers: BTreeMap<String, String>) -> McpServerConfig {
    let mut c = McpServerConfig::http(name, url);
    c.transport = McpTransport::Http {
        url: url.to_owned(),
        headers,
    };
    c.startup_timeout = STARTUP;
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_names_and_headers_are_checked_before_anything_connects() {
        let origin: McpOrigin = "http://127.0.0.1:3001".parse().unwrap();
        assert_eq!(origin.to_string(), "http://127.0.0.1:3001");
        assert!("HTTPS://Mcp.Example".parse::<McpOrigin>().is_ok());
        for bad in [
            "127.0.0.1:3001",
            "ftp://x",
            "http://",
            "http://a@b",
            "http://x/mcp",
        ] {
            assert!(bad.parse::<McpOrigin>().is_err(), "{bad}");
        }
        let own = OwnMcp::new(SecretKey::generate().ok(), vec![origin]);
        assert!(own.check_url("http://127.0.0.1:3001/mcp?x=1").is_ok());
        for (url, refused) in [
            ("http://127.0.0.1:3002/mcp", "not allowed here"),
            ("http://user@127.0.0.1:3001/mcp", "without credentials"),
            ("http://127.0.0.1:3001/m cp", "spaces"),
            ("file:///etc/passwd", "http:// or https://"),
        ] {
            let e = own.check_url(url).unwrap_err().to_string();
            assert!(e.contains(refused), "{url}: {e}");
        }
        for name in ["issues", "a", "gh-2"] {
            assert!(check_name(name).is_ok(), "{name}");
        }
        for name in ["", "Issues", "2x", "a_b", "a__b", &"x".repeat(33)] {
            assert!(check_name(name).is_err(), "{name}");
        }
        assert!(check_header("Authorization", "Bearer x").is_ok());
        for (k, v) in [
            ("Host", "x"),
            ("mcp-session-id", "x"),
            ("Bad Name", "x"),
            ("X-Key", "a\r\nInjected: 1"),
        ] {
            assert!(check_header(k, v).is_err(), "{k}: {v:?}");
        }
    }
}
