//! `python.run` and `node.run`: a piece of Python or JavaScript run by the machine's
//! interpreter (`python3`, `node`) in a workspace of the conversation's own, which persists
//! from one call to the next of that conversation (and is never another conversation's); both
//! languages share it, so one can read what the other wrote.
//!
//! Each run is confined more tightly than a shell command: it writes only in its workspace
//! and a private temporary directory, reads only the system's programs and libraries (what of
//! `/etc` they need, and the interpreter's own installation) besides them, never a home
//! directory, `/etc/shadow` or another workspace; it has no network unless the operation's
//! sandbox allows it; its address space, CPU time, file sizes and wall-clock time are limited,
//! its output capped. It therefore runs
//! without asking, and refuses to run where it cannot be confined (sandbox `off`, or no
//! Landlock). Files it writes or changes come back as the call's files (the host keeps them
//! as artifacts); a plot saved as an image is one.

use crate::process::{PrivateTmp, Rlimits};
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolFile, ToolOutput};
use rein_core::spec::{Sandbox, SandboxMode};
use rein_core::tool::{ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

/// The Python tool's identifier.
pub const IDENTIFIER: &str = "python";

/// A language the interpreter runs: each is a tool of its own over the same workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `python.run`: the machine's `python3`.
    Python,
    /// `node.run`: the machine's `node` (an ES module, so `import` and top-level `await` work).
    Node,
}

impl Language {
    /// The tool's identifier.
    pub fn identifier(self) -> &'static str {
        match self {
            Language::Python => IDENTIFIER,
            Language::Node => "node",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Node => "JavaScript (Node.js)",
        }
    }

    /// The program's file name in the run's temporary directory.
    fn program(self) -> &'static str {
        match self {
            Language::Python => "cell.py",
            Language::Node => "cell.mjs",
        }
    }

    /// Flags before the program: Python isolated from the user's site and environment, no
    /// bytecode files, unbuffered.
    fn flags(self) -> &'static [&'static str] {
        match self {
            Language::Python => &["-I", "-B", "-u"],
            Language::Node => &[],
        }
    }

    /// What the interpreter writes to stderr when it runs out of memory (Node.js: V8's heap,
    /// a buffer outside it, or the C++ runtime, depending on which allocation fails first).
    fn out_of_memory(self) -> &'static [&'static str] {
        match self {
            Language::Python => &["MemoryError"],
            Language::Node => &[
                "out of memory",
                "Fatal process OOM",
                "Array buffer allocation failed",
                "std::bad_alloc",
            ],
        }
    }

    /// What the interpreter is called on the command line.
    fn package(self) -> &'static str {
        match self {
            Language::Python => "python3",
            Language::Node => "node",
        }
    }
}

/// Interpreter settings.
#[derive(Clone, Debug)]
pub struct InterpreterConfig {
    /// Where conversations' workspaces are made (none: the tool refuses, saying so).
    pub workspaces: Option<PathBuf>,
    /// The Python interpreter (on `PATH`, or a path).
    pub python: PathBuf,
    /// The Node.js interpreter (on `PATH`, or a path).
    pub node: PathBuf,
    /// Time limit when a call gives none.
    pub default_timeout: Duration,
    /// Longest time limit a call may ask for.
    pub max_timeout: Duration,
    /// Bytes of address space a run may use.
    pub memory: u64,
    /// Bytes one file may grow to.
    pub max_file: u64,
    /// Bytes kept of each of stdout and stderr.
    pub max_output: usize,
    /// Bytes of written files returned at most (larger ones are listed, not returned).
    pub max_returned: u64,
}

impl Default for InterpreterConfig {
    fn default() -> Self {
        Self {
            workspaces: None,
            python: PathBuf::from("python3"),
            node: PathBuf::from("node"),
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(300),
            memory: 1024 * 1024 * 1024,
            max_file: 64 * 1024 * 1024,
            max_output: 16 * 1024,
            max_returned: 8 * 1024 * 1024,
        }
    }
}

/// The interpreter tool of one language.
pub struct Interpreter {
    language: Language,
    config: InterpreterConfig,
}

impl Interpreter {
    /// The `language` tool with `config`.
    pub fn new(language: Language, config: InterpreterConfig) -> Self {
        Self { language, config }
    }

    /// The interpreter's program.
    fn binary(&self) -> &Path {
        match self.language {
            Language::Python => &self.config.python,
            Language::Node => &self.config.node,
        }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// The program to run (its working directory is the conversation's workspace)
    #[schemars(length(min = 1, max = 100000))]
    code: String,
    /// Seconds before it is stopped (default 30)
    #[serde(default)]
    #[schemars(range(min = 1, max = 300))]
    timeout_secs: Option<u64>,
}

/// The workspace directory's name for a conversation (or, outside one, an operation): only
/// characters safe in a path, so no id can name a directory outside the root.
fn workspace_name(cx: &ToolContext) -> String {
    let (prefix, id) = match &cx.topic {
        Some(t) => ("topic", t.clone()),
        None => ("operation", cx.operation_id.to_string()),
    };
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}-{safe}")
}

