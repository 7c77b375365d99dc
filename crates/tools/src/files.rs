//! `files`: read (line ranges), write, edit (exact unique match), list, glob, grep, all
//! confined to the operation's working directory.

use crate::path::{confine, shown};
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::intervention::{DynamicIntervention, InterventionConfig, InterventionPolicy};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::{Value, json};
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
    }
}

impl Tool for Files {
    fn manifest(&self) -> ToolManifest {
        let path =
            json!({"type": "string", "description": "Path relative to the working directory"});
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
                    json!({"type": "object", "properties": {"path": path, "start_line": {"type": "integer", "minimum": 1}, "end_line": {"type": "integer", "minimum": 1}}, "required": ["path"], "additionalProperties": false}),
                ),
                api(
                    "write",
                    "Create or overwrite a text file.",
                    json!({"type": "object", "properties": {"path": path, "content": {"type": "string"}}, "required": ["path", "content"], "additionalProperties": false}),
                ),
                api(
                    "edit",
                    "Replace the one exact occurrence of old_text with new_text.",
                    json!({"type": "object", "properties": {"path": path, "old_text": {"type": "string", "minLength": 1}, "new_text": {"type": "string"}}, "required": ["path", "old_text", "new_text"], "additionalProperties": false}),
                ),
                api(
                    "list",
                    "List a directory.",
                    json!({"type": "object", "properties": {"path": path}, "additionalProperties": false}),
                ),
                api(
                    "glob",
                    "Find files matching a glob such as src/**/*.rs.",
                    json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"], "additionalProperties": false}),
                ),
                api(
                    "grep",
                    "Search files for a regular expression; returns path:line: text.",
                    json!({"type": "object", "properties": {"pattern": {"type": "string"}, "path": path}, "required": ["pattern"], "additionalProperties": false}),
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
            let s = |k: &str| {
                args.get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let result = match api {
                "read" => read(
                    wd,
                    &s("path"),
                    args.get("start_line").and_then(Value::as_u64),
                    args.get("end_line").and_then(Value::as_u64),
                ),
                "write" => write(wd, &s("path"), &s("content")),
                "edit" => edit(wd, &s("path"), &s("old_text"), &s("new_text")),
                "list" => list(wd, args.get("path").and_then(|v| v.as_str()).unwrap_or(".")),
                "glob" => glob(wd, &s("pattern")),
                "grep" => grep(
                    wd,
                    &s("pattern"),
                    args.get("path").and_then(|v| v.as_str()).unwrap_or("."),
                ),
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
