//! `rein connect`: this machine joins a `rein serve` as a device. It holds a WebSocket to the
//! server (reconnecting with backoff), announces the tools it runs (`files`, `shell`, and the
//! MCP servers configured here) confined to its working directory, and runs the calls the
//! server sends: each checked again here (its arguments, the command guard, the sandbox), each
//! recorded in a ledger before it runs, so a call that arrives twice (a reconnect) is answered
//! from the ledger and never run twice, and a result the server has not confirmed is sent
//! again after a reconnect. `--daemon` detaches it, logging to a file.

mod ledger;
mod work;

use anyhow::{Context, anyhow, bail};
use futures::{SinkExt, StreamExt};
use ledger::Ledger;
use rein_core::spec::Sandbox;
use rein_server::devices::protocol::{DeviceMessage, ServerMessage};
use rein_tools::ToolRegistry;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// `rein connect` options (the server is the global `--server URL`; the device token is
/// `$REIN_TOKEN`).
#[derive(clap::Args)]
pub struct ConnectArgs {
    /// This device's name: the one its token was created for (`rein token create --device`);
    /// this machine's host name when omitted.
    #[arg(long)]
    pub name: Option<String>,
    /// The directory its tools work in (default: the current one).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Run in the background, logging to `--log` (default `$REIN_HOME/devices/NAME.log`).
    #[arg(long)]
    pub daemon: bool,
    /// Where `--daemon` logs.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

/// How a connection ended.
enum Ended {
    /// The server refused this device (revoked, wrong name): do not come back.
    Refused(String),
    /// The connection dropped: come back.
    Lost(String),
}

/// `rein connect`.
pub async fn connect(
    server: &str,
    args: ConnectArgs,
    given: &crate::Invocation,
) -> anyhow::Result<u8> {
    let name = match &args.name {
        Some(n) => n.clone(),
        None => host_name()
            .ok_or_else(|| anyhow!("this machine's host name cannot name a device: give --name"))?,
    };
    if !rein_core::spec::valid_device_name(&name) {
        bail!("--name `{name}`: use 1-64 letters, digits, `-`, `_` or `.`");
    }
    let token = std::env::var(rein_operation::env::TOKEN)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            anyhow!(
                "set REIN_TOKEN to a device token (`rein token create --user NAME --device {name}`)"
            )
        })?;
    let url = socket_url(server)?;
    let workdir = match &args.workdir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    let workdir = std::fs::canonicalize(&workdir)
        .with_context(|| format!("--workdir {}", workdir.display()))?;
    if !workdir.is_dir() {
        bail!("--workdir {}: not a directory", workdir.display());
    }
    let home = rein_operation::settings::data_dir()?.join("devices");
    std::fs::create_dir_all(&home)?;
    if args.daemon {
        return daemonize(&args, &name, &home);
    }
    let mut tools = ToolRegistry::new();
    tools.register(Arc::new(rein_tools::files::Files))?;
    tools.register(Arc::new(rein_tools::shell::Shell::new(Default::default())))?;
    for (name, entry) in given.config.mcp(&given.mcp)? {
        tools.register(rein_tools::mcp::McpServer::connect(entry.server(&name)?).await?)?;
    }
    let device = Device {
        name: name.clone(),
        tools,
        external: given.config.external_agents(true)?,
        workdir,
        sandbox: given.sandbox,
        ledger: Ledger::open(&home.join(format!("{name}.ledger")))?,
    };
    eprintln!(
        "rein: {}",
        rein_tools::sandbox::Mechanism::detect().describe(device.sandbox)
    );
    let mut backoff = Duration::from_secs(1);
    let mut device = device;
    loop {
        match device.session(&url, &token).await {
            Ok(Ended::Refused(reason)) => bail!("the server refused this device: {reason}"),
            Ok(Ended::Lost(why)) | Err(ConnectError::Lost(why)) => {
                eprintln!(
                    "rein: connection lost ({why}); reconnecting in {} s",
                    backoff.as_secs()
                );
            }
            Err(ConnectError::Fatal(e)) => return Err(e),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

/// This machine's host name, if it can name a device.
fn host_name() -> Option<String> {
    let name = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())?;
    let name = name.trim().to_owned();
    rein_core::spec::valid_device_name(&name).then_some(name)
}

/// `ws://` or `wss://` for the server's `http://` or `https://` URL.
fn socket_url(server: &str) -> anyhow::Result<String> {
    let base = server.trim_end_matches('/');
    let rest = if let Some(r) = base.strip_prefix("https://") {
        format!("wss://{r}")
    } else if let Some(r) = base.strip_prefix("http://") {
        format!("ws://{r}")
    } else {
        bail!("--server `{server}` is not an http:// or https:// URL");
    };
    Ok(format!("{rest}/v1/devices/connect"))
}

/// Start this command again in the background (without `--daemon`), its output to the log.
fn daemonize(args: &ConnectArgs, name: &str, home: &Path) -> anyhow::Result<u8> {
    let log_path = args
        .log
        .clone()
        .unwrap_or_else(|| home.join(format!("{name}.log")));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open the log {}", log_path.display()))?;
    let argv: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--daemon")
        .collect();
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(argv)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd.spawn().context("cannot start the background process")?;
    let pid_file = home.join(format!("{name}.pid"));
    std::fs::write(&pid_file, format!("{}\n", child.id()))?;
    eprintln!(
        "rein: device {name} connecting in the background (pid {}), logging to {}",
        child.id(),
        log_path.display()
    );
    Ok(crate::exit::DONE)
}

/// Why a session could not go on.
enum ConnectError {
    /// Try again.
    Lost(String),
    /// Stop (a token the server does not take).
    Fatal(anyhow::Error),
}

/// What this device is and keeps.
struct Device {
    name: String,
    tools: ToolRegistry,
    /// The external agents it runs for `external:KIND@NAME` operations.
    external: rein_operation::external::ExternalAgents,
    workdir: PathBuf,
    sandbox: Sandbox,
    ledger: Ledger,
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(ws: &mut Socket, m: &DeviceMessage) -> Result<(), ConnectError> {
    let text = serde_json::to_string(m).map_err(|e| ConnectError::Fatal(e.into()))?;
    ws.send(Message::text(text))
        .await
        .map_err(|e| ConnectError::Lost(e.to_string()))
}

impl Device {
    /// One connection, until it ends.
    async fn session(&mut self, url: &str, token: &str) -> Result<Ended, ConnectError> {
        let mut request = url
            .into_client_request()
            .map_err(|e| ConnectError::Fatal(anyhow!("{url}: {e}")))?;
        let bearer = format!("Bearer {token}")
            .parse()
            .map_err(|_| ConnectError::Fatal(anyhow!("REIN_TOKEN is not a valid header value")))?;
        request.headers_mut().insert("authorization", bearer);
        let (mut ws, _) = match tokio_tungstenite::connect_async(request).await {
            Ok(c) => c,
            Err(tokio_tungstenite::tungstenite::Error::Http(resp))
                if resp.status().as_u16() == 401 =>
            {
                return Err(ConnectError::Fatal(anyhow!(
                    "the server does not take this token (a device token from `rein token create --device {}`, not revoked)",
                    self.name
                )));
            }
            Err(e) => return Err(ConnectError::Lost(e.to_string())),
        };
        let hello = DeviceMessage::Hello {
            name: self.name.clone(),
            tools: self.tools.manifests(),
            workdir: Some(self.workdir.display().to_string()),
            platform: Some(format!(
                "{}-{}",
                std::env::consts::OS,
                std::env::consts::ARCH
            )),
        };
        send(&mut ws, &hello).await?;
        // What the agents this device runs print, sent as it comes.
        let (out, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<DeviceMessage>();
        let mut agents: HashMap<rein_core::OperationId, Arc<tokio::sync::Notify>> = HashMap::new();
        let ended = self
            .frames(&mut ws, url, &out, &mut outgoing, &mut agents)
            .await;
        // Agents are not left running without a connection to report to.
        for stop in agents.values() {
            stop.notify_one();
        }
        ended
    }

    /// Serve one connection's frames until it ends.
    async fn frames(
        &mut self,
        ws: &mut Socket,
        url: &str,
        out: &tokio::sync::mpsc::UnboundedSender<DeviceMessage>,
        outgoing: &mut tokio::sync::mpsc::UnboundedReceiver<DeviceMessage>,
        agents: &mut HashMap<rein_core::OperationId, Arc<tokio::sync::Notify>>,
    ) -> Result<Ended, ConnectError> {
        let mut welcomed = false;
        loop {
            let frame = tokio::select! {
                m = outgoing.recv() => {
                    if let Some(m) = m {
                        if let DeviceMessage::AgentEnded { operation_id, .. } = &m {
                            agents.remove(operation_id);
                        }
                        send(ws, &m).await?;
                    }
                    continue;
                }
                frame = ws.next() => frame,
            };
            let Some(frame) = frame else { break };
            let text = match frame {
                Ok(Message::Text(t)) => t,
                Ok(Message::Close(_)) => break,
                Ok(_) => continue,
                Err(e) => return Ok(Ended::Lost(e.to_string())),
            };
            let Ok(message) = serde_json::from_str::<ServerMessage>(text.as_str()) else {
                continue;
            };
            match message {
                ServerMessage::Welcome { .. } => {
                    if !welcomed {
                        welcomed = true;
                        eprintln!("rein: device {} connected to {url}", self.name);
                        // What the server may not have recorded before the last connection
                        // dropped.
                        for m in self.ledger.unsettled() {
                            send(ws, &m).await?;
                        }
                    }
                }
                ServerMessage::Refused { reason } => return Ok(Ended::Refused(reason)),
                ServerMessage::Settled { call_id } => self.ledger.settle(&call_id),
                ServerMessage::Call(call) => {
                    let answer = match self.ledger.outcome(&call.call_id) {
                        Some(known) => known,
                        None => {
                            self.ledger
                                .start(&call)
                                .map_err(|e| ConnectError::Fatal(e.into()))?;
                            send(
                                ws,
                                &DeviceMessage::Ack {
                                    call_id: call.call_id.clone(),
                                },
                            )
                            .await?;
                            let (success, content) = self.run(&call).await;
                            self.ledger
                                .finish(&call, success, &content)
                                .map_err(|e| ConnectError::Fatal(e.into()))?;
                            if drop_for_test() {
                                return Ok(Ended::Lost("dropped for a test".into()));
                            }
                            DeviceMessage::Result {
                                operation_id: call.operation_id,
                                call_id: call.call_id.clone(),
                                success,
                                content,
                            }
                        }
                    };
                    send(ws, &answer).await?;
                }
                ServerMessage::RunAgent(start) => {
                    let op = start.operation_id;
                    agents.insert(op, self.start_agent(start, out.clone()));
                }
                ServerMessage::StopAgent { operation_id } => {
                    if let Some(stop) = agents.get(&operation_id) {
                        stop.notify_one();
                    }
                }
            }
        }
        Ok(Ended::Lost("the server closed the connection".into()))
    }
}

/// Test support: with `REIN_TEST_DEVICE_DROP=1`, the first call's connection drops after the
/// call ran and its result was recorded, before the result is sent (only in builds with the
/// `test-hooks` feature).
fn drop_for_test() -> bool {
    #[cfg(feature = "test-hooks")]
    {
        static DROPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        std::env::var(rein_operation::env::test::DEVICE_DROP).is_ok_and(|v| v == "1")
            && !DROPPED.swap(true, std::sync::atomic::Ordering::SeqCst)
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::spec::{Sandbox, SandboxMode};
    use rein_server::devices::protocol::DeviceCall;

    fn device(dir: &Path) -> Device {
        let mut tools = ToolRegistry::new();
        tools
            .register(Arc::new(rein_tools::shell::Shell::new(Default::default())))
            .unwrap();
        Device {
            name: "laptop".into(),
            tools,
            external: rein_operation::external::ExternalAgents::none(),
            workdir: dir.to_path_buf(),
            sandbox: Sandbox {
                mode: SandboxMode::Off,
                network: false,
            },
            ledger: Ledger::open(&dir.join("ledger")).unwrap(),
        }
    }

    fn call(command: &str, approved: bool) -> DeviceCall {
        DeviceCall {
            operation_id: rein_core::OperationId::new(),
            call_id: "c1".into(),
            tool: "shell".into(),
            api: "run".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            approved,
            sandbox: Sandbox {
                mode: SandboxMode::Off,
                network: false,
            },
        }
    }

    #[tokio::test]
    async fn the_device_checks_again_what_the_server_sent() {
        let dir =
            std::env::temp_dir().join(format!("rein-device-{}", rein_core::OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = device(&dir);
        // A command the guard flags runs only when a person approved it.
        let (ok, said) = d.run(&call("sudo rm -rf /", false)).await;
        assert!(!ok && said.contains("command guard"), "{said}");
        // A tool it does not offer, arguments that do not fit.
        let mut other = call("ls", false);
        other.tool = "files".into();
        let (ok, said) = d.run(&other).await;
        assert!(!ok && said.contains("no tool `files`"), "{said}");
        let mut bad = call("ls", false);
        bad.arguments = r#"{"command": 7}"#.into();
        let (ok, said) = d.run(&bad).await;
        assert!(!ok && said.contains("Invalid arguments"), "{said}");
        // An ordinary command runs in the working directory.
        let (ok, said) = d.run(&call("pwd", false)).await;
        assert!(ok, "{said}");
        assert!(said.contains(&dir.display().to_string()), "{said}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_ledger_answers_a_call_it_has_seen_and_forgets_it_once_settled() {
        let dir =
            std::env::temp_dir().join(format!("rein-ledger-{}", rein_core::OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ledger");
        let c = call("ls", false);
        {
            let mut l = Ledger::open(&path).unwrap();
            assert!(l.outcome("c1").is_none());
            l.start(&c).unwrap();
        }
        // The device stopped while it ran: after a restart the call is answered as
        // interrupted, never run again, and the answer is kept until the server settles it.
        let mut l = Ledger::open(&path).unwrap();
        let Some(DeviceMessage::Result {
            success, content, ..
        }) = l.outcome("c1")
        else {
            panic!("no answer")
        };
        assert!(!success && content.starts_with("Interrupted"), "{content}");
        assert_eq!(l.unsettled().len(), 1);
        l.settle("c1");
        drop(l);
        let l = Ledger::open(&path).unwrap();
        assert!(l.unsettled().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
