//! What a path argument could reach: `/`, a system directory, a home directory or its parents,
//! the working directory or above it, or a block device. Paths are resolved lexically against
//! every working directory the command could be in (it may `cd` first), globs are matched
//! against the protected names instead of by spelling, and a path with a part whose value is
//! unknown is resolved only when its final name pins it down.

use super::value::{HOME, QUOTED_UNKNOWN, SPLIT_UNKNOWN, has_unknown};

/// What a path reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    /// `/`, a top-level system directory or one just below it, or their contents.
    Root,
    /// A home directory, its contents, or the directories holding home directories.
    Home,
    /// The working directory itself, an ancestor of it, or an ancestor's contents.
    WorkdirOrAbove,
    /// The value is not known well enough to say.
    Unresolved,
}

impl Reach {
    /// A phrase for explanations.
    pub(super) fn phrase(self) -> &'static str {
        match self {
            Reach::Root => "reaches / or a system directory",
            Reach::Home => "reaches a home directory or its parents",
            Reach::WorkdirOrAbove => "reaches the working directory or above it",
            Reach::Unresolved => "cannot be resolved",
        }
    }
}

/// A directory the command could be working in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Cwd {
    /// Relative to the operation's working directory (components, may start with `..`).
    Work(Vec<String>),
    /// An absolute directory.
    Abs(Vec<String>),
    /// Not known (`cd "$X"`, `cd -`).
    Unknown,
}

/// Top-level directories whose loss breaks the system.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "opt",
    "proc",
    "run",
    "sbin",
    "snap",
    "srv",
    "sys",
    "usr",
    "var",
    "System",
    "Library",
    "Applications",
    "Volumes",
    "private",
];

/// System directories protected at every depth (`/usr/local/lib`, `/etc/ssh/sshd_config.d`).
const DEEP_SYSTEM_DIRS: &[&str] = &[
    "bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "usr",
    "System", "Library", "private",
];

/// System directories whose direct children are protected too (`/var/lib`, `/var/log`), but
/// not what lies deeper (`/var/tmp/build`).
const SHALLOW_SYSTEM_DIRS: &[&str] = &["var"];

/// Directories holding users' home directories.
const HOME_PARENTS: &[&str] = &["home", "Users"];

/// A component pattern of a protected path: a name, or any one name.
#[derive(Clone, Copy)]
enum Part {
    Name(&'static str),
    Any,
}

fn protected() -> Vec<(Vec<Part>, Reach)> {
    let mut out: Vec<(Vec<Part>, Reach)> = vec![(Vec::new(), Reach::Root)];
    out.extend(
        SYSTEM_DIRS
            .iter()
            .map(|d| (vec![Part::Name(d)], Reach::Root)),
    );
    out.extend(
        SHALLOW_SYSTEM_DIRS
            .iter()
            .map(|d| (vec![Part::Name(d), Part::Any], Reach::Root)),
    );
    out.extend(
        HOME_PARENTS
            .iter()
            .map(|d| (vec![Part::Name(d)], Reach::Home)),
    );
    out.extend(
        HOME_PARENTS
            .iter()
            .map(|d| (vec![Part::Name(d), Part::Any], Reach::Home)),
    );
    out.push((vec![Part::Name("root")], Reach::Home));
    out
}

/// Names a final component may not have when the rest of the path is unknown: with an unknown
/// prefix they could be a protected directory.
fn protected_name(name: &str) -> bool {
    SYSTEM_DIRS.contains(&name)
        || HOME_PARENTS.contains(&name)
        || name == "root"
        || name == "~"
        || name.is_empty()
}

/// Whether `c` contains glob syntax.
pub(super) fn is_glob(c: &str) -> bool {
    c.contains(['*', '?', '['])
}

/// Glob match of one path component (`*`, `?`, `[…]`, extended globs as anything); a literal
/// pattern matches only itself, and a wildcard never matches a leading dot.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') && is_glob(pattern) {
        // Shells never let a wildcard match a leading dot.
        return false;
    }
    if pattern.contains('(') {
        // Extended globs (`@(…)`, `!(…)`): over-approximate as matching anything.
        return true;
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n)
}

