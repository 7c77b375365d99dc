//! Shell-aware detection of destructive `rm` invocations.
//!
//! Regexes over a raw command line miss `sudo  rm -r -f ~/`, `bash -c 'rm -rf /'` and
//! `timeout 5 rm -fr $HOME`, and flag `rm -rf ./build`. This module tokenizes the command the
//! way a POSIX shell would (segments split on `; & | && ||` and newlines, quotes and escapes
//! honoured, redirections dropped), unwraps launchers (`sudo`, `env`, `timeout`, `xargs`,
//! `nohup`, ...) and interpreters (`bash -c`, `sh -c`, `eval`, nested up to depth 2), then
//! inspects the flags and targets of every `rm`. When in doubt it over-detects: asking a human
//! once too often is acceptable, deleting a home directory is not.

use serde::{Deserialize, Serialize};

/// A predicate over a shell command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellPredicate {
    /// Recursive `rm` of `/`, a path that reduces to it, a root-wide glob, or a top-level
    /// system directory.
    RmRecursiveRootTarget,
    /// Recursive `rm` of a home directory itself (`~`, `$HOME`, `/home/<u>`, `/Users/<u>`).
    RmRecursiveHomeTarget,
    /// Recursive forced `rm` of `.` or `..`.
    RmForceDotTarget,
}

/// Evaluate `pred` against a command line.
pub fn check(pred: ShellPredicate, command: &str) -> bool {
    rm_invocations(command, 0)
        .iter()
        .any(|rm| rm.satisfies(pred))
}

const MAX_DEPTH: usize = 2;

/// Split a command line into segments of words.
pub fn segments(command: &str) -> Vec<Vec<String>> {
    Tokenizer::new(command).run()
}

struct Tokenizer {
    chars: Vec<char>,
    pos: usize,
    segments: Vec<Vec<String>>,
    words: Vec<String>,
    word: String,
    in_word: bool,
}

impl Tokenizer {
    fn new(s: &str) -> Self {
        Self {
            chars: s.chars().collect(),
            pos: 0,
            segments: Vec::new(),
            words: Vec::new(),
            word: String::new(),
            in_word: false,
        }
    }

    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn end_word(&mut self) {
        if self.in_word {
            self.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    fn end_segment(&mut self) {
        self.end_word();
        if !self.words.is_empty() {
            self.segments.push(std::mem::take(&mut self.words));
        }
    }

    fn push(&mut self, c: char) {
        self.word.push(c);
        self.in_word = true;
    }

    /// Copy a `$( ... )` body verbatim, parentheses balanced (it stays inside the word).
    fn copy_subshell(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            self.push(c);
            self.pos += 1;
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// Copy a backtick body verbatim.
    fn copy_backticks(&mut self) {
        self.push('`');
        self.pos += 1;
        while let Some(c) = self.peek(0) {
            self.push(c);
            self.pos += 1;
            if c == '`' {
                return;
            }
        }
    }

    /// Skip a redirection operator and its target word.
    fn skip_redirection(&mut self) {
        // A word made only of digits before `>` is a file descriptor, not an argument.
        if self.in_word && self.word.chars().all(|c| c.is_ascii_digit()) {
            self.word.clear();
            self.in_word = false;
        } else {
            self.end_word();
        }
        while matches!(self.peek(0), Some('>' | '<' | '&' | '|')) {
            self.pos += 1;
        }
        // `2>&1`: the target is a descriptor right after `&`.
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')') => break,
                None => {}
            }
            self.pos += 1;
        }
    }

