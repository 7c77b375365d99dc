//! Dynamic audits: policies decided from a call's arguments and the operation's facts.

use crate::state::Metadata;
use std::path::{Component, Path, PathBuf};

/// Decides at call time whether a call needs intervention.
pub trait DynamicAudit: Send + Sync {
    /// True when the call should be intervened on.
    fn requires_intervention(&self, args: &serde_json::Value, metadata: &Metadata) -> bool;
}

/// Argument names that carry a filesystem path.
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "directory",
    "dir",
    "cwd",
    "scope",
    "old_path",
    "oldPath",
    "new_path",
    "newPath",
    "source",
    "destination",
    "target",
];

/// Fires when any path argument resolves outside the operation's working directory.
/// Without a working directory it never fires (there is no scope to leave).
#[derive(Clone, Copy, Debug, Default)]
pub struct PathScopeAudit;

/// Lexical normalization: resolves `.` and `..` without touching the filesystem (the path may
/// not exist yet, and the audit must be pure).
fn normalize(base: &Path, p: &str) -> PathBuf {
    let expanded = p.strip_prefix("~/").map(|rest| format!("/~home/{rest}"));
    lexical_join(base, Path::new(expanded.as_deref().unwrap_or(p)))
}

/// `p` joined to `base` (unless absolute) with `.` and `..` resolved lexically, without touching
/// the filesystem: `..` above the root stays at the root.
pub fn lexical_join(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn collect_paths<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, val) in map {
                match val {
                    serde_json::Value::String(s) if PATH_KEYS.contains(&k.as_str()) => out.push(s),
                    serde_json::Value::String(s) if k == "pattern" && s.starts_with('/') => {
                        out.push(s)
                    }
                    serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                        collect_paths(val, out)
                    }
                    _ => {}
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect_paths(i, out)),
        _ => {}
    }
}

impl DynamicAudit for PathScopeAudit {
    fn requires_intervention(&self, args: &serde_json::Value, metadata: &Metadata) -> bool {
        let Some(wd) = metadata.working_directory.as_deref() else {
            return false;
        };
        let base = normalize(Path::new("/"), wd);
        let mut paths = Vec::new();
        collect_paths(args, &mut paths);
        paths
            .into_iter()
            .any(|p| !normalize(&base, p).starts_with(&base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(wd: &str) -> Metadata {
        Metadata {
            working_directory: Some(wd.into()),
            ..Default::default()
        }
    }

    #[test]
    fn path_scope() {
        let a = PathScopeAudit;
        let m = meta("/work/project");
        assert!(!a.requires_intervention(&json!({"path": "src/main.rs"}), &m));
        assert!(!a.requires_intervention(&json!({"path": "/work/project/a/../b"}), &m));
        assert!(a.requires_intervention(&json!({"path": "../other/secret"}), &m));
        assert!(a.requires_intervention(&json!({"file_path": "/etc/hosts"}), &m));
        assert!(a.requires_intervention(&json!({"path": "~/notes.txt"}), &m));
        assert!(a.requires_intervention(
            &json!({"items": [{"oldPath": "a", "newPath": "/tmp/b"}]}),
            &m
        ));
        assert!(a.requires_intervention(&json!({"pattern": "/var/log/*.log"}), &m));
        assert!(!a.requires_intervention(&json!({"pattern": "*.rs"}), &m));
        assert!(!a.requires_intervention(&json!({"path": "/etc"}), &Metadata::default()));
        assert!(a.requires_intervention(&json!({"path": "/work/project-evil/x"}), &m));
    }
}
