//! MCP client (rmcp), over stdio or Streamable HTTP: an MCP server's tools as one rein tool
//! named after the server (`<server>__<tool>` on the wire). The server is started with a timeout and a clear error
//! when it fails; its stderr goes to the log; a `notifications/tools/list_changed` makes the
//! next call re-list the tools; the child process is killed when the tool is dropped (with the
//! driver that owns it). A server that stopped (its process exited, its stream closed) or let a
//! call time out is started afresh for the next call: the call it failed stays failed (it may
//! have taken effect; it is not repeated), and a long-lived `rein serve` does not keep a dead
//! server's tools failing until it restarts.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolFile, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// How to reach one MCP server.
#[derive(Clone, Debug)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// Program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
    },
    /// A Streamable HTTP endpoint (plain `http://`; TLS endpoints are not supported yet).
    Http {
        /// The endpoint URL (`http://127.0.0.1:3001/mcp`).
        url: String,
        /// Extra request headers (`Authorization`, ...).
        headers: BTreeMap<String, String>,
    },
}

/// One MCP server.
#[derive(Clone, Debug)]
pub struct McpServerConfig {
    /// Name: the tool identifier its tools are namespaced by.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Time allowed for start-up, the handshake and the first tool list.
    pub startup_timeout: Duration,
    /// Time allowed for one tool call.
    pub call_timeout: Duration,
}

impl McpServerConfig {
    /// A server started by `command args...`, with 30 s to start and 120 s per call.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: &[&str]) -> Self {
        Self::new(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                env: BTreeMap::new(),
            },
        )
    }

    /// A Streamable HTTP server at `url`, with 30 s to connect and 120 s per call.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(120),
        }
    }
}

/// Why an MCP server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The program did not start.
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        /// Server name.
        server: String,
        /// Program.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The configuration is unusable (a header that is not valid HTTP).
    #[error("MCP server `{server}`: {message}")]
    Config {
        /// Server name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The handshake or the tool list failed.
    #[error("MCP server `{server}`: {what} failed: {message}")]
    Protocol {
        /// Server name.
        server: String,
        /// Which step.
        what: &'static str,
        /// The error.
        message: String,
    },
    /// Start-up took too long.
    #[error("MCP server `{server}` did not start within {secs} s")]
    StartupTimeout {
        /// Server name.
        server: String,
        /// The limit.
        secs: u64,
    },
}

/// Marks the tool list stale when the server says it changed.
struct Listener {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// A connected MCP server, usable as a rein tool.
pub struct McpServer {
    config: McpServerConfig,
    /// The connection of the moment, replaced when it stopped being usable.
    connection: tokio::sync::RwLock<Connection>,
    tools: RwLock<Vec<rmcp::model::Tool>>,
    /// Set by the server's `tools/list_changed`, on whichever connection it came.
    stale: Arc<AtomicBool>,
    /// The stdio server's process id (0: none).
    pid: AtomicU32,
}

/// One session with the server (for stdio, one process).
struct Connection {
    service: RunningService<RoleClient, Listener>,
    /// A call on it timed out: the server may be hung, so the next call starts it afresh.
    timed_out: AtomicBool,
}

impl Connection {
    /// Whether the next call may use it: its session is still running and nothing suggests
    /// the server hung.
    fn usable(&self) -> bool {
        !self.service.is_closed()
            && !self.service.peer().is_transport_closed()
            && !self.timed_out.load(Ordering::SeqCst)
    }
}

/// The HTTP client for Streamable HTTP servers. rustls needs a crypto provider; rein uses ring
/// (as the model client does) unless the embedding program installed another one first.
fn http_client() -> Result<reqwest_mcp::Client, reqwest_mcp::Error> {
    // `Err` means a provider is already installed, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest_mcp::Client::builder().build()
}

impl McpServer {
    /// Start (or reach) the server, handshake, and list its tools.
    pub async fn connect(config: McpServerConfig) -> Result<Arc<Self>, McpError> {
        let stale = Arc::new(AtomicBool::new(false));
        let (connection, tools, pid) = Self::open(&config, Arc::clone(&stale)).await?;
        Ok(Arc::new(Self {
            config,
            connection: tokio::sync::RwLock::new(connection),
            tools: RwLock::new(tools),
            stale,
            pid: AtomicU32::new(pid.unwrap_or(0)),
        }))
    }