    fn run(mut self) -> Vec<Vec<String>> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' => {
                    self.end_word();
                    self.pos += 1;
                }
                '\n' | ';' | '|' | '(' | ')' => {
                    self.end_segment();
                    self.pos += 1;
                }
                '&' if self.peek(1) == Some('>') => self.skip_redirection(),
                '&' => {
                    self.end_segment();
                    self.pos += 1;
                }
                '>' | '<' => self.skip_redirection(),
                '#' if !self.in_word => {
                    while let Some(n) = self.peek(0) {
                        if n == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek(0) {
                        Some('\n') => self.pos += 1,
                        Some(n) => {
                            self.push(n);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    self.in_word = true;
                    self.pos += 1;
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        if n == '\'' {
                            break;
                        }
                        self.word.push(n);
                    }
                }
                '"' => {
                    self.in_word = true;
                    self.pos += 1;
                    while let Some(n) = self.peek(0) {
                        self.pos += 1;
                        match n {
                            '"' => break,
                            '\\' if matches!(self.peek(0), Some('"' | '\\' | '$' | '`')) => {
                                if let Some(e) = self.peek(0) {
                                    self.word.push(e);
                                }
                                self.pos += 1;
                            }
                            _ => self.word.push(n),
                        }
                    }
                }
                '$' if self.peek(1) == Some('(') => self.copy_subshell(),
                '`' => self.copy_backticks(),
                _ => {
                    self.push(c);
                    self.pos += 1;
                }
            }
        }
        self.end_segment();
        self.segments
    }
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// How a launcher's options are shaped.
struct Launcher {
    names: &'static [&'static str],
    /// Short flags that take a value (`-u root`).
    value_flags: &'static str,
    /// Long flags that take a value when not written `--x=v`.
    long_value_flags: &'static [&'static str],
    /// Positional words consumed before the command (`timeout 5`, `flock /lock`).
    positionals: usize,
}

const LAUNCHERS: &[Launcher] = &[
    Launcher {
        names: &["sudo", "doas"],
        value_flags: "ugCDhprtTU",
        long_value_flags: &[
            "--user",
            "--group",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--close-from",
            "--command-timeout",
            "--other-user",
        ],
        positionals: 0,
    },
    Launcher {
        names: &["env"],
        value_flags: "uCP",
        long_value_flags: &["--unset", "--chdir"],
        positionals: 0,
    },
    Launcher {
        names: &[
            "nohup", "command", "builtin", "time", "setsid", "exec", "then", "do", "else", "!",
        ],
        value_flags: "a",
        long_value_flags: &[],
        positionals: 0,
    },
    Launcher {
        names: &["nice"],
        value_flags: "n",
        long_value_flags: &["--adjustment"],
        positionals: 0,
    },
    Launcher {
        names: &["ionice"],
        value_flags: "cnp",
        long_value_flags: &["--class", "--classdata", "--pid"],
        positionals: 0,
    },
    Launcher {
        names: &["stdbuf"],
        value_flags: "ioe",
        long_value_flags: &["--input", "--output", "--error"],
        positionals: 0,
    },
    Launcher {
        names: &["timeout"],
        value_flags: "sk",
        long_value_flags: &["--signal", "--kill-after"],
        positionals: 1,
    },
    Launcher {
        names: &["flock"],
        value_flags: "wEc",
        long_value_flags: &["--timeout", "--conflict-exit-code", "--command"],
        positionals: 1,
    },
    Launcher {
        names: &["xargs"],
        value_flags: "IinPdLsaE",
        long_value_flags: &[
            "--replace",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--max-lines",
            "--arg-file",
            "--eof",
        ],
        positionals: 0,
    },
    Launcher {
        names: &["strace", "ltrace"],
        value_flags: "oepsuEaIXP",
        long_value_flags: &["--output", "--expr", "--attach", "--user"],
        positionals: 0,
    },
    Launcher {
        names: &["runuser", "su"],
        value_flags: "ugsw",
        long_value_flags: &["--user", "--group", "--shell"],
        positionals: 0,
    },
    Launcher {
        names: &["chroot"],
        value_flags: "",
        long_value_flags: &["--userspec", "--groups"],
        positionals: 1,
    },
];

const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "fish", "busybox"];

/// One `rm` invocation: its flags and targets.
#[derive(Debug, Default)]
struct RmCall {
    recursive: bool,
    force: bool,
    targets: Vec<String>,
}

fn rm_invocations(command: &str, depth: usize) -> Vec<RmCall> {
    let mut out = Vec::new();
    for seg in segments(command) {
        collect(&seg, depth, &mut out);
    }
    out
}

