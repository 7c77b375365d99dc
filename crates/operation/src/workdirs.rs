//! Where a user's operations work on a server: a directory they chose inside one the admin
//! allows (`rein serve --user-workdir-root DIR`, repeatable), else the server's own
//! (`--workdir`), else none (no file or shell access). A choice is checked when it is made and
//! again for every operation (a root the admin has since removed no longer covers it): its
//! canonical path must be a directory under a root's, so `..` and symbolic links cannot lead
//! out.

use std::path::{Path, PathBuf};

/// The directories under which users may choose their operations' working directory.
#[derive(Clone, Debug, Default)]
pub struct WorkdirRoots {
    roots: Vec<PathBuf>,
}

/// Why a directory cannot be a user's working directory.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkdirRefusal {
    /// The server lets users choose none.
    #[error(
        "this server lets users choose no working directory (an admin allows some with --user-workdir-root)"
    )]
    NotServed,
    /// Not a path of an existing directory here.
    #[error("`{path}` is not a directory on the server: {why}")]
    Missing {
        /// As given.
        path: String,
        /// Why.
        why: String,
    },
    /// Outside every allowed root.
    #[error("`{path}` is outside the directories this server allows ({})", roots.join(", "))]
    Outside {
        /// As given.
        path: String,
        /// The allowed roots.
        roots: Vec<String>,
    },
}

impl WorkdirRoots {
    /// The roots at `dirs`, each made canonical (an error names one that is not a directory).
    pub fn new(dirs: &[PathBuf]) -> Result<Self, WorkdirRefusal> {
        let mut roots = Vec::with_capacity(dirs.len());
        for d in dirs {
            roots.push(directory(&d.display().to_string())?);
        }
        Ok(Self { roots })
    }

    /// Whether users may choose at all.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// `path` as a working directory: canonical, an existing directory under a root.
    pub fn check(&self, path: &str) -> Result<String, WorkdirRefusal> {
        if self.roots.is_empty() {
            return Err(WorkdirRefusal::NotServed);
        }
        let dir = directory(path)?;
        if self.roots.iter().any(|r| dir.starts_with(r)) {
            Ok(dir.display().to_string())
        } else {
            Err(WorkdirRefusal::Outside {
                path: path.to_owned(),
                roots: self.roots.iter().map(|r| r.display().to_string()).collect(),
            })
        }
    }
}

fn directory(path: &str) -> Result<PathBuf, WorkdirRefusal> {
    let missing = |why: String| WorkdirRefusal::Missing {
        path: path.chars().take(300).collect(),
        why,
    };
    if !Path::new(path).is_absolute() {
        return Err(missing("give an absolute path".into()));
    }
    let dir = std::fs::canonicalize(path).map_err(|e| missing(e.to_string()))?;
    if !dir.is_dir() {
        return Err(missing("not a directory".into()));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_must_be_a_directory_under_a_root_whatever_its_spelling() {
        let base = std::env::temp_dir().join(format!("rein-wd-{}", rein_core::OperationId::new()));
        let root = base.join("root");
        let inside = root.join("alice");
        let outside = base.join("elsewhere");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let roots = WorkdirRoots::new(std::slice::from_ref(&root)).unwrap();
        let shown = |p: &Path| p.display().to_string();
        assert!(roots.check(&shown(&inside)).is_ok());
        assert!(roots.check(&shown(&root)).is_ok());
        // `..` and a symbolic link lead out: refused.
        let dotted = format!("{}/../elsewhere", shown(&root));
        assert!(matches!(
            roots.check(&dotted),
            Err(WorkdirRefusal::Outside { .. })
        ));
        #[cfg(unix)]
        {
            let link = inside.join("out");
            std::os::unix::fs::symlink(&outside, &link).unwrap();
            assert!(matches!(
                roots.check(&shown(&link)),
                Err(WorkdirRefusal::Outside { .. })
            ));
        }
        // A sibling whose name starts like the root's is not under it.
        let sibling = base.join("rootish");
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(matches!(
            roots.check(&shown(&sibling)),
            Err(WorkdirRefusal::Outside { .. })
        ));
        assert!(matches!(
            roots.check("relative/dir"),
            Err(WorkdirRefusal::Missing { .. })
        ));
        assert!(matches!(
            roots.check(&shown(&root.join("nope"))),
            Err(WorkdirRefusal::Missing { .. })
        ));
        assert_eq!(
            WorkdirRoots::default().check(&shown(&inside)),
            Err(WorkdirRefusal::NotServed)
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
