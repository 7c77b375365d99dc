//! rein-shell-guard: what a command line would do, read from a real shell syntax tree. It owns
//! the analysis the blacklist's shell rules ask (`rein_core::intervention`, where it is
//! re-exported as `intervention::shell`): findings by [`ShellPredicate`], each with the
//! command it concerns and why. Synchronous and without IO (it builds for wasm32 with
//! rein-core); off wasm each analysis runs on a thread of its own under a deadline
//! (`deadline`), so a command the parser chokes on is unanalysable after 2 s, not a hang.
//!
//! Regexes over a raw command line miss `{ rm -rf ~; }`, `X=rm; $X -rf .` and `rm -rf ~/../*`,
//! and flag `grep -r "rm -rf /" docs`. This module parses the command with brush-parser (a
//! maintained POSIX/bash parser), then walks every simple command wherever it sits (pipelines,
//! lists, brace groups, subshells, command and process substitutions, function bodies,
//! `if`/`for`/`while`/`case`, `sh -c` and `eval` strings, `trap` and `alias` bodies), steps over
//! launchers generically by one table of how each runs its arguments (`sudo`, `env`, `nice`,
//! `timeout`, `prlimit`, `setpriv`, `fakeroot`, `script -c`, `sg -c`, `ssh`, `watch`, `xargs`,
//! `busybox` applets, ...: [`launcher_names`]), expands words the way the shell would as far as
//! the text allows (quotes, escapes, `$'…'`, braces, `~`, variables assigned in the same
//! command), and resolves the targets of `rm`, `mv`, `chmod`, `chown`, `find` and of what
//! deletes by side effect (`tar --remove-files`, `rsync --delete`, `git clean -f`, `zip -m`,
//! `shred`, `truncate`) against what they could reach.
//!
//! It fails closed: a command whose name is not a literal (`$X` with an unknown value,
//! `$(…)`), an `eval` or `sh -c` of generated text, a `source` of a generated file, a shell fed
//! from a pipeline, a here-document, a here-string or another descriptor, a name this command
//! made an alias, a recursive `rm` whose target cannot be resolved, a command the parser
//! cannot read, and one of a shape the parser must not be given (`limits`: it backtracks for
//! minutes, panics or never ends on them) are all [`ShellPredicate::Unanalysable`]: the
//! blacklist makes them need a human in every mode that would otherwise run them.

mod command;
#[cfg(not(target_family = "wasm"))]
mod deadline;
mod launchers;
mod limits;
mod reach;
mod rules;
mod side_effects;
mod syntax;
mod value;
mod vars;
mod walk;

pub use launchers::launcher_names;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::sync::Arc;

/// A predicate over a shell command line; each is one finding kind of the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellPredicate {
    /// Recursive `rm` (or `find -delete`) of `/`, a top-level system directory, a root-wide
    /// glob, or a system directory's contents.
    RmRecursiveRootTarget,
    /// Recursive `rm` of a home directory, its contents, or its parents (`~`, `$HOME`,
    /// `~/../*`, `/home/*`).
    RmRecursiveHomeTarget,
    /// Recursive `rm` of the working directory or anything above it (`.`, `..`, `../*`).
    RmForceDotTarget,
    /// What runs cannot be known from the text: a command name that is not a literal, `eval`
    /// or `sh -c` of generated text, `source` of a generated file, a shell reading a pipeline,
    /// an unresolvable recursive `rm` target, or a command the parser cannot read.
    Unanalysable,
    /// `sudo`, `doas`, `su`, `pkexec`, `run0`.
    PrivilegeEscalation,
    /// Something downloaded is executed: `curl … | sh`, `bash <(wget …)`, `sh -c "$(curl …)"`,
    /// a file fetched with `curl -o` then run.
    DownloadExecute,
    /// A write to a block device: `dd of=`, redirections, `tee`, `cp`, `mkfs`, `wipefs`,
    /// `fdisk`, ... on `/dev/sd*`, `/dev/nvme*`, `/dev/mapper/*`, `/dev/disk/*`, ...
    DiskWrite,
    /// `chmod`/`chown`/`chgrp -R` on `/`, system directories, home directories or the
    /// working directory's parents.
    RecursivePermissionChange,
    /// `mv` of `/`, a system directory, a home directory or the working directory's parents.
    MoveProtectedPath,
    /// A function that calls itself at least twice in a pipeline or in the background (or
    /// once in the background in a loop), whatever its name.
    ForkBomb,
}

/// One thing the analysis found, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What kind of danger.
    pub predicate: ShellPredicate,
    /// The simple command it concerns, as the analysis read it, with where it sits in the tree
    /// (``rm -rf ~` in a brace group`).
    pub node: String,
    /// Why it matched (``~/../*` reaches the home directories`).
    pub detail: String,
}

impl Finding {
    /// `node: detail`, as shown in an explanation.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.node, self.detail)
    }
}

/// Everything the analysis found in one command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Findings, deduplicated, in the order they were found.
    pub findings: Vec<Finding>,
    /// Every simple command as it would run (quotes removed, known variables substituted,
    /// redirections appended): the blacklist's text rules also look at these, so quoting
    /// tricks such as `cat /etc/pass''wd` do not hide a path.
    pub rendered: Vec<String>,
}

impl Analysis {
    /// The first finding of kind `predicate`.
    pub fn find(&self, predicate: ShellPredicate) -> Option<&Finding> {
        self.findings.iter().find(|f| f.predicate == predicate)
    }
}

thread_local! {
    /// The last command analysed on this thread: one tool call is checked against every shell
    /// rule of the blacklist, and each would otherwise parse it again.
    static LAST: RefCell<Option<(String, Arc<Analysis>)>> = const { RefCell::new(None) };
}

/// Analyse `command` on this thread, without the deadline and not memoized: for fuzzing, where
/// a parse that does not end must show as a hang and a panic of the guard's own code must
/// fail the run, not become "unanalysable" as they do in [`analyze`].
pub fn analyze_here(command: &str) -> Analysis {
    syntax::analyze_guarded(command)
}

/// Analyse `command` (memoized per thread for the last command).
pub fn analyze(command: &str) -> Arc<Analysis> {
    if let Some(hit) = LAST.with(|l| {
        l.borrow()
            .as_ref()
            .filter(|(c, _)| c == command)
            .map(|(_, a)| Arc::clone(a))
    }) {
        return hit;
    }
    #[cfg(not(target_family = "wasm"))]
    let analysis = Arc::new(deadline::SHARED.analyze(command, syntax::analyze_guarded));
    #[cfg(target_family = "wasm")]
    let analysis = Arc::new(syntax::analyze_guarded(command));
    LAST.with(|l| *l.borrow_mut() = Some((command.to_owned(), Arc::clone(&analysis))));
    analysis
}

/// Whether `command` has a finding of kind `predicate`.
pub fn check(predicate: ShellPredicate, command: &str) -> bool {
    analyze(command).find(predicate).is_some()
}

/// The finding of kind `predicate` in `command`, described (`None` when there is none).
pub fn explain(predicate: ShellPredicate, command: &str) -> Option<String> {
    analyze(command).find(predicate).map(Finding::describe)
}

#[cfg(test)]
mod tests;
