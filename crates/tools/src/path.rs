//! Confinement to the working directory: a path is accepted only if, after resolving `.`/`..`
//! lexically *and* following every symlink that exists, it stays inside the working directory.

use rein_core::intervention::lexical_join as lexical;
use std::path::{Path, PathBuf};

/// Resolve `requested` inside `wd`, or say why it is refused.
pub(crate) fn confine(wd: Option<&Path>, requested: &str) -> Result<PathBuf, String> {
    let wd = wd.ok_or("this operation has no working directory, so file tools are unavailable")?;
    let root = wd
        .canonicalize()
        .map_err(|e| format!("the working directory {} is not usable: {e}", wd.display()))?;
    let candidate = lexical(&root, Path::new(requested));
    if !candidate.starts_with(&root) {
        return Err(format!(
            "`{requested}` is outside the working directory {}",
            root.display()
        ));
    }
    // Follow symlinks on the longest existing prefix: a link may point anywhere.
    let mut existing = candidate.clone();
    let mut rest = Vec::new();
    while !existing.exists() && existing.symlink_metadata().is_err() {
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let resolved = existing
        .canonicalize()
        .map_err(|e| format!("`{requested}` cannot be resolved: {e}"))?;
    if !resolved.starts_with(&root) {
        return Err(format!(
            "`{requested}` leads outside the working directory through a symbolic link"
        ));
    }
    let mut full = resolved;
    for name in rest.into_iter().rev() {
        full.push(name);
    }
    Ok(full)
}

/// `path` relative to `wd`, for display.
pub fn shown(wd: Option<&Path>, path: &Path) -> String {
    wd.and_then(|w| w.canonicalize().ok())
        .and_then(|w| path.strip_prefix(&w).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}