    /// One session: the process started (stdio) or the endpoint reached, the handshake done
    /// and the tools listed; with the process id of a stdio server.
    async fn open(
        config: &McpServerConfig,
        stale: Arc<AtomicBool>,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>, Option<u32>), McpError> {
        let server = config.name.clone();
        match &config.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        server: server.clone(),
                        command: command.clone(),
                        source,
                    })?;
                let pid = transport.id();
                if let Some(stderr) = stderr {
                    tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tracing::info!(mcp_server = %server, "{line}");
                        }
                    });
                }
                let (connection, tools) = Self::start(config, transport, stale).await?;
                Ok((connection, tools, pid))
            }
            McpTransport::Http { url, headers } => {
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(McpError::Config {
                        server,
                        message: format!("`{url}` is not an http:// or https:// URL"),
                    });
                }
                let mut custom = std::collections::HashMap::new();
                for (k, v) in headers {
                    let bad = |what: &str| McpError::Config {
                        server: server.clone(),
                        message: format!("header `{k}`: invalid {what}"),
                    };
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|_| bad("name"))?;
                    let value =
                        reqwest::header::HeaderValue::from_str(v).map_err(|_| bad("value"))?;
                    custom.insert(name, value);
                }
                let mut http = StreamableHttpClientTransportConfig::with_uri(url.clone());
                http.custom_headers = custom;
                let client = http_client().map_err(|e| McpError::Config {
                    server: server.clone(),
                    message: format!("cannot set up an HTTPS client: {e}"),
                })?;
                let transport = StreamableHttpClientTransport::with_client(client, http);
                let (connection, tools) = Self::start(config, transport, stale).await?;
                Ok((connection, tools, None))
            }
        }
    }

    async fn start<T, E, A>(
        config: &McpServerConfig,
        transport: T,
        stale: Arc<AtomicBool>,
    ) -> Result<(Connection, Vec<rmcp::model::Tool>), McpError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let server = config.name.clone();
        let listener = Listener { stale };
        let secs = config.startup_timeout.as_secs();
        let timeout = |_| McpError::StartupTimeout {
            server: server.clone(),
            secs,
        };
        let service = tokio::time::timeout(config.startup_timeout, listener.serve(transport))
            .await
            .map_err(timeout)?
            .map_err(|e| McpError::Protocol {
                server: server.clone(),
                what: "initialize",
                message: e.to_string(),
            })?;
        let tools = tokio::time::timeout(config.startup_timeout, service.list_all_tools())
            .await
            .map_err(timeout)?
            .map_err(|e| McpError::Protocol {
                server: server.clone(),
                what: "tools/list",
                message: e.to_string(),
            })?;
        let connection = Connection {
            service,
            timed_out: AtomicBool::new(false),
        };
        Ok((connection, tools))
    }

    /// The server process id (stdio servers): of the process started last.
    pub fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::SeqCst)).filter(|p| *p != 0)
    }

    /// The connection to call on: the current one while usable, else a new one (the old
    /// session is dropped, which stops its process).
    async fn usable_connection(
        &self,
    ) -> Result<tokio::sync::RwLockReadGuard<'_, Connection>, McpError> {
        {
            let current = self.connection.read().await;
            if current.usable() {
                return Ok(current);
            }
        }
        let mut current = self.connection.write().await;
        // Another call may have started it afresh meanwhile.
        if !current.usable() {
            tracing::warn!(mcp_server = %self.config.name, "the MCP server stopped or stopped answering; starting it again");
            let (fresh, tools, pid) = Self::open(&self.config, Arc::clone(&self.stale)).await?;
            if let Ok(mut t) = self.tools.write() {
                *t = tools;
            }
            self.pid.store(pid.unwrap_or(0), Ordering::SeqCst);
            *current = fresh;
        }
        Ok(current.downgrade())
    }

    /// Names of the server's tools as last listed.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools
            .read()
            .map(|t| t.iter().map(|t| t.name.to_string()).collect())
            .unwrap_or_default()
    }

    /// Re-list the tools after the server said they changed, within the call's limit (a
    /// server that does not answer is treated as hung: `Err` says so, and the next call starts
    /// it afresh).
    async fn refresh_if_stale(&self, connection: &Connection) -> Result<(), String> {
        if !self.stale.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let listed = tokio::time::timeout(
            self.config.call_timeout,
            connection.service.list_all_tools(),
        )
        .await;
        match listed {
            Ok(Ok(tools)) => {
                if let Ok(mut t) = self.tools.write() {
                    *t = tools;
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(mcp_server = %self.config.name, error = %e, "tools/list refresh failed")
            }
            Err(_) => {
                connection.timed_out.store(true, Ordering::SeqCst);
                return Err(format!(
                    "MCP server `{}` did not list its changed tools within {} s (it is started afresh for the next call).",
                    self.config.name,
                    self.config.call_timeout.as_secs()
                ));
            }
        }
        Ok(())
    }
}

