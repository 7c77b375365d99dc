//! `shell`: run a command with `sh -c` in the working directory, with a timeout and capped
//! output (the head and the tail are kept). Approval is required by default, and the security
//! blacklist applies to its `command` argument; the command runs confined by the operation's
//! sandbox ([`crate::sandbox`]), with a private temporary directory (`TMPDIR`) removed after it,
//! and under a supervisor: whatever it started (in the background, in a new session, as a
//! daemon) is killed when it ends or times out (`crate::reaper`, Linux). Commands do not
//! inherit rein's secrets (variables holding keys, tokens, passwords: [`crate::secrets`]).

use crate::process::{PrivateTmp, Rlimits};
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::{InterventionConfig, InterventionPolicy};
use rein_core::tool::{ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

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
    crate::secrets::withhold(&mut cmd);
    #[cfg(unix)]
    crate::process::supervise(&mut cmd, confinement, Rlimits::NONE);
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
            // Keys and tokens stay with rein: a command (or an instruction planted in what the
            // model read) cannot print them.
            crate::secrets::withhold(&mut cmd);
            // Its own process group (the last resort of a timeout), under a supervisor that
            // kills everything the command started when it ends.
            #[cfg(unix)]
            cmd.process_group(0);
            #[cfg(unix)]
            crate::process::supervise(&mut cmd, confinement, Rlimits::NONE);
            let child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) if cx.sandbox.mode != rein_core::spec::SandboxMode::Off => {
                    return Ok(ToolOutput::failed(format!(
                        "cannot start the shell in its sandbox ({}): {e}; nothing was run",
                        cx.sandbox.mode.as_str()
                    )));
                }
                Err(e) => return Ok(ToolOutput::failed(format!("cannot start the shell: {e}"))),
            };
            let finished = crate::process::finish(child, timeout, self.config.max_output).await;
            let mut text = match &finished.status {
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
            text.push_str(&finished.sections());
            let ok = finished.succeeded();
            Ok(if ok {
                ToolOutput::ok(text)
            } else {
                ToolOutput::failed(text)
            })
        }
        .boxed()
    }
}
