//! `shell`: run a command with `sh -c` in the working directory, with a timeout and capped
//! output (the head and the tail are kept). Approval is required by default, and the security
//! blacklist applies to its `command` argument; the command runs confined by the operation's
//! sandbox ([`crate::sandbox`]), with a private temporary directory (`TMPDIR`) removed after it,
//! and under a supervisor: whatever it started (in the background, in a new session, as a
//! daemon) is killed when it ends or times out (`crate::reaper`, Linux).

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::{InterventionConfig, InterventionPolicy};
use rein_core::tool::{ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Shell settings.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// Timeout when the call gives none.
    pub default_timeout: Duration,
    /// Longest timeout a call may ask for.
    pub max_timeout: Duration,
    /// Bytes kept from each of stdout and stderr (half from the start, half from the end).
    pub max_output: usize,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            max_output: 16 * 1024,
        }
    }
}

/// A command's own temporary directory (`rein-shell-PID-N` under the system's, mode 0700),
/// removed with everything in it when dropped.
struct PrivateTmp(std::path::PathBuf);

impl PrivateTmp {
    fn new() -> std::io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rein-shell-{}-{n}", std::process::id()));
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `cmd` under a supervisor that kills whatever it leaves behind ([`crate::reaper`]), the
/// command itself entering `c` (its sandbox) before it runs.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // the one way to act in the child between fork and exec
fn supervise(cmd: &mut tokio::process::Command, mut c: Option<crate::sandbox::Confinement>) {
    // SAFETY: `supervise` and `enter` only make system calls on stack values (no allocation,
    // no locks), which is what may run in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || crate::reaper::supervise(|| c.as_mut().map_or(Ok(()), |c| c.enter())));
    }
}

/// Have `cmd`'s process enter `c` before it runs the command (no supervisor off Linux).
#[cfg(all(unix, not(target_os = "linux")))]
#[allow(unsafe_code)] // the one way to act in the child between fork and exec
fn supervise(cmd: &mut tokio::process::Command, c: Option<crate::sandbox::Confinement>) {
    if let Some(mut c) = c {
        // SAFETY: `enter` only makes system calls, which is what may run after fork.
        unsafe {
            cmd.pre_exec(move || c.enter());
        }
    }
}

/// The shell tool.
pub struct Shell {
    config: ShellConfig,
}

impl Shell {
    /// A shell tool with `config`.
    pub fn new(config: ShellConfig) -> Self {
        Self { config }
    }
}

/// Keeps the first and last `cap / 2` bytes of a stream and counts what it drops.
#[derive(Default)]
struct Capped {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: usize,
}

impl Capped {
    fn push(&mut self, bytes: &[u8], cap: usize) {
        let half = cap / 2;
        for b in bytes {
            if self.head.len() < half {
                self.head.push(*b);
            } else {
                self.tail.push_back(*b);
                if self.tail.len() > half {
                    self.tail.pop_front();
                    self.dropped += 1;
                }
            }
        }
    }

    fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail);
        if self.dropped > 0 {
            format!("{head}\n[... {} bytes omitted ...]\n{tail}", self.dropped)
        } else {
            format!("{head}{tail}")
        }
    }
}

async fn drain(mut r: impl AsyncRead + Unpin, cap: usize) -> Capped {
    let mut out = Capped::default();
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        out.push(&buf[..n], cap);
    }
    out
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunArgs {
    /// The command line, run with `sh -c`
    #[schemars(length(min = 1))]
    pub(crate) command: String,
    /// Seconds before the command (and everything it started) is killed
    #[schemars(range(min = 1))]
    pub(crate) timeout_secs: Option<u64>,
}

impl ShellConfig {
    /// How long a call asking for `asked` seconds (or nothing) may run.
    pub(crate) fn timeout(&self, asked: Option<u64>) -> Duration {
        asked
            .map_or(self.default_timeout, Duration::from_secs)
            .min(self.max_timeout)
    }
}

