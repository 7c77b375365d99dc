//! External agent CLIs as an operation's brain and executor (`external:KIND` surfaces): which
//! programs this host may start ([`ExternalAgents`]), how each kind is invoked and how its event
//! stream reads ([`claude_code`], [`codex`], [`jsonl`], each turning lines into [`Observed`]
//! facts), what a run is asked (`invocation`: the prompt, the session to resume), how the facts
//! group into steps ([`transcript`]) and are written into the state (`record`), how the
//! process is started and stopped as a group ([`process`]), and how a device runs one instead
//! ([`RemoteAgents`], [`AgentRun`]). The driver runs it (`driver/external.rs`).

pub mod claude_code;
pub mod codex;
pub(crate) mod invocation;
pub mod jsonl;
mod observed;
pub mod process;
pub(crate) mod record;
pub mod transcript;

pub use observed::Observed;

use rein_core::spec::ExternalKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How to start one kind of external agent: the program and the arguments put before the
/// kind's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalCommand {
    /// A program on `PATH` or a path to one.
    pub program: String,
    /// Arguments before the ones rein adds.
    pub args: Vec<String>,
}

impl ExternalCommand {
    /// `program` with no arguments of its own.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }
}

/// The external agents this host may run, by kind. A kind not listed is refused when an
/// operation asks for it (a server lists only what its configuration names: an external agent
/// runs with the server's rights, outside rein's approvals).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalAgents {
    commands: BTreeMap<ExternalKind, ExternalCommand>,
}

impl ExternalAgents {
    /// None.
    pub fn none() -> Self {
        Self::default()
    }

    /// Claude Code as `claude` and Codex as `codex` from `PATH` (what a person's own CLI may
    /// start); the generic JSON-lines kind needs its program named.
    pub fn defaults() -> Self {
        let mut a = Self::none();
        a.set(ExternalKind::ClaudeCode, ExternalCommand::new("claude"));
        a.set(ExternalKind::Codex, ExternalCommand::new("codex"));
        a
    }

    /// Run `kind` with `command`.
    pub fn set(&mut self, kind: ExternalKind, command: ExternalCommand) {
        self.commands.insert(kind, command);
    }

    /// How `kind` is started here, if it may be.
    pub fn get(&self, kind: ExternalKind) -> Option<&ExternalCommand> {
        self.commands.get(&kind)
    }

    /// The kinds this host may run.
    pub fn kinds(&self) -> impl Iterator<Item = ExternalKind> + '_ {
        self.commands.keys().copied()
    }
}

/// Why an external agent cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExternalError {
    /// This host does not run that kind.
    #[error(
        "external agent `{0}` is not enabled here (configure it under [external.{0}] in the configuration file, or REIN_EXTERNAL_{env})",
        env = env_suffix(.0)
    )]
    NotEnabled(&'static str),
    /// Its program is not installed.
    #[error("external agent `{kind}`: program `{program}` was not found{where_}", where_ = if .program.contains('/') { String::new() } else { " on PATH".to_owned() })]
    Missing {
        /// The kind.
        kind: &'static str,
        /// The program as configured.
        program: String,
    },
}

fn env_suffix(kind: &str) -> String {
    kind.replace('-', "_").to_ascii_uppercase()
}

/// The environment variable that names `kind`'s program (`REIN_EXTERNAL_CLAUDE_CODE`, ...).
pub fn env_var(kind: ExternalKind) -> String {
    format!(
        "{}{}",
        crate::env::EXTERNAL_PREFIX,
        env_suffix(kind.as_str())
    )
}

/// The file `program` runs: itself when it holds a `/`, else the first executable of that name
/// on `PATH`.
pub fn resolve_program(kind: ExternalKind, program: &str) -> Result<PathBuf, ExternalError> {
    let missing = || ExternalError::Missing {
        kind: kind.as_str(),
        program: program.to_owned(),
    };
    if program.is_empty() {
        return Err(missing());
    }
    if program.contains('/') {
        let p = Path::new(program);
        return if is_executable(p) {
            Ok(p.to_path_buf())
        } else {
            Err(missing())
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
        .ok_or_else(missing)
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Why an external agent's end is unknown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndUnknown {
    /// The device refused to run it, saying why.
    #[error("{0}")]
    Refused(String),
    /// The connection of the device (named) dropped while it ran.
    #[error(
        "the connection of device `{0}` dropped while the agent ran; what it did after its last recorded step is unknown"
    )]
    Lost(String),
    /// The device (named) did not report its end in time.
    #[error("device `{0}` did not report the agent's end")]
    Silent(String),
}

