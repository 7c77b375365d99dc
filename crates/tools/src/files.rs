//! `files`: read (line ranges), write, edit (exact unique match), list, glob, grep, all
//! confined to the operation's working directory.

use crate::fsguard::{FS_TIMEOUT, bounded, open_regular, read_prefix, write_regular};
use crate::path::{confine, shown};
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::{DynamicIntervention, InterventionConfig, InterventionPolicy};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::fmt::Write;
use std::io::{BufRead, Read};
use std::path::Path;

/// Bytes a read returns at most.
pub(crate) const MAX_READ: usize = 256 * 1024;
/// Bytes a read scans from disk at most to find its lines (a huge file is never read whole).
const MAX_SCAN: u64 = 64 << 20;
/// Files larger than this are not edited (an edit holds the file in memory).
pub(crate) const MAX_EDIT: u64 = 8 << 20;
/// Files larger than this are not searched by grep.
const MAX_GREP_FILE: u64 = 16 << 20;
/// Entries a listing, glob or grep returns at most.
const MAX_ENTRIES: usize = 500;

/// The files tool.
pub struct Files;

fn api(name: &str, description: &str, parameters: Value) -> ToolApi {
    ToolApi {
        name: name.into(),
        description: description.into(),
        parameters,
        // A path outside the working directory asks a human before the tool refuses it.
        intervention: Some(InterventionConfig::Dynamic(DynamicIntervention {
            audit: "path_scope".into(),
            policy: InterventionPolicy::Required,
            default: InterventionPolicy::Never,
        })),
        cost: None,
    }
}

/// One API's filesystem work, run on the blocking pool.
type FsWork = Box<dyn FnOnce(Option<&Path>) -> Result<String, String> + Send>;

/// A path relative to the working directory.
type RelPath = String;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    /// Path relative to the working directory
    pub(crate) path: RelPath,
    /// First line to return (1-based)
    #[schemars(range(min = 1))]
    pub(crate) start_line: Option<u64>,
    /// Last line to return (inclusive)
    #[schemars(range(min = 1))]
    pub(crate) end_line: Option<u64>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// Path relative to the working directory
    pub(crate) path: RelPath,
    /// The whole new content
    pub(crate) content: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditArgs {
    /// Path relative to the working directory
    pub(crate) path: RelPath,
    /// Text that occurs exactly once in the file
    #[schemars(length(min = 1))]
    pub(crate) old_text: String,
    /// Its replacement
    pub(crate) new_text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Directory relative to the working directory (default: the working directory)
    path: Option<RelPath>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    /// A glob such as src/**/*.rs
    pattern: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// A regular expression
    pattern: String,
    /// File or directory to search (default: the working directory)
    path: Option<RelPath>,
}

impl Tool for Files {
    fn manifest(&self) -> ToolManifest {
        use crate::parameters_of as params;
        ToolManifest {
            identifier: "files".into(),
            kind: ToolKind::Builtin,
            title: "Files".into(),
            description: "Read, write, edit and search files in the working directory.".into(),
            system_role: None,
            apis: vec![
                api(
                    "read",
                    "Read a text file, optionally lines start_line..=end_line (1-based).",
                    params::<ReadArgs>(),
                ),
                api(
                    "write",
                    "Create or overwrite a text file.",
                    params::<WriteArgs>(),
                ),
                api(
                    "edit",
                    "Replace the one exact occurrence of old_text with new_text.",
                    params::<EditArgs>(),
                ),
                api("list", "List a directory.", params::<ListArgs>()),
                api(
                    "glob",
                    "Find files matching a glob such as src/**/*.rs.",
                    params::<GlobArgs>(),
                ),
                api(
                    "grep",
                    "Search files for a regular expression; returns path:line: text.",
                    params::<GrepArgs>(),
                ),
            ],
            intervention: None,
        }
    }