/// Why `rein sandbox` ran nothing, or lost its command.
#[derive(Debug, thiserror::Error)]
pub enum ConfinedError {
    /// No program was given.
    #[error("no command to run")]
    NoCommand,
    /// The private temporary directory could not be made.
    #[error("cannot make the command's temporary directory: {0}; nothing was run")]
    Tmp(std::io::Error),
    /// The sandbox cannot be had here.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// The program did not start.
    #[error("cannot start `{program}` in its sandbox ({mode}): {source}; nothing was run")]
    Start {
        /// The program.
        program: String,
        /// The sandbox mode.
        mode: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// It started, and could not be waited for.
    #[error("could not wait for `{program}`: {source}")]
    Wait {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Run `argv` in `wd` confined as the shell tool runs its commands (`sandbox`, a private
/// temporary directory removed after it, a supervisor that kills whatever it leaves behind,
/// Linux), with this process's standard streams: `rein sandbox`, which runs the commands rein
/// has an editor's terminal run (ACP), so the sandbox holds there too. Its exit status, or why
/// nothing ran.
pub async fn run_confined(
    sandbox: rein_core::spec::Sandbox,
    wd: &std::path::Path,
    argv: &[String],
) -> Result<std::process::ExitStatus, ConfinedError> {
    let (program, args) = argv.split_first().ok_or(ConfinedError::NoCommand)?;
    let tmp = PrivateTmp::new().map_err(ConfinedError::Tmp)?;
    let confinement = crate::sandbox::prepare(sandbox, wd, &tmp.0)?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(wd)
        .env("TMPDIR", &tmp.0)
        .env("TMP", &tmp.0)
        .env("TEMP", &tmp.0)
        .kill_on_drop(true);
    #[cfg(unix)]
    supervise(&mut cmd, confinement);
    let mut child = cmd.spawn().map_err(|source| ConfinedError::Start {
        program: program.clone(),
        mode: sandbox.mode.as_str(),
        source,
    })?;
    child.wait().await.map_err(|source| ConfinedError::Wait {
        program: program.clone(),
        source,
    })
}

impl Tool for Shell {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: "shell".into(),
            kind: ToolKind::Builtin,
            title: "Shell".into(),
            description: "Run shell commands in the working directory.".into(),
            system_role: None,
            apis: vec![ToolApi {
                name: "run".into(),
                description: "Run a command with sh -c in the working directory; returns the exit code and (capped) stdout and stderr.".into(),
                parameters: crate::parameters_of::<RunArgs>(),
                intervention: None,
                cost: None,
            }],
            intervention: Some(InterventionConfig::Policy(InterventionPolicy::Required)),
        }
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let Some(wd) = cx.working_directory.as_deref() else {
                return Ok(ToolOutput::failed(
                    "this operation has no working directory, so the shell is unavailable",
                ));
            };
            let args = tool_args!("shell/run", args, RunArgs);
            let command = args.command.as_str();
            let timeout = self.config.timeout(args.timeout_secs);
            let tmp = match PrivateTmp::new() {
                Ok(t) => t,
                Err(e) => {
                    return Ok(ToolOutput::failed(format!(
                        "cannot make the command's temporary directory: {e}; nothing was run"
                    )));
                }
            };
            let confinement = match crate::sandbox::prepare(cx.sandbox, wd, &tmp.0) {
                Ok(c) => c,
                Err(e) => return Ok(ToolOutput::failed(e.to_string())),
            };
            let mut cmd = tokio::process::Command::new("sh");
            cmd.arg("-c")
                .arg(command)
                .current_dir(wd)
                .env("TMPDIR", &tmp.0)
                .env("TMP", &tmp.0)
                .env("TEMP", &tmp.0)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            // Its own process group (the last resort of a timeout), under a supervisor that
            // kills everything the command started when it ends.
            #[cfg(unix)]
            cmd.process_group(0);
            #[cfg(unix)]
            supervise(&mut cmd, confinement);
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) if cx.sandbox.mode != rein_core::spec::SandboxMode::Off => {
                    return Ok(ToolOutput::failed(format!(
                        "cannot start the shell in its sandbox ({}): {e}; nothing was run",
                        cx.sandbox.mode.as_str()
                    )));
                }
                Err(e) => return Ok(ToolOutput::failed(format!("cannot start the shell: {e}"))),
            };
            let pid = child.id();
            let cap = self.config.max_output;
            let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
            let out = tokio::spawn(async move {
                if let Some(s) = stdout {
                    drain(s, cap).await
                } else {
                    Capped::default()
                }
            });
            let err = tokio::spawn(async move {
                if let Some(s) = stderr {
                    drain(s, cap).await
                } else {
                    Capped::default()
                }
            });
            let status = tokio::time::timeout(timeout, child.wait()).await;
            let timed_out = status.is_err();
            if timed_out && let Some(pid) = pid {
                // The supervisor kills the command and everything it started, then exits; the
                // whole group is killed only if it does not within the grace period.
                let _ = tokio::process::Command::new("kill")
                    .args(["-TERM", &pid.to_string()])
                    .status()
                    .await;
                if tokio::time::timeout(Duration::from_secs(5), child.wait())
                    .await
                    .is_err()
                {
                    let _ = tokio::process::Command::new("kill")
                        .args(["-KILL", "--", &format!("-{pid}")])
                        .status()
                        .await;
                    let _ = child.kill().await;
                }
            }
            // A process that escaped the group could keep the pipes open: do not wait forever.
            let grace = Duration::from_secs(2);
            let out = tokio::time::timeout(grace, out)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let err = tokio::time::timeout(grace, err)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let mut text = match &status {
                Ok(Ok(s)) => match s.code() {
                    Some(code) => format!("exit code: {code}\n"),
                    None => "killed by a signal\n".to_owned(),
                },
                Ok(Err(e)) => format!("could not wait for the command: {e}\n"),
                Err(_) => format!(
                    "timed out after {} s; the command and its children were killed\n",
                    timeout.as_secs()
                ),
            };
            let (o, e) = (out.text(), err.text());
            if !o.is_empty() {
                text.push_str(&format!("--- stdout ---\n{o}\n"));
            }
            if !e.is_empty() {
                text.push_str(&format!("--- stderr ---\n{e}\n"));
            }
            let ok = matches!(&status, Ok(Ok(s)) if s.success());
            Ok(if ok {
                ToolOutput::ok(text)
            } else {
                ToolOutput::failed(text)
            })
        }
        .boxed()
    }
}