fn match_from(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class(&p[pi..], n[ni]) {
                        if matched {
                            pi += next;
                            ni += 1;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        // An unclosed `[` is a literal.
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                c if c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// A `[…]` class at the start of `p`: whether it matches `c`, and its length.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let start = i;
    let mut matched = false;
    while i < p.len() {
        if p[i] == ']' && i > start {
            return Some((matched != negate, i + 1));
        }
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|e| *e != ']') {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

/// A glob component that matches nearly every name in a directory (`*`, `?*`, `.*`).
pub(super) fn broad(c: &str) -> bool {
    is_glob(c)
        && (glob_match(c, "bin")
            || glob_match(c, "a")
            || (glob_match(c, ".ssh") && glob_match(c, ".config")))
}

fn comp_matches(t: &str, p: Part) -> bool {
    match p {
        Part::Any => true,
        Part::Name(name) => glob_match(t, name),
    }
}

/// An absolute path (components, normalized) against the protected paths.
fn check_abs(comps: &[String]) -> Option<Reach> {
    if comps
        .first()
        .is_some_and(|c| DEEP_SYSTEM_DIRS.iter().any(|d| glob_match(c, d)))
    {
        return Some(Reach::Root);
    }
    for (pattern, reach) in protected() {
        // The path is a protected directory or one of its ancestors.
        let covers = comps.len() <= pattern.len()
            && comps.iter().zip(&pattern).all(|(t, p)| comp_matches(t, *p));
        // The path names every entry of a protected directory.
        let contents = comps.len() == pattern.len() + 1
            && comps.last().is_some_and(|l| broad(l))
            && comps.iter().zip(&pattern).all(|(t, p)| comp_matches(t, *p));
        if covers || contents {
            return Some(reach);
        }
    }
    None
}

/// A path relative to the working directory (components, normalized, may start with `..`);
/// the working directory itself counts unless `beyond` (only what lies above it does).
fn check_rel(comps: &[String], beyond: bool) -> Option<Reach> {
    let ups = comps.iter().take_while(|c| *c == "..").count();
    let rest = &comps[ups..];
    if comps.is_empty() {
        return (!beyond).then_some(Reach::WorkdirOrAbove);
    }
    if ups > 0 && (rest.is_empty() || (rest.len() == 1 && broad(&rest[0]))) {
        return Some(Reach::WorkdirOrAbove);
    }
    None
}

/// `path`'s components resolved lexically from `base`: `..` pops (never above the root of an
/// absolute path; a relative one may climb, keeping leading `..`).
pub(super) fn normalize(base: &[String], path: &str, absolute: bool) -> Vec<String> {
    let mut out: Vec<String> = base.to_vec();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| l != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..".into());
                }
            }
            c => out.push(c.to_owned()),
        }
    }
    out
}

/// With an unknown part, the path is pinned down only by a final name that is literal (or a
/// narrow glob such as `*.pyc`), not `.`/`..`, and not a protected directory's name.
fn unknown_rule(path: &str) -> Option<Reach> {
    if path.contains(SPLIT_UNKNOWN) {
        // Unquoted: the value may split into several arguments, any of them a path.
        return Some(Reach::Unresolved);
    }
    let last = path.rsplit('/').find(|c| !c.is_empty()).unwrap_or("");
    let pinned = !last.contains(QUOTED_UNKNOWN)
        && path.contains('/')
        && !matches!(last, "." | "..")
        && !glob_match(last, "..")
        && !broad(last)
        && !protected_name(last)
        && !path.ends_with('/');
    if pinned {
        None
    } else {
        Some(Reach::Unresolved)
    }
}

/// Variants of `path` in which each glob component that could match `..` is `..` (shells
/// differ on whether `.*` matches `..`).
fn dot_variants(path: &str) -> Vec<String> {
    let comps: Vec<&str> = path.split('/').collect();
    let risky: Vec<usize> = comps
        .iter()
        .enumerate()
        .filter(|(_, c)| is_glob(c) && glob_match(c, ".."))
        .map(|(i, _)| i)
        .take(6)
        .collect();
    let mut out = vec![path.to_owned()];
    for i in &risky {
        let mut v = comps.clone();
        v[*i] = "..";
        out.push(v.join("/"));
    }
    if risky.len() > 1 {
        let mut v = comps.clone();
        for i in &risky {
            v[*i] = "..";
        }
        out.push(v.join("/"));
    }
    out
}