fn collect(words: &[String], depth: usize, out: &mut Vec<RmCall>) {
    let mut i = 0;
    while i < words.len() && is_assignment(&words[i]) {
        i += 1;
    }
    while let Some(w) = words.get(i) {
        let name = basename(w);
        if name == "rm" {
            out.push(parse_rm(&words[i + 1..]));
            return;
        }
        if SHELLS.contains(&name) || name == "eval" {
            if depth < MAX_DEPTH {
                if let Some(payload) = shell_payload(&words[i..]) {
                    out.extend(rm_invocations(&payload, depth + 1));
                }
            } else {
                ambiguity_fallback(&words[i..], out);
            }
            return;
        }
        let Some(l) = LAUNCHERS.iter().find(|l| l.names.contains(&name)) else {
            return;
        };
        i += 1;
        let mut positionals = l.positionals;
        while let Some(w) = words.get(i) {
            if w == "--" {
                i += 1;
                break;
            }
            if name == "env" && is_assignment(w) {
                i += 1;
                continue;
            }
            if (name == "env" && (w == "-S" || w.starts_with("--split-string")))
                || (name == "flock" && (w == "-c" || w == "--command"))
                || (name == "su" && (w == "-c" || w == "--command"))
            {
                // The value is itself a command line.
                let payload = match w.split_once('=') {
                    Some((_, v)) => Some(v.to_owned()),
                    None => words.get(i + 1).cloned(),
                };
                if let Some(p) = payload
                    && depth < MAX_DEPTH
                {
                    out.extend(rm_invocations(&p, depth + 1));
                }
                return;
            }
            if let Some(long) = w.strip_prefix("--") {
                let takes = !long.contains('=') && l.long_value_flags.contains(&w.as_str());
                i += if takes { 2 } else { 1 };
                continue;
            }
            if let Some(short) = w.strip_prefix('-')
                && !short.is_empty()
            {
                // `-u root` takes the next word; `-uroot` carries its value.
                let takes = short.len() == 1 && l.value_flags.contains(short);
                i += if takes { 2 } else { 1 };
                continue;
            }
            if positionals > 0 {
                positionals -= 1;
                i += 1;
                continue;
            }
            break;
        }
        while i < words.len() && is_assignment(&words[i]) && name == "env" {
            i += 1;
        }
    }
}

/// The `-c` argument of a shell, or the joined words of `eval`.
fn shell_payload(words: &[String]) -> Option<String> {
    if basename(&words[0]) == "eval" {
        return Some(words[1..].join(" "));
    }
    let mut iter = words.iter().skip(1);
    while let Some(w) = iter.next() {
        if w.starts_with('-') && !w.starts_with("--") && w.contains('c') {
            return iter.next().cloned();
        }
        if !w.starts_with('-') {
            return None;
        }
    }
    None
}

/// Past the nesting limit, flag any `rm` word followed by a recursive flag.
fn ambiguity_fallback(words: &[String], out: &mut Vec<RmCall>) {
    for (i, w) in words.iter().enumerate() {
        for inner in segments(w) {
            if let Some(pos) = inner.iter().position(|x| basename(x) == "rm") {
                out.push(parse_rm(&inner[pos + 1..]));
            }
        }
        if basename(w) == "rm" {
            out.push(parse_rm(&words[i + 1..]));
        }
    }
}

fn parse_rm(args: &[String]) -> RmCall {
    let mut rm = RmCall::default();
    let mut options_done = false;
    for a in args {
        if !options_done && a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            let name = a.trim_start_matches('-');
            rm.recursive |= name == "recursive" || name.starts_with('r') || name.starts_with('R');
            rm.force |= name == "force" || name.starts_with('f');
        } else if !options_done && a.len() > 1 && a.starts_with('-') {
            rm.recursive |= a.contains('r') || a.contains('R');
            rm.force |= a.contains('f');
        } else {
            rm.targets.push(a.clone());
        }
    }
    rm
}

