//! Calls of `files` and `shell` that the client driving an operation does in its own world: an
//! editor over the Agent Client Protocol reads and writes through its buffers (so the model
//! sees unsaved changes and the editor sees every write) and runs commands in its terminal.
//! [`delegable`] parses and checks a call as the tool itself would (the path confined to the
//! working directory, skill files kept to rein), and the functions after it word the outcome
//! as the tool does, so the model reads the same whoever did the work. The approval and the
//! command guard decided before the call got here; the sandbox still holds in the terminal
//! (the command runs under `rein sandbox`, see [`crate::shell::run_confined`]).

use crate::ToolContext;
pub use crate::files::EditRefused;
use crate::files::{EditArgs, ReadArgs, SKILL_PREFIX, WriteArgs};
use crate::path::{confine, shown};
use crate::shell::{RunArgs, ShellConfig};
use rein_core::engine::ports::ToolOutput;
use rein_core::spec::Sandbox;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A call a client can do, checked.
#[derive(Clone, Debug, PartialEq)]
pub enum Delegable {
    /// `files.read`: lines of a text file.
    Read {
        /// The file, absolute and inside the working directory.
        path: PathBuf,
        /// The path as the model gave it (for messages).
        asked: String,
        /// First line (1-based).
        start: Option<u64>,
        /// Last line (inclusive).
        end: Option<u64>,
    },
    /// `files.write`: a whole new content.
    Write {
        /// The file, absolute and inside the working directory.
        path: PathBuf,
        /// The path relative to the working directory (for the result).
        shown: String,
        /// The content.
        content: String,
    },
    /// `files.edit`: one exact replacement (the client reads, rein replaces, the client
    /// writes).
    Edit {
        /// The file, absolute and inside the working directory.
        path: PathBuf,
        /// The path as the model gave it (for messages).
        asked: String,
        /// The path relative to the working directory (for the result).
        shown: String,
        /// The text that occurs once.
        old: String,
        /// Its replacement.
        new: String,
    },
    /// `shell.run`: a command line, run with `sh -c` in `workdir`, confined by `sandbox`.
    Run {
        /// The command line.
        command: String,
        /// Where it runs.
        workdir: PathBuf,
        /// How long it may run before it is killed.
        timeout: Duration,
        /// What confines it.
        sandbox: Sandbox,
    },
}

impl Delegable {
    /// Whether this is a command (a terminal's work) rather than a file's.
    pub fn is_command(&self) -> bool {
        matches!(self, Self::Run { .. })
    }
}

/// Why a call a client would do is refused before it is asked, worded as the tool words it
/// (the model reads it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The arguments do not fit the API's parameters.
    #[error("Invalid arguments for `{api}`: {problem}")]
    Arguments {
        /// `tool/api`.
        api: String,
        /// What does not fit.
        problem: String,
    },
    /// The path is not one the tool may touch (outside the working directory, through a link
    /// leading out, or with no working directory at all).
    #[error("{0}")]
    Path(String),
    /// The operation has no working directory, so no command runs.
    #[error("this operation has no working directory, so the shell is unavailable")]
    NoWorkingDirectory,
}

/// The delegable form of `tool`.`api` with `args` in `cx`: `None` when a client cannot do it
/// (another tool or API, a skill's file), else the checked call or the refusal the tool itself
/// would give (a path outside the working directory, say), with nothing done.
pub fn delegable(
    cx: &ToolContext,
    tool: &str,
    api: &str,
    args: &Value,
) -> Option<Result<Delegable, Refused>> {
    let wd = cx.working_directory.as_deref();
    match (tool, api) {
        ("files", "read" | "write" | "edit") => {
            let path = args.get("path").and_then(Value::as_str);
            // A skill's files are rein's to read.
            if path.is_some_and(|p| p.starts_with(SKILL_PREFIX)) {
                return None;
            }
            Some(file_call(wd, api, args.clone()))
        }
        ("shell", "run") => Some(command_call(cx, args.clone())),
        _ => None,
    }
}

fn invalid(key: &str, e: serde_json::Error) -> Refused {
    Refused::Arguments {
        api: key.to_owned(),
        problem: e.to_string(),
    }
}

