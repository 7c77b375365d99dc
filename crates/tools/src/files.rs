//! `files`: read (line ranges), write, edit (exact unique match), list, glob, grep, all
//! confined to the operation's working directory.

use crate::path::{confine, shown};
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::{DynamicIntervention, InterventionConfig, InterventionPolicy};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// Bytes a read returns at most.
const MAX_READ: usize = 256 * 1024;
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

/// A path relative to the working directory.
type RelPath = String;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Path relative to the working directory
    path: RelPath,
    /// First line to return (1-based)
    #[schemars(range(min = 1))]
    start_line: Option<u64>,
    /// Last line to return (inclusive)
    #[schemars(range(min = 1))]
    end_line: Option<u64>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// Path relative to the working directory
    path: RelPath,
    /// The whole new content
    content: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// Path relative to the working directory
    path: RelPath,
    /// Text that occurs exactly once in the file
    #[schemars(length(min = 1))]
    old_text: String,
    /// Its replacement
    new_text: String,
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
            let wd = cx.working_directory.as_deref();
            let key = format!("files/{api}");
            let result = match api {
                "read" => {
                    let a = tool_args!(key, args, ReadArgs);
                    read(wd, &a.path, a.start_line, a.end_line)
                }
                "write" => {
                    let a = tool_args!(key, args, WriteArgs);
                    write(wd, &a.path, &a.content)
                }
                "edit" => {
                    let a = tool_args!(key, args, EditArgs);
                    edit(wd, &a.path, &a.old_text, &a.new_text)
                }
                "list" => list(
                    wd,
                    tool_args!(key, args, ListArgs)
                        .path
                        .as_deref()
                        .unwrap_or("."),
                ),
                "glob" => glob(wd, &tool_args!(key, args, GlobArgs).pattern),
                "grep" => {
                    let a = tool_args!(key, args, GrepArgs);
                    grep(wd, &a.pattern, a.path.as_deref().unwrap_or("."))
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

fn read(
    wd: Option<&Path>,
    p: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<String, String> {
    let path = confine(wd, p)?;
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read `{p}`: {e}"))?;
    if bytes.contains(&0) {
        return Err(format!("`{p}` is a binary file ({} bytes)", bytes.len()));
    }
    let text = String::from_utf8_lossy(&bytes);
    let (start, end) = (start.unwrap_or(1).max(1) as usize, end.map(|e| e as usize));
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(start - 1) {
        if end.is_some_and(|e| i + 1 > e) {
            break;
        }
        if out.len() + line.len() > MAX_READ {
            let _ = write!(
                out,
                "[... truncated at line {}; read a smaller range ...]",
                i + 1
            );
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

fn write(wd: Option<&Path>, p: &str, content: &str) -> Result<String, String> {
    let path = confine(wd, p)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create the directory for `{p}`: {e}"))?;
    }
    std::fs::write(&path, content).map_err(|e| format!("cannot write `{p}`: {e}"))?;
    Ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        shown(wd, &path)
    ))
}

fn edit(wd: Option<&Path>, p: &str, old: &str, new: &str) -> Result<String, String> {
    let path = confine(wd, p)?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read `{p}`: {e}"))?;
    match text.matches(old).count() {
        0 => Err(format!(
            "`{p}` does not contain the text to replace; read the file and copy it exactly"
        )),
        1 => {
            std::fs::write(&path, text.replacen(old, new, 1))
                .map_err(|e| format!("cannot write `{p}`: {e}"))?;
            Ok(format!("edited {}", shown(wd, &path)))
        }
        n => Err(format!(
            "the text to replace occurs {n} times in `{p}`; include more context so it is unique"
        )),
    }
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
    for e in walk(&start) {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
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
    Ok(if out.is_empty() {
        format!("no matches for `{pattern}`")
    } else {
        out.join("\n")
    })
}