    fn effect(&self, api: &str) -> Effect {
        match api {
            "write" => Effect::Idempotent,
            "edit" => Effect::AtMostOnce,
            _ => Effect::Pure,
        }
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let mut args = args;
            let wd = match skill_root(cx, api, &mut args) {
                Ok(Some(dir)) => Some(dir),
                Ok(None) => cx.working_directory.clone(),
                Err(refusal) => return Ok(ToolOutput::failed(refusal)),
            };
            let key = format!("files/{api}");
            // Every filesystem call runs on the blocking pool under a time limit.
            let run =
                |what: String, work: FsWork| bounded(what, FS_TIMEOUT, move || work(wd.as_deref()));
            let result = match api {
                "read" => {
                    let a = tool_args!(key, args, ReadArgs);
                    let what = format!("reading `{}`", a.path);
                    run(
                        what,
                        Box::new(move |wd| read(wd, &a.path, a.start_line, a.end_line)),
                    )
                    .await
                }
                "write" => {
                    let a = tool_args!(key, args, WriteArgs);
                    let what = format!("writing `{}`", a.path);
                    run(what, Box::new(move |wd| write(wd, &a.path, &a.content))).await
                }
                "edit" => {
                    let a = tool_args!(key, args, EditArgs);
                    let what = format!("editing `{}`", a.path);
                    run(
                        what,
                        Box::new(move |wd| edit(wd, &a.path, &a.old_text, &a.new_text)),
                    )
                    .await
                }
                "list" => {
                    let path = tool_args!(key, args, ListArgs)
                        .path
                        .unwrap_or_else(|| ".".into());
                    let what = format!("listing `{path}`");
                    run(what, Box::new(move |wd| list(wd, &path))).await
                }
                "glob" => {
                    let pattern = tool_args!(key, args, GlobArgs).pattern;
                    let what = format!("matching `{pattern}`");
                    run(what, Box::new(move |wd| glob(wd, &pattern))).await
                }
                "grep" => {
                    let a = tool_args!(key, args, GrepArgs);
                    let what = format!("searching for `{}`", a.pattern);
                    run(
                        what,
                        Box::new(move |wd| grep(wd, &a.pattern, a.path.as_deref().unwrap_or("."))),
                    )
                    .await
                }
                other => Err(format!("files has no API `{other}`")),
            };
            Ok(match result {
                Ok(text) => ToolOutput::ok(text),
                Err(e) => ToolOutput::failed(e),
            })
        }
        .boxed()
    }
}

/// The prefix that addresses an active skill's files: `skill://NAME/FILE`.
pub(crate) const SKILL_PREFIX: &str = "skill://";

/// For a `path` naming `skill://NAME/…`: the skill's folder, with `path` rewritten relative to
/// it (confinement then applies there as it does to the working directory). Skill files are
/// read-only, and only an active skill's are reachable.
fn skill_root(
    cx: &ToolContext,
    api: &str,
    args: &mut Value,
) -> Result<Option<std::path::PathBuf>, String> {
    let Some(path) = args.get("path").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some(rest) = path.strip_prefix(SKILL_PREFIX) else {
        return Ok(None);
    };
    if !matches!(api, "read" | "list" | "grep") {
        return Err(format!(
            "`{path}` is a skill's file: skill files are read-only"
        ));
    }
    let (name, file) = rest.split_once('/').unwrap_or((rest, ""));
    let Some((_, dir)) = cx.skill_dirs.iter().find(|(n, _)| n == name) else {
        return Err(format!(
            "no active skill named `{name}` (activate it with skills.activate first)"
        ));
    };
    let file = if file.is_empty() { "." } else { file };
    args["path"] = Value::String(file.to_owned());
    Ok(Some(dir.clone()))
}

fn read(
    wd: Option<&Path>,
    p: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<String, String> {
    let path = confine(wd, p)?;
    let (file, size) = open_regular(&path, p)?;
    let reader = std::io::BufReader::with_capacity(64 * 1024, file.take(MAX_SCAN));
    lines(reader, p, size, start, end)
}

/// Lines `start..=end` (1-based; all by default) of file `p` of `size` bytes, read from
/// `reader`, as `files.read` returns them: at most [`MAX_READ`] bytes (a note says where it
/// stopped), binary files refused.
pub(crate) fn lines(
    mut reader: impl BufRead,
    p: &str,
    size: u64,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<String, String> {
    let start = start.unwrap_or(1).max(1);
    let mut out: Vec<u8> = Vec::new();
    let (mut line, mut scanned, mut first) = (1u64, 0u64, true);
    loop {
        let buf = reader
            .fill_buf()
            .map_err(|e| format!("cannot read `{p}`: {e}"))?;
        if buf.is_empty() {
            break;
        }
        if first && buf[..buf.len().min(8192)].contains(&0) {
            return Err(format!("`{p}` is a binary file ({size} bytes)"));
        }
        first = false;
        let n = buf.len();
        let mut at = 0;
        while at < n {
            let stop = buf[at..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(n, |i| at + i + 1);
            if line >= start {
                if end.is_some_and(|e| line > e) {
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                if out.len() + (stop - at) > MAX_READ {
                    let mut text = String::from_utf8_lossy(&out).into_owned();
                    let _ = write!(
                        text,
                        "[... truncated at line {line}; read a smaller range ...]"
                    );
                    return Ok(text);
                }
                out.extend_from_slice(&buf[at..stop]);
            }
            if stop > at && buf[stop - 1] == b'\n' {
                line += 1;
            }
            at = stop;
        }
        scanned += n as u64;
        reader.consume(n);
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if scanned >= MAX_SCAN && size > MAX_SCAN {
        let _ = write!(
            text,
            "[... stopped after the first {} MiB of `{p}` ({size} bytes, line {line} reached) ...]",
            MAX_SCAN >> 20
        );
    }
    if !text.is_empty() && !text.ends_with('\n') && !text.ends_with("...]") {
        text.push('\n');
    }
    Ok(text)
}

fn write(wd: Option<&Path>, p: &str, content: &str) -> Result<String, String> {
    let path = confine(wd, p)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the directory for `{p}`: {e}"))?;
    }
    write_regular(&path, p, content.as_bytes())?;
    Ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        shown(wd, &path)
    ))
}

fn edit(wd: Option<&Path>, p: &str, old: &str, new: &str) -> Result<String, String> {
    let path = confine(wd, p)?;
    let (file, size) = open_regular(&path, p)?;
    if size > MAX_EDIT {
        return Err(EditRefused::TooLarge {
            path: p.to_owned(),
            size,
        }
        .to_string());
    }
    let (bytes, _) = read_prefix(file, MAX_EDIT).map_err(|e| format!("cannot read `{p}`: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("`{p}` is not UTF-8 text"))?;
    let edited = replaced(&text, p, old, new).map_err(|e| e.to_string())?;
    write_regular(&path, p, edited.as_bytes())?;
    Ok(format!("edited {}", shown(wd, &path)))
}

/// `text` (file `p`) with the one occurrence of `old` replaced by `new`, or why not.
pub(crate) fn replaced(text: &str, p: &str, old: &str, new: &str) -> Result<String, EditRefused> {
    match text.matches(old).count() {
        0 => Err(EditRefused::NotFound { path: p.to_owned() }),
        1 => Ok(text.replacen(old, new, 1)),
        n => Err(EditRefused::NotUnique {
            path: p.to_owned(),
            count: n,
        }),
    }
}

/// Why `files.edit` changed nothing (the model reads it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditRefused {
    /// The text to replace is not in the file.
    #[error("`{path}` does not contain the text to replace; read the file and copy it exactly")]
    NotFound {
        /// The file, as the model named it.
        path: String,
    },
    /// The text to replace is there more than once.
    #[error(
        "the text to replace occurs {count} times in `{path}`; include more context so it is unique"
    )]
    NotUnique {
        /// The file, as the model named it.
        path: String,
        /// How many times.
        count: usize,
    },
    /// The file is larger than an edit holds in memory.
    #[error(
        "`{path}` is {size} bytes, more than the {} MiB this tool edits; write it whole or use another tool",
        MAX_EDIT >> 20
    )]
    TooLarge {
        /// The file, as the model named it.
        path: String,
        /// Its size.
        size: u64,
    },
}