/// A running external agent, wherever it runs: what it prints, line by line, and how to stop it.
pub trait AgentRun: Send {
    /// Its next line of output (`None`: the output ended).
    fn next_line(&mut self) -> futures::future::BoxFuture<'_, Option<String>>;
    /// Stop it and everything it started.
    fn stop(&mut self) -> futures::future::BoxFuture<'_, ()>;
    /// Once its output ended: its exit code (`None`: killed by a signal) and the end of its
    /// standard error, or why its end is unknown (a device's connection dropped, it refused).
    fn finish(
        self: Box<Self>,
        grace: std::time::Duration,
    ) -> futures::future::BoxFuture<'static, Result<(Option<i32>, String), EndUnknown>>;
}

/// One run of an external agent on a device, as the driver asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteStart {
    /// The operation's owner.
    pub owner: String,
    /// The device.
    pub device: String,
    /// The operation.
    pub operation_id: rein_core::OperationId,
    /// The agent.
    pub kind: ExternalKind,
    /// The arguments of the kind (the device puts its configured ones first).
    pub args: Vec<String>,
    /// Its standard input (the prompt).
    pub input: String,
    /// The session a generic agent resumes (`REIN_EXTERNAL_SESSION`).
    pub session: Option<String>,
}

/// Starts external agents on devices (a server's device gateway).
pub trait RemoteAgents: Send + Sync {
    /// Ask the device to start the agent; why it cannot when it cannot (not connected).
    fn start(&self, run: RemoteStart) -> Result<Box<dyn AgentRun>, StartError>;
}

/// Why an external agent's run did not start (the operation ends `external_failed` with it).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Its program could not be started on this machine.
    #[error("external agent `{kind}`: cannot start {}: {source}", program.display())]
    Spawn {
        /// The agent.
        kind: ExternalKind,
        /// The program tried.
        program: PathBuf,
        /// Why the operating system refused.
        #[source]
        source: std::io::Error,
    },
    /// The device it runs on is not connected.
    #[error("device `{0}` is not connected")]
    DeviceOffline(String),
}

/// What one run of an external agent is asked: the prompt, the session to continue, and the
/// system role when a new session starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invocation {
    /// What it is asked (sent on its standard input).
    pub prompt: String,
    /// The session a later turn resumes.
    pub resume: Option<String>,
    /// Instructions for a new session (Claude Code appends them to its own; the others read
    /// them before the prompt).
    pub system_role: Option<String>,
}

/// The arguments and standard input of one run of `kind` (after the configured arguments).
pub fn invocation_args(kind: ExternalKind, inv: &Invocation) -> (Vec<String>, String) {
    match kind {
        ExternalKind::ClaudeCode => claude_code::args(inv),
        ExternalKind::Codex => codex::args(inv),
        ExternalKind::Jsonl => jsonl::args(inv),
    }
}

/// Reads one kind's output, line by line, into [`Observed`] facts.
pub trait StreamReader: Send {
    /// The facts one line of standard output states (none for lines it does not know, so a
    /// newer CLI's additions are skipped rather than fatal).
    fn line(&mut self, line: &str) -> Vec<Observed>;
    /// What is left to say once the stream has ended.
    fn end(&mut self) -> Vec<Observed> {
        Vec::new()
    }
}

/// A reader for `kind`'s stream.
pub fn reader(kind: ExternalKind) -> Box<dyn StreamReader> {
    match kind {
        ExternalKind::ClaudeCode => Box::new(claude_code::Reader::default()),
        ExternalKind::Codex => Box::new(codex::Reader),
        ExternalKind::Jsonl => Box::new(jsonl::Reader),
    }
}

/// A prompt that carries what a new session cannot know: the instructions (for kinds without a
/// flag for them) and the conversation so far (when a topic that began elsewhere moves to an
/// external agent, or a turn is edited or regenerated).
pub fn framed_prompt(
    system_role: Option<&str>,
    earlier: &[(String, String)],
    prompt: &str,
) -> String {
    let mut out = String::new();
    if let Some(role) = system_role.filter(|r| !r.trim().is_empty()) {
        out.push_str("Instructions:\n");
        out.push_str(role.trim());
        out.push_str("\n\n");
    }
    if !earlier.is_empty() {
        out.push_str("The conversation so far:\n");
        for (who, text) in earlier {
            out.push_str(&format!("[{who}] {}\n", text.trim()));
        }
        out.push_str("\nNow:\n");
    }
    out.push_str(prompt);
    out
}