/// Every regular file under `dir` (not following links, hidden entries skipped) with its size
/// and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            let rel = e.path().strip_prefix(dir).ok()?.to_path_buf();
            Some((rel, (m.len(), m.modified().ok())))
        })
        .collect()
}

/// A file's media type from its extension.
pub fn media_type(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "md" => "text/markdown",
        "txt" | "log" | "py" => "text/plain",
        "pdf" => "application/pdf",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        _ => "application/octet-stream",
    }
}

/// What of `/etc` a program needs to load and run: the dynamic loader's cache, time zones,
/// certificates, fonts, the alternatives `python3` may be reached through. Not the rest
/// (`/etc/shadow` is readable to a root process), so a program run as root reads no secret there.
const ETC: [&str; 9] = [
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/fonts",
    "/etc/mime.types",
];

/// Where the interpreter may read besides its workspace and temporary directory: the system's
/// programs and libraries, what of `/etc` they need ([`ETC`]), and the interpreter's own
/// installation (a virtual environment or a prefix elsewhere).
fn readable_roots(interpreter: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt"]
        .iter()
        .chain(ETC.iter())
        .map(PathBuf::from)
        .collect();
    // Python's own settings (`/etc/python3`, `/etc/python3.11`).
    if let Ok(entries) = std::fs::read_dir("/etc") {
        roots.extend(
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
                .map(|e| e.path()),
        );
    }
    let resolved = if interpreter.components().count() > 1 {
        Some(interpreter.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(interpreter))
                .find(|p| p.is_file())
        })
    };
    if let Some(exe) = resolved {
        // `venv/bin/python` → `venv`; a symlink's target's prefix too.
        for p in [Some(exe.clone()), std::fs::canonicalize(&exe).ok()]
            .into_iter()
            .flatten()
        {
            if let Some(prefix) = p.parent().and_then(Path::parent) {
                roots.push(prefix.to_path_buf());
            }
        }
    }
    roots
}

impl Interpreter {
    async fn run(&self, cx: &ToolContext, args: RunArgs) -> ToolOutput {
        let Some(root) = &self.config.workspaces else {
            return ToolOutput::failed(
                "The interpreter has no place for workspaces on this host; nothing was run.",
            );
        };
        if cx.sandbox.mode == SandboxMode::Off {
            return ToolOutput::failed(
                "The interpreter runs only confined, and this operation's sandbox is off; nothing was run.",
            );
        }
        let workspace = root.join(workspace_name(cx));
        if let Err(e) = std::fs::create_dir_all(&workspace) {
            return ToolOutput::failed(format!("cannot make the workspace: {e}; nothing was run"));
        }
        let tmp = match PrivateTmp::new() {
            Ok(t) => t,
            Err(e) => {
                return ToolOutput::failed(format!(
                    "cannot make the run's temporary directory: {e}; nothing was run"
                ));
            }
        };
        let program = tmp.0.join(self.language.program());
        if let Err(e) = std::fs::write(&program, &args.code) {
            return ToolOutput::failed(format!("cannot write the program: {e}; nothing was run"));
        }
        let roots = readable_roots(self.binary());
        let reads: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
        let sandbox = Sandbox {
            mode: SandboxMode::WorkspaceWrite,
            network: cx.sandbox.network,
        };
        let confinement = match crate::sandbox::prepare_reading(
            sandbox,
            &workspace,
            &tmp.0,
            crate::sandbox::Reads::Only(&reads),
        ) {
            Ok(c) => c,
            Err(e) => return ToolOutput::failed(e.to_string()),
        };
        let timeout = args
            .timeout_secs
            .map_or(self.config.default_timeout, Duration::from_secs)
            .min(self.config.max_timeout);
        let before = snapshot(&workspace);
        let mut cmd = tokio::process::Command::new(self.binary());
        cmd.args(self.language.flags())
            .arg(&program)
            .current_dir(&workspace)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &workspace)
            .env("TMPDIR", &tmp.0)
            .env("LANG", "C.UTF-8")
            // `getpass.getuser()` and friends read these before the password file, which the
            // run cannot read.
            .env("USER", "rein")
            .env("LOGNAME", "rein")
            // Plots are files: no display to draw on.
            .env("MPLBACKEND", "Agg")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let limits = Rlimits {
            address_space: Some(self.config.memory),
            cpu_secs: Some(timeout.as_secs() + 1),
            file_size: Some(self.config.max_file),
        };
        #[cfg(unix)]
        crate::process::supervise(&mut cmd, confinement, limits);
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::failed(format!(
                    "The interpreter `{}` is not installed on this host (rein runs the machine's own: install {}); nothing was run.",
                    self.binary().display(),
                    self.language.package()
                ));
            }
            Err(e) => {
                return ToolOutput::failed(format!(
                    "cannot start `{}` in its sandbox: {e}; nothing was run",
                    self.binary().display()
                ));
            }
        };
        let finished = crate::process::finish(child, timeout, self.config.max_output).await;
        let mut crashed = false;
        let mut text = match &finished.status {
            Ok(Ok(s)) => match s.code() {
                Some(code) => format!("exit code: {code}\n"),
                None => {
                    let (why, crash) = stopped_by(s);
                    crashed = crash;
                    why
                }
            },
            Ok(Err(e)) => format!("could not wait for the interpreter: {e}\n"),
            Err(_) => format!(
                "stopped at its time limit of {} s; it and everything it started were killed\n",
                timeout.as_secs()
            ),
        };
        // An interpreter whose allocation fails past the address-space limit either says so or,
        // when it fails where it cannot report (a helper thread's stack, V8's own reserve),
        // crashes without a word.
        let memory = self.config.memory / (1024 * 1024);
        if self
            .language
            .out_of_memory()
            .iter()
            .any(|m| finished.stderr.contains(m))
        {
            text.push_str(&format!(
                "(it ran out of memory: a run may use {memory} MiB)\n"
            ));
        } else if crashed {
            text.push_str(&format!(
                "(an interpreter crashes like this when an allocation fails past its memory limit: a run may use {memory} MiB)\n"
            ));
        }
        text.push_str(&finished.sections());
        let files = self.written(&workspace, &before, &mut text);
        let mut out = if finished.succeeded() {
            ToolOutput::ok(text.trim_end())
        } else {
            ToolOutput::failed(text.trim_end())
        };
        out.files = files;
        out
    }

    /// The files of `workspace` new or changed since `before`, listed in `text`; those small
    /// enough returned.
    fn written(
        &self,
        workspace: &Path,
        before: &BTreeMap<PathBuf, (u64, Option<SystemTime>)>,
        text: &mut String,
    ) -> Vec<ToolFile> {
        let after = snapshot(workspace);
        let changed: Vec<(&PathBuf, u64)> = after
            .iter()
            .filter(|(p, v)| before.get(*p) != Some(v))
            .map(|(p, (len, _))| (p, *len))
            .collect();
        if changed.is_empty() {
            return Vec::new();
        }
        text.push_str("--- files written (kept in the workspace) ---\n");
        let mut files = Vec::new();
        let mut budget = self.config.max_returned;
        for (rel, len) in changed {
            let name = rel.to_string_lossy().into_owned();
            let kind = media_type(&name);
            if len > budget {
                text.push_str(&format!(
                    "{name} ({kind}, {len} bytes; too large to return)\n"
                ));
                continue;
            }
            match std::fs::read(workspace.join(rel)) {
                Ok(bytes) => {
                    budget -= len;
                    text.push_str(&format!("{name} ({kind}, {len} bytes)\n"));
                    files.push(ToolFile {
                        name,
                        media_type: kind.to_owned(),
                        bytes,
                    });
                }
                Err(e) => text.push_str(&format!("{name} (could not be read: {e})\n")),
            }
        }
        files
    }
}