/// The most serious place `path` could reach from any of `cwds`; `None` when it stays
/// somewhere ordinary.
pub(super) fn reach(path: &str, cwds: &[Cwd]) -> Option<Reach> {
    reach_from(path, cwds, false)
}

/// [`reach`] for what deletes by side effect (`tar --remove-files`, `rsync --delete`, `git
/// clean`): the working directory itself is the work's own place; only what lies above it, a
/// home directory, the root or a system directory counts.
pub(super) fn reach_beyond_work(path: &str, cwds: &[Cwd]) -> Option<Reach> {
    reach_from(path, cwds, true)
}

fn reach_from(path: &str, cwds: &[Cwd], beyond: bool) -> Option<Reach> {
    if path.is_empty() {
        // `rm -rf ""` removes nothing.
        return None;
    }
    if has_unknown(path) {
        let absolute = path.starts_with('/');
        return if absolute || cwds.iter().all(|c| !matches!(c, Cwd::Unknown)) {
            unknown_rule(path)
        } else {
            unknown_rule(&format!("{QUOTED_UNKNOWN}/{path}"))
        };
    }
    let mut worst: Option<Reach> = None;
    let mut note = |r: Option<Reach>| {
        if let Some(r) = r {
            worst = Some(match (worst, r) {
                (Some(Reach::Root), _) | (_, Reach::Root) => Reach::Root,
                (Some(Reach::Home), _) | (_, Reach::Home) => Reach::Home,
                (Some(Reach::Unresolved), _) | (_, Reach::Unresolved) => Reach::Unresolved,
                _ => Reach::WorkdirOrAbove,
            });
        }
    };
    for variant in dot_variants(path) {
        if variant.starts_with('/') {
            note(check_abs(&normalize(&[], &variant, true)));
            continue;
        }
        for cwd in cwds {
            match cwd {
                Cwd::Work(base) => note(check_rel(&normalize(base, &variant, false), beyond)),
                Cwd::Abs(base) => note(check_abs(&normalize(base, &variant, true))),
                Cwd::Unknown => note(unknown_rule(&format!("{QUOTED_UNKNOWN}/{variant}"))),
            }
        }
    }
    worst
}

/// Name prefixes of disks and partitions under `/dev` (`sda1`, `nvme0n1p2`, `mmcblk0`, ...).
const BLOCK_DEVICES: &[&str] = &[
    "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "md", "dm-", "loop", "sr", "nbd", "rbd",
    "zd", "sg", "ubd", "fd0", "fd1",
];

/// Whether a name under `/dev` could be a disk or a partition (a glob is tried on samples).
fn block_name(name: &str) -> bool {
    if has_unknown(name) {
        return true;
    }
    if is_glob(name) {
        return BLOCK_DEVICES.iter().any(|p| {
            ["a", "0", "b1", "0n1", "0p1"]
                .iter()
                .any(|s| glob_match(name, &format!("{p}{s}")))
        });
    }
    BLOCK_DEVICES.iter().any(|p| name.starts_with(p))
}

/// Whether `path` (from any of `cwds`) could be a block device; an unknown name under `/dev`
/// counts as one.
pub(super) fn block_device(path: &str, cwds: &[Cwd]) -> bool {
    let candidates: Vec<Vec<String>> = if path.starts_with('/') {
        vec![normalize(&[], path, true)]
    } else {
        cwds.iter()
            .filter_map(|c| match c {
                Cwd::Abs(base) => Some(normalize(base, path, true)),
                Cwd::Unknown => Some(normalize(&["dev".to_owned()], path, true)),
                Cwd::Work(_) => None,
            })
            .collect()
    };
    candidates.iter().any(|comps| {
        let Some((first, rest)) = comps.split_first() else {
            return false;
        };
        if !glob_match(first, "dev") {
            return false;
        }
        match rest {
            [] => false,
            [name] => block_name(name),
            [dir, ..] => {
                has_unknown(dir)
                    || glob_match(dir, "mapper")
                    || glob_match(dir, "disk")
                    || glob_match(dir, "md")
            }
        }
    })
}

/// `path` as shown to a person (the home placeholder back as `~`, unknown parts as `…`).
pub(super) fn shown(path: &str) -> String {
    path.replace(HOME, "~")
        .replace([QUOTED_UNKNOWN, SPLIT_UNKNOWN], "…")
}