fn list(wd: Option<&Path>, p: &str) -> Result<String, String> {
    let path = confine(wd, p)?;
    let mut entries: Vec<String> = std::fs::read_dir(&path)
        .map_err(|e| format!("cannot list `{p}`: {e}"))?
        .filter_map(Result::ok)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    entries.sort();
    entries.truncate(MAX_ENTRIES);
    Ok(entries.join("\n"))
}

fn walk(root: &Path) -> impl Iterator<Item = walkdir::DirEntry> {
    // Symlinks are not followed: a link must not lead the walk outside the directory.
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
}

fn glob(wd: Option<&Path>, pattern: &str) -> Result<String, String> {
    let root = confine(wd, ".")?;
    let matcher = globset::Glob::new(pattern)
        .map_err(|e| format!("invalid glob `{pattern}`: {e}"))?
        .compile_matcher();
    let mut hits: Vec<String> = walk(&root)
        .filter_map(|e| e.path().strip_prefix(&root).ok().map(|p| p.to_path_buf()))
        .filter(|p| matcher.is_match(p))
        .map(|p| p.display().to_string())
        .take(MAX_ENTRIES)
        .collect();
    hits.sort();
    Ok(if hits.is_empty() {
        format!("no files match `{pattern}`")
    } else {
        hits.join("\n")
    })
}

fn grep(wd: Option<&Path>, pattern: &str, p: &str) -> Result<String, String> {
    let re = regex::Regex::new(pattern)
        .map_err(|e| format!("invalid regular expression `{pattern}`: {e}"))?;
    let root = confine(wd, ".")?;
    let start = confine(wd, p)?;
    let mut out = Vec::new();
    let mut skipped = 0usize;
    for e in walk(&start) {
        // Only regular files, opened without blocking, and only their first MAX_GREP_FILE bytes.
        let Ok((file, size)) = open_regular(e.path(), "") else {
            continue;
        };
        if size > MAX_GREP_FILE {
            skipped += 1;
            continue;
        }
        let Ok((bytes, _)) = read_prefix(file, MAX_GREP_FILE) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let rel = e
            .path()
            .strip_prefix(&root)
            .map(|r| r.display().to_string())
            .unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                out.push(format!(
                    "{rel}:{}: {}",
                    i + 1,
                    line.chars().take(300).collect::<String>()
                ));
                if out.len() >= MAX_ENTRIES {
                    out.push(format!("[... stopped at {MAX_ENTRIES} matches ...]"));
                    return Ok(out.join("\n"));
                }
            }
        }
    }
    if skipped > 0 {
        out.push(format!(
            "[... {skipped} files over {} MiB not searched ...]",
            MAX_GREP_FILE >> 20
        ));
    }
    Ok(if out.is_empty() {
        format!("no matches for `{pattern}`")
    } else {
        out.join("\n")
    })
}