impl Tool for Interpreter {
    fn manifest(&self) -> ToolManifest {
        let (description, system_role, api) = match self.language {
            Language::Python => (
                "Run Python code in a sandboxed workspace that persists across this conversation.",
                "`python.run` runs Python in this conversation's own workspace (files persist between calls), without network access; save plots and tables as files (matplotlib uses the Agg backend), which are returned to you and shown to the person.",
                "Run a Python program; returns its exit code, its (capped) output and the files it wrote.",
            ),
            Language::Node => (
                "Run JavaScript (Node.js) in a sandboxed workspace that persists across this conversation.",
                "`node.run` runs JavaScript as an ES module with Node.js in this conversation's own workspace (the one `python.run` uses; files persist between calls), without network access; write results as files, which are returned to you and shown to the person.",
                "Run a JavaScript program (an ES module: `import`, top-level `await`); returns its exit code, its (capped) output and the files it wrote.",
            ),
        };
        ToolManifest {
            identifier: self.language.identifier().into(),
            kind: ToolKind::Builtin,
            title: self.language.title().into(),
            description: description.into(),
            system_role: Some(system_role.into()),
            apis: vec![ToolApi {
                name: "run".into(),
                description: api.into(),
                parameters: crate::parameters_of::<RunArgs>(),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let args = tool_args!(format!("{}/run", self.language.identifier()), args, RunArgs);
            Ok(self.run(cx, args).await)
        }
        .boxed()
    }
}

/// Why a run stopped by a signal, and whether the signal is a crash (a fault or an abort, not
/// the CPU limit or a kill).
fn stopped_by(status: &std::process::ExitStatus) -> (String, bool) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        match status.signal() {
            Some(libc::SIGXCPU) => ("stopped at its CPU time limit\n".to_owned(), false),
            Some(libc::SIGKILL) => ("killed (signal 9)\n".to_owned(), false),
            Some(
                sig @ (libc::SIGSEGV | libc::SIGBUS | libc::SIGABRT | libc::SIGTRAP | libc::SIGILL),
            ) => (format!("crashed (signal {sig})\n"), true),
            Some(sig) => (format!("stopped by signal {sig}\n"), false),
            None => ("stopped by a signal\n".to_owned(), false),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        ("stopped by a signal\n".to_owned(), false)
    }
}