/// A call result as the model reads it: text blocks in order, images and audio as files
/// (kept as artifacts; a model that can see is shown the images) with a line where each
/// stood, other blocks as JSON, structured content as JSON when there is no text.
fn render(result: CallToolResult) -> ToolOutput {
    let mut parts = Vec::new();
    let mut files = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => {
                parts.push(media_file(&mut files, "image", &i.mime_type, &i.data))
            }
            ContentBlock::Audio(a) => {
                parts.push(media_file(&mut files, "audio", &a.mime_type, &a.data))
            }
            other => parts.push(serde_json::to_string(other).unwrap_or_default()),
        }
    }
    if parts.is_empty()
        && let Some(v) = &result.structured_content
    {
        parts.push(v.to_string());
    }
    let text = parts.join("\n");
    let mut out = if result.is_error == Some(true) {
        ToolOutput::failed(text)
    } else {
        ToolOutput::ok(text)
    };
    out.files = files;
    out
}

/// A server's base64 image or audio block as a file of the call (`image-1.png`), and the line
/// the result reads where it stood; data that is not base64 is only described.
fn media_file(files: &mut Vec<ToolFile>, kind: &str, media_type: &str, data: &str) -> String {
    use base64::Engine;
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data.trim()) else {
        return format!("[{kind}: {media_type}, not valid base64]");
    };
    let extension = media_type
        .split_once('/')
        .map(|(_, sub)| sub.split(['+', ';']).next().unwrap_or(sub))
        .filter(|sub| !sub.is_empty() && sub.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or("bin");
    let name = format!("{kind}-{}.{extension}", files.len() + 1);
    let line = format!("[{kind}: {name}, {media_type}, {} bytes]", bytes.len());
    files.push(ToolFile {
        name,
        media_type: media_type.to_owned(),
        bytes,
    });
    line
}

impl Tool for McpServer {
    fn manifest(&self) -> ToolManifest {
        let tools = self.tools.read().map(|t| t.clone()).unwrap_or_default();
        ToolManifest {
            identifier: self.config.name.clone(),
            kind: ToolKind::Mcp,
            title: self.config.name.clone(),
            description: format!("Tools of the MCP server `{}`.", self.config.name),
            system_role: None,
            apis: tools
                .iter()
                .map(|t| ToolApi {
                    name: t.name.to_string(),
                    description: t.description.as_deref().unwrap_or_default().to_owned(),
                    parameters: serde_json::Value::Object((*t.input_schema).clone()),
                    intervention: None,
                    cost: None,
                })
                .collect(),
            intervention: None,
        }
    }

    fn effect(&self, api: &str) -> Effect {
        // Only a server's own read-only hint makes a call safe to repeat after a crash.
        let read_only = self.tools.read().ok().is_some_and(|t| {
            t.iter().any(|t| {
                t.name == api
                    && t.annotations
                        .as_ref()
                        .and_then(|a| a.read_only_hint)
                        .unwrap_or(false)
            })
        });
        if read_only {
            Effect::Pure
        } else {
            Effect::AtMostOnce
        }
    }

    fn call<'a>(
        &'a self,
        _cx: &'a ToolContext,
        api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let connection = match self.usable_connection().await {
                Ok(c) => c,
                Err(e) => {
                    return Ok(ToolOutput::failed(format!(
                        "MCP server `{}` stopped and could not be started again: {e}",
                        self.config.name
                    )));
                }
            };
            if let Err(hung) = self.refresh_if_stale(&connection).await {
                return Ok(ToolOutput::failed(hung));
            }
            let mut params = CallToolRequestParams::new(api.to_owned());
            if let serde_json::Value::Object(map) = args {
                params = params.with_arguments(map);
            }
            let answer =
                tokio::time::timeout(self.config.call_timeout, connection.service.call_tool(params))
                    .await;
            match answer {
                Err(_) => {
                    connection.timed_out.store(true, Ordering::SeqCst);
                    Ok(ToolOutput::failed(format!(
                        "MCP server `{}` did not answer `{api}` within {} s (it is started afresh for the next call).",
                        self.config.name,
                        self.config.call_timeout.as_secs()
                    )))
                }
                Ok(Err(e)) => Ok(ToolOutput::failed(format!(
                    "MCP server `{}` failed on `{api}`: {e}",
                    self.config.name
                ))),
                Ok(Ok(result)) => Ok(render(result)),
            }
        }
        .boxed()
    }
}
