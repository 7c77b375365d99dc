//! `python.run`: a piece of Python run by the machine's interpreter in a workspace of the
//! conversation's own, which persists from one call to the next of that conversation (and is
//! never another conversation's).
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

/// The tool's identifier.
pub const IDENTIFIER: &str = "python";

/// Interpreter settings.
#[derive(Clone, Debug)]
pub struct InterpreterConfig {
    /// Where conversations' workspaces are made (none: the tool refuses, saying so).
    pub workspaces: Option<PathBuf>,
    /// The interpreter (on `PATH`, or a path).
    pub python: PathBuf,
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
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(300),
            memory: 1024 * 1024 * 1024,
            max_file: 64 * 1024 * 1024,
            max_output: 16 * 1024,
            max_returned: 8 * 1024 * 1024,
        }
    }
}

/// The interpreter tool.
pub struct Interpreter {
    config: InterpreterConfig,
}

impl Interpreter {
    /// An interpreter with `config`.
    pub fn new(config: InterpreterConfig) -> Self {
        Self { config }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// The Python program to run (its working directory is the conversation's workspace)
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
fn readable_roots(python: &Path) -> Vec<PathBuf> {
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
    let resolved = if python.components().count() > 1 {
        Some(python.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(python))
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
        let program = tmp.0.join("cell.py");
        if let Err(e) = std::fs::write(&program, &args.code) {
            return ToolOutput::failed(format!("cannot write the program: {e}; nothing was run"));
        }
        let roots = readable_roots(&self.config.python);
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
        let mut cmd = tokio::process::Command::new(&self.config.python);
        cmd.args(["-I", "-B", "-u"])
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
                    "The interpreter `{}` is not installed on this host (rein runs the machine's Python: install python3, or name one with [interpreter] python); nothing was run.",
                    self.config.python.display()
                ));
            }
            Err(e) => {
                return ToolOutput::failed(format!(
                    "cannot start `{}` in its sandbox: {e}; nothing was run",
                    self.config.python.display()
                ));
            }
        };
        let finished = crate::process::finish(child, timeout, self.config.max_output).await;
        let mut text = match &finished.status {
            Ok(Ok(s)) => match s.code() {
                Some(code) => format!("exit code: {code}\n"),
                None => "stopped by a signal (its CPU time limit, or killed)\n".to_owned(),
            },
            Ok(Err(e)) => format!("could not wait for the interpreter: {e}\n"),
            Err(_) => format!(
                "stopped at its time limit of {} s; it and everything it started were killed\n",
                timeout.as_secs()
            ),
        };
        if finished.stderr.contains("MemoryError") {
            text.push_str(&format!(
                "(it ran out of memory: a run may use {} MiB)\n",
                self.config.memory / (1024 * 1024)
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
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Python".into(),
            description: "Run Python code in a sandboxed workspace that persists across this conversation.".into(),
            system_role: Some("`python.run` runs Python in this conversation's own workspace (files persist between calls), without network access; save plots and tables as files (matplotlib uses the Agg backend), which are returned to you and shown to the person.".into()),
            apis: vec![ToolApi {
                name: "run".into(),
                description: "Run a Python program; returns its exit code, its (capped) output and the files it wrote.".into(),
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
            let args = tool_args!("python/run", args, RunArgs);
            Ok(self.run(cx, args).await)
        }
        .boxed()
    }
}