fn file_call(wd: Option<&Path>, api: &str, args: Value) -> Result<Delegable, Refused> {
    let confine = |p: &str| confine(wd, p).map_err(Refused::Path);
    let key = format!("files/{api}");
    match api {
        "read" => {
            let a: ReadArgs = serde_json::from_value(args).map_err(|e| invalid(&key, e))?;
            Ok(Delegable::Read {
                path: confine(&a.path)?,
                asked: a.path,
                start: a.start_line,
                end: a.end_line,
            })
        }
        "write" => {
            let a: WriteArgs = serde_json::from_value(args).map_err(|e| invalid(&key, e))?;
            let path = confine(&a.path)?;
            Ok(Delegable::Write {
                shown: shown(wd, &path),
                path,
                content: a.content,
            })
        }
        _ => {
            let a: EditArgs = serde_json::from_value(args).map_err(|e| invalid(&key, e))?;
            let path = confine(&a.path)?;
            Ok(Delegable::Edit {
                shown: shown(wd, &path),
                path,
                asked: a.path,
                old: a.old_text,
                new: a.new_text,
            })
        }
    }
}

fn command_call(cx: &ToolContext, args: Value) -> Result<Delegable, Refused> {
    let a: RunArgs = serde_json::from_value(args).map_err(|e| invalid("shell/run", e))?;
    let workdir = cx
        .working_directory
        .clone()
        .ok_or(Refused::NoWorkingDirectory)?;
    Ok(Delegable::Run {
        command: a.command,
        workdir,
        timeout: ShellConfig::default().timeout(a.timeout_secs),
        sandbox: cx.sandbox,
    })
}

/// What `files.read` returns for lines `start..=end` of `text`, file `asked` as a client holds
/// it.
pub fn read_output(text: &str, asked: &str, start: Option<u64>, end: Option<u64>) -> ToolOutput {
    let size = u64::try_from(text.len()).unwrap_or(u64::MAX);
    match crate::files::lines(text.as_bytes(), asked, size, start, end) {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::failed(e),
    }
}

/// What `files.write` returns once `bytes` bytes were written to `shown`.
pub fn write_output(bytes: usize, shown: &str) -> ToolOutput {
    ToolOutput::ok(format!("wrote {bytes} bytes to {shown}"))
}

/// `text` (file `asked`, as a client holds it) after `files.edit`'s one replacement, or the
/// tool's refusal.
pub fn edited(text: &str, asked: &str, old: &str, new: &str) -> Result<String, EditRefused> {
    let size = u64::try_from(text.len()).unwrap_or(u64::MAX);
    if size > crate::files::MAX_EDIT {
        return Err(EditRefused::TooLarge {
            path: asked.to_owned(),
            size,
        });
    }
    crate::files::replaced(text, asked, old, new)
}

/// What `files.edit` returns once `shown` was edited.
pub fn edit_output(shown: &str) -> ToolOutput {
    ToolOutput::ok(format!("edited {shown}"))
}

/// How a command a client ran ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandEnd {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (its name, as the client gave it).
    Signalled(String),
    /// It ran past its time and was killed.
    TimedOut(Duration),
}

/// What `shell.run` returns for a command that ended as `end`, having printed `output`
/// (standard output and error together, as a terminal shows them; `truncated`: the client kept
/// only its end).
pub fn run_output(end: &CommandEnd, output: &str, truncated: bool) -> ToolOutput {
    let mut text = match end {
        CommandEnd::Exited(code) => format!("exit code: {code}\n"),
        CommandEnd::Signalled(signal) => format!("killed by a signal ({signal})\n"),
        CommandEnd::TimedOut(after) => format!(
            "timed out after {} s; the command and its children were killed\n",
            after.as_secs()
        ),
    };
    if !output.is_empty() {
        text.push_str("--- output ---\n");
        if truncated {
            text.push_str("[... earlier output omitted ...]\n");
        }
        text.push_str(output);
        if !output.ends_with('\n') {
            text.push('\n');
        }
    }
    if *end == CommandEnd::Exited(0) {
        ToolOutput::ok(text)
    } else {
        ToolOutput::failed(text)
    }
}

/// Bytes of a command's output a client is asked to keep (as the shell tool keeps of each
/// stream).
pub fn output_limit() -> usize {
    ShellConfig::default().max_output
}