impl RmCall {
    fn satisfies(&self, pred: ShellPredicate) -> bool {
        if !self.recursive {
            return false;
        }
        let expanded: Vec<String> = self.targets.iter().flat_map(|t| expand(t)).collect();
        match pred {
            ShellPredicate::RmRecursiveRootTarget => expanded.iter().any(|t| is_root_target(t)),
            ShellPredicate::RmRecursiveHomeTarget => expanded.iter().any(|t| is_home_target(t)),
            ShellPredicate::RmForceDotTarget => {
                self.force
                    && expanded
                        .iter()
                        .any(|t| matches!(t.as_str(), "." | "./" | ".." | "../"))
            }
        }
    }
}

/// Expand the shell forms that hide a target: `${X:-/}` defaults and `{a,b}` braces.
fn expand(target: &str) -> Vec<String> {
    let mut out = vec![target.to_owned()];
    if let Some(inner) = target.strip_prefix("${").and_then(|t| t.strip_suffix('}'))
        && let Some((_, default)) = inner.split_once(":-").or_else(|| inner.split_once(":="))
    {
        out.push(default.to_owned());
    }
    if let (Some(open), Some(close)) = (target.find('{'), target.rfind('}'))
        && open < close
        && !target[..open].ends_with('$')
    {
        let (pre, body, post) = (
            &target[..open],
            &target[open + 1..close],
            &target[close + 1..],
        );
        for member in body.split(',') {
            out.push(format!("{pre}{member}{post}"));
        }
    }
    out
}

/// Lexically normalize an absolute path (`//x/./y/..` → `/x`).
fn normalize_abs(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "lib",
    "lib32",
    "lib64",
    "opt",
    "proc",
    "root",
    "sbin",
    "srv",
    "sys",
    "usr",
    "var",
    "home",
    "Users",
    "System",
    "Library",
    "Applications",
];

fn is_root_target(t: &str) -> bool {
    let Some(n) = normalize_abs(t) else {
        return false;
    };
    if n == "/" {
        return true;
    }
    let rest = &n[1..];
    // Root-wide globs (`/*`, `/.*`) and top-level system directories (`/usr`, `/etc/*`).
    if !rest.contains('/') {
        return rest.contains('*') || SYSTEM_DIRS.contains(&rest);
    }
    match rest.split_once('/') {
        Some((top, "*")) => SYSTEM_DIRS.contains(&top) && top != "home" && top != "Users",
        _ => false,
    }
}

fn is_home_target(t: &str) -> bool {
    let trimmed = t.trim_end_matches("/*").trim_end_matches('/');
    let t = if trimmed.is_empty() { t } else { trimmed };
    if matches!(t, "~" | "$HOME" | "${HOME}") {
        return true;
    }
    if let Some(user) = t.strip_prefix('~') {
        // `~alice` is alice's home.
        return !user.is_empty() && !user.contains('/');
    }
    if let Some(n) = normalize_abs(t) {
        let parts: Vec<&str> = n[1..].split('/').collect();
        return matches!(parts.as_slice(), ["home" | "Users", _] | ["root"]);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Vec<String>> {
        segments(s)
    }

    #[test]
    fn tokenizer_splits_segments_and_honours_quotes() {
        assert_eq!(
            words("a 'b c' \"d\\\"e\"; f && g || h | i\nj & k"),
            vec![
                vec!["a", "b c", "d\"e"],
                vec!["f"],
                vec!["g"],
                vec!["h"],
                vec!["i"],
                vec!["j"],
                vec!["k"]
            ]
        );
        assert_eq!(words("echo hi > out.txt 2>&1"), vec![vec!["echo", "hi"]]);
        assert_eq!(words("echo $(a; b) x"), vec![vec!["echo", "$(a; b)", "x"]]);
        assert_eq!(words("a\\ b # comment"), vec![vec!["a b"]]);
    }

    #[test]
    fn rm_flags_and_targets() {
        let r = parse_rm(&["-r".into(), "-f".into(), "--".into(), "-x".into()]);
        assert!(r.recursive && r.force);
        assert_eq!(r.targets, vec!["-x"]);
    }
}
