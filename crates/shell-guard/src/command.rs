//! One simple command, expanded: peel launchers (see [`super::launchers`]), follow the programs hidden in strings (`sh -c`, `eval`,
//! `su -c`, `watch`, `trap`, `alias`, a shell fed by a pipeline or a here-string), track the
//! working directory (`cd`) and downloaded files, then hand the command to the rules.

use super::ShellPredicate;
use super::launchers::{
    Unwrapped, is_assignment, join, launcher, option_value, replace_string, skip_launcher_options,
    unwrap,
};
use super::reach::{Cwd, normalize, shown};
use super::value::{Field, Produced, SPLIT_UNKNOWN, has_unknown};
use super::walk::{Stdin, Walker};

/// Shells: with `-c` they run a string; without a script they run their standard input.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish", "csh",
    "tcsh",
];
/// Interpreters that run their standard input when given no script.
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "tclsh",
    "Rscript",
    "deno",
    "bun",
    "osascript",
    "pwsh",
];
/// Programs that fetch from the network.
const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "aria2c",
    "axel",
    "http",
    "https",
    "xh",
    "lwp-request",
    "GET",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "tftp",
    "ftp",
];
/// Programs that decode data into something else.
const DECODERS: &[&str] = &[
    "base64", "base32", "basenc", "xxd", "uudecode", "openssl", "gzip", "gunzip", "zcat", "bzcat",
    "xzcat", "zstdcat", "rev", "tr", "od",
];
/// Privilege escalation.
const ESCALATORS: &[&str] = &[
    "sudo", "doas", "su", "pkexec", "run0", "sudoedit", "ksu", "calife",
];

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `argv` shown as the command it is.
pub(super) fn node(argv: &[Field]) -> String {
    let words: Vec<String> = argv.iter().map(|f| shown(&f.text)).collect();
    format!("`{}`", words.join(" "))
}

impl Walker {
    /// Analyse one expanded simple command; returns what it writes to its standard output.
    pub(super) fn exec(&mut self, argv: &[Field], stdin: &Stdin) -> Produced {
        let node = node(argv);
        let mut i = 0;
        // Leading assignments (`X=1 cmd`, also after `env`).
        while argv
            .get(i)
            .is_some_and(|f| f.is_literal() && is_assignment(&f.text))
        {
            i += 1;
        }
        self.exec_from(argv, i, None, stdin, &node)
    }

    /// The command of `argv` from word `i` on (launchers before it already peeled), with the
    /// arguments an `xargs` before it adds.
    fn exec_from(
        &mut self,
        argv: &[Field],
        mut i: usize,
        mut stdin_extra: Option<Vec<Field>>,
        stdin: &Stdin,
        node: &str,
    ) -> Produced {
        let node = node.to_owned();
        loop {
            let Some(word) = argv.get(i) else {
                return Produced::default();
            };
            if !word.is_literal() {
                let what = if word.procsubst {
                    "a process substitution"
                } else {
                    "a value that is not in the text"
                };
                if word.downloads {
                    self.found(
                        ShellPredicate::DownloadExecute,
                        &node,
                        "the command to run comes from a download".into(),
                    );
                }
                self.found(
                    ShellPredicate::Unanalysable,
                    &node,
                    format!("the command name `{}` is {what}", shown(&word.text)),
                );
                return Produced::default();
            }
            let name = basename(&word.text).to_owned();
            if self.aliases.contains(&word.text) {
                // An alias can stand for anything, a shell reading its input included.
                self.found(
                    ShellPredicate::Unanalysable,
                    &node,
                    format!("`{}` is an alias this command defines", word.text),
                );
                return Produced::default();
            }
            self.note_call(&word.text);
            let args = &argv[i + 1..];
            if self.is_downloaded(&word.text) {
                self.found(
                    ShellPredicate::DownloadExecute,
                    &node,
                    format!("`{}` was downloaded by this command", word.text),
                );
            }
            if ESCALATORS.contains(&name.as_str()) {
                self.found(
                    ShellPredicate::PrivilegeEscalation,
                    &node,
                    format!("`{name}` runs commands as another user"),
                );
            }
            match name.as_str() {
                _ if SHELLS.contains(&name.as_str()) => {
                    return self.shell(&name, args, stdin, &node);
                }
                "busybox" | "toybox" => {
                    // `busybox rm -rf /`: the applet is the next word.
                    i += 1;
                    continue;
                }
                "eval" => return self.eval(args, &node),
                "source" | "." => return self.source(args, stdin, &node),
                "trap" => {
                    if let Some(body) = args.iter().find(|a| !a.text.starts_with('-')) {
                        self.payload(body, "`trap` body", None, &node);
                    }
                    return Produced::default();
                }
                "alias" => {
                    for a in args {
                        if let Some((alias, body)) = a.text.split_once('=') {
                            self.aliases.push(alias.to_owned());
                            let body = Field {
                                text: body.to_owned(),
                                ..a.clone()
                            };
                            self.payload(&body, "`alias` body", None, &node);
                        }
                    }
                    return Produced::default();
                }
                "cd" | "pushd" => {
                    self.change_dir(args);
                    return Produced::default();
                }
                "command"
                    if args
                        .first()
                        .is_some_and(|a| a.text == "-v" || a.text == "-V") =>
                {
                    return Produced::default();
                }
                "env" if option_value(args, &["-C", "--chdir"]).is_some() => {
                    self.cwds.push(Cwd::Unknown);
                }
                "find" => {
                    self.find(args, &node);
                    return self.output_of(&name, args, stdin);
                }
                _ => {}
            }
            if name == "xargs" || name == "parallel" {
                // Its command gets more arguments from standard input (`parallel`: also after
                // `:::`, kept in place as arguments).
                stdin_extra = Some(xargs_input(stdin));
                if let Some(replace) = replace_string(args) {
                    // `xargs -I{} sh -c 'rm -rf {}'`: the input lands inside the command.
                    let rest = skip_launcher_options(&name, args);
                    let mut swapped: Vec<Field> = argv[..i + 1 + rest].to_vec();
                    swapped.extend(args[rest..].iter().map(|a| Field {
                        text: a.text.replace(&replace, &SPLIT_UNKNOWN.to_string()),
                        ..a.clone()
                    }));
                    return self.exec_from(&swapped, i + 1 + rest, stdin_extra, stdin, &node);
                }
            }
            if let Some(l) = launcher(&name) {
                match unwrap(l, &name, args) {
                    Unwrapped::Argv(start) => {
                        i += 1 + start;
                        if name == "env" {
                            while argv
                                .get(i)
                                .is_some_and(|f| f.is_literal() && is_assignment(&f.text))
                            {
                                i += 1;
                            }
                        }
                        continue;
                    }
                    Unwrapped::Shell(body) => {
                        return self.payload(&body, &format!("`{name}` command"), None, &node);
                    }
                    Unwrapped::ShellArgs(start) => {
                        return self.shell("sh", &args[start..], stdin, &node);
                    }
                    Unwrapped::Stdin(Some(file)) => {
                        self.script(&file, &name, &node);
                        return Produced::default();
                    }
                    Unwrapped::Stdin(None) => return self.run_stdin(&name, stdin, &node),
                }
            }
            let owned: Vec<Field>;
            let args = match &stdin_extra {
                Some(extra) => {
                    owned = args.iter().chain(extra).cloned().collect();
                    owned.as_slice()
                }
                None => args,
            };
            self.rules(&name, args, &node);
            if INTERPRETERS
                .contains(&name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.'))
                || INTERPRETERS.contains(&name.as_str())
            {
                self.interpreter(&name, args, stdin, &node);
            }
            return self.output_of(&name, args, stdin);
        }
    }

    /// What a command writes to standard output, as far as it matters downstream.
    fn output_of(&mut self, name: &str, args: &[Field], stdin: &Stdin) -> Produced {
        let mut p = Produced::default();
        if DOWNLOADERS.contains(&name) {
            p.downloads = true;
            self.note_downloads(name, args);
        }
        if DECODERS.contains(&name) {
            p.decodes = true;
        }
        // Listers print paths, one per line, never an option.
        p.paths = match name {
            "find" => args
                .iter()
                .take_while(|a| !a.text.starts_with('-'))
                .all(|a| a.is_literal()),
            "ls" | "fd" | "locate" => true,
            "git" => args.first().is_some_and(|a| a.text == "ls-files"),
            "grep" | "rg" => args
                .iter()
                .any(|a| a.text == "-l" || a.text == "-rl" || a.text == "-lr"),
            _ => false,
        };
        let literal = args.iter().all(Field::is_literal);
        match name {
            "echo" if literal => {
                let words: Vec<&str> = args
                    .iter()
                    .map(|a| a.text.as_str())
                    .skip_while(|a| matches!(*a, "-n" | "-e" | "-E"))
                    .collect();
                p.text = Some(words.join(" "));
            }
            "printf" if literal && args.first().is_some_and(|f| !f.text.contains('%')) => {
                p.text = args.first().map(|f| f.text.replace("\\n", "\n"));
            }
            "cat" | "tee" | "tr" if args.iter().all(|a| a.text.starts_with('-')) => {
                // A filter passes its input on.
                if let Stdin::Pipe(up) = stdin {
                    p.downloads |= up.downloads;
                    p.decodes |= up.decodes;
                    if name == "cat" {
                        p.text = up.text.clone();
                    }
                }
                if let (Stdin::Text(values, _), "cat") = (stdin, name)
                    && let [(text, produced)] = values.as_slice()
                {
                    p.text = Some(text.clone());
                    p.downloads |= produced.downloads;
                }
            }
            _ => {}
        }
        p
    }

    /// A shell: `-c STRING [NAME [ARGS…]]`, a script file, or standard input.
    fn shell(&mut self, name: &str, args: &[Field], stdin: &Stdin, node: &str) -> Produced {
        let mut i = 0;
        let mut command_mode = false;
        let mut read_stdin = false;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "--" || t == "-" {
                read_stdin |= t == "-";
                i += 1;
                break;
            }
            if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                i += 2;
                continue;
            }
            if t.starts_with("--") {
                i += 1;
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 && a.is_literal() {
                command_mode |= t.contains('c');
                read_stdin |= t.contains('s');
                i += 1;
                continue;
            }
            break;
        }
        let rest = &args[i.min(args.len())..];
        if command_mode {
            let Some(body) = rest.first() else {
                return Produced::default();
            };
            let positionals: Option<Vec<String>> = rest[1..]
                .iter()
                .map(|f| f.is_literal().then(|| f.text.clone()))
                .collect::<Option<Vec<_>>>()
                .map(|mut v| {
                    if v.is_empty() {
                        v.push(name.to_owned());
                    }
                    v
                });
            return self.payload(
                body,
                &format!("`{name} -c` string"),
                Some(positionals),
                node,
            );
        }
        match rest.first() {
            Some(script) if !read_stdin => {
                self.script(script, name, node);
                Produced::default()
            }
            _ => self.run_stdin(name, stdin, node),
        }
    }

    /// A script given to a shell or `source` as a file.
    fn script(&mut self, script: &Field, by: &str, node: &str) {
        if script.procsubst || !script.is_literal() {
            if script.downloads {
                self.found(
                    ShellPredicate::DownloadExecute,
                    node,
                    format!("`{by}` runs a downloaded script"),
                );
            }
            self.found(
                ShellPredicate::Unanalysable,
                node,
                format!("`{by}` runs a script generated by another command"),
            );
            return;
        }
        if matches!(script.text.as_str(), "/dev/stdin" | "-")
            || script.text.starts_with("/dev/fd/")
            || script.text.starts_with("/proc/self/fd/")
        {
            self.found(
                ShellPredicate::Unanalysable,
                node,
                format!("`{by}` runs its standard input"),
            );
            return;
        }
        if self.is_downloaded(&script.text) {
            self.found(
                ShellPredicate::DownloadExecute,
                node,
                format!("`{}` was downloaded by this command", script.text),
            );
        }
    }

    /// A shell running what its standard input holds.
    fn run_stdin(&mut self, name: &str, stdin: &Stdin, node: &str) -> Produced {
        match stdin {
            Stdin::Inherited => Produced::default(),
            Stdin::Descriptor => {
                self.found(
                    ShellPredicate::Unanalysable,
                    node,
                    format!("`{name}` runs what another file descriptor holds"),
                );
                Produced::default()
            }
            Stdin::File(f) => {
                self.script(f, name, node);
                Produced::default()
            }
            Stdin::Pipe(up) => {
                if up.downloads {
                    self.found(
                        ShellPredicate::DownloadExecute,
                        node,
                        format!("`{name}` runs what a download produced"),
                    );
                }
                match &up.text {
                    Some(text) => {
                        let body = Field::lit(text.clone());
                        self.payload(&body, &format!("script piped into `{name}`"), None, node)
                    }
                    None => {
                        self.found(
                            ShellPredicate::Unanalysable,
                            node,
                            format!(
                                "`{name}` runs what the commands before it in the pipeline produce"
                            ),
                        );
                        Produced::default()
                    }
                }
            }
            Stdin::Text(values, document) => {
                // A here-document is read and followed, but not vouched for: a document fed to
                // a shell is a script (its continuation lines, quoting and expansions are the
                // shell's). A here-string is one line of text.
                if *document {
                    self.found(
                        ShellPredicate::Unanalysable,
                        node,
                        format!("`{name}` runs a here-document"),
                    );
                }
                let mut out = Produced::default();
                for (text, produced) in values {
                    let body = Field {
                        text: text.clone(),
                        downloads: produced.downloads,
                        decodes: produced.decodes,
                        procsubst: false,
                    };
                    let p =
                        self.payload(&body, &format!("here-document fed to `{name}`"), None, node);
                    out.downloads |= p.downloads;
                }
                out
            }
        }
    }

    /// Run `body` as a program of its own (literal), or say why it cannot be followed.
    pub(super) fn payload(
        &mut self,
        body: &Field,
        context: &str,
        positionals: Option<Option<Vec<String>>>,
        node: &str,
    ) -> Produced {
        if body.is_literal() {
            return self.nested(&body.text, context, positionals.unwrap_or(None));
        }
        if body.downloads {
            self.found(
                ShellPredicate::DownloadExecute,
                node,
                format!("the {context} comes from a download"),
            );
        }
        self.found(
            ShellPredicate::Unanalysable,
            node,
            format!(
                "the {context} is generated when it runs (`{}`)",
                shown(&body.text)
            ),
        );
        Produced::default()
    }

    fn eval(&mut self, args: &[Field], node: &str) -> Produced {
        let body = join(args);
        self.payload(&body, "`eval` string", None, node)
    }

    fn source(&mut self, args: &[Field], stdin: &Stdin, node: &str) -> Produced {
        match args.first() {
            None => Produced::default(),
            Some(f) if f.is_literal() && matches!(f.text.as_str(), "/dev/stdin" | "-") => {
                self.run_stdin("source", stdin, node)
            }
            Some(f) => {
                self.script(f, "source", node);
                Produced::default()
            }
        }
    }

    /// An interpreter with no script runs its standard input; with a process substitution
    /// as its script, that command's output.
    fn interpreter(&mut self, name: &str, args: &[Field], stdin: &Stdin, node: &str) {
        let code_flag = args
            .iter()
            .any(|a| matches!(a.text.as_str(), "-c" | "-e" | "-m" | "-E" | "--eval" | "-r"));
        let script = args.iter().find(|a| !a.text.starts_with('-'));
        if let Some(s) = script
            && !code_flag
            && (s.procsubst || s.downloads)
        {
            self.script(s, name, node);
            return;
        }
        if code_flag || script.is_some() {
            return;
        }
        if let Stdin::Pipe(up) = stdin {
            if up.downloads {
                self.found(
                    ShellPredicate::DownloadExecute,
                    node,
                    format!("`{name}` runs what a download produced"),
                );
            } else if up.decodes {
                self.found(
                    ShellPredicate::Unanalysable,
                    node,
                    format!("`{name}` runs decoded data"),
                );
            }
        }
    }

    /// `cd DIR`: the directories later relative paths could be resolved against.
    fn change_dir(&mut self, args: &[Field]) {
        let target = args
            .iter()
            .find(|a| !a.text.starts_with('-') || a.text == "-");
        let next: Vec<Cwd> = match target {
            None => vec![Cwd::Abs(vec!["home".into(), "~".into()])],
            Some(t) if !t.is_literal() || t.text == "-" => vec![Cwd::Unknown],
            Some(t) if t.text.starts_with('/') => {
                vec![Cwd::Abs(normalize(&[], &t.text, true))]
            }
            Some(t) => {
                if self.loops > 0 && t.text.contains("..") {
                    // Repeated in a loop it could climb anywhere.
                    vec![Cwd::Unknown]
                } else {
                    self.cwds
                        .iter()
                        .map(|c| match c {
                            Cwd::Work(base) => Cwd::Work(normalize(base, &t.text, false)),
                            Cwd::Abs(base) => Cwd::Abs(normalize(base, &t.text, true)),
                            Cwd::Unknown => Cwd::Unknown,
                        })
                        .collect()
                }
            }
        };
        for c in next {
            if !self.cwds.contains(&c) {
                if self.cwds.len() >= 16 {
                    if !self.cwds.contains(&Cwd::Unknown) {
                        self.cwds.push(Cwd::Unknown);
                    }
                    return;
                }
                self.cwds.push(c);
            }
        }
    }

    fn note_downloads(&mut self, name: &str, args: &[Field]) {
        let flags: &[&str] = match name {
            "curl" => &["-o", "--output"],
            "wget" => &["-O", "--output-document"],
            "aria2c" => &["-o", "--out"],
            _ => &[],
        };
        if let Some(out) = option_value(args, flags)
            && out.is_literal()
            && out.text != "-"
        {
            self.downloaded.push(out.text);
        }
    }

    fn is_downloaded(&self, path: &str) -> bool {
        let strip = |p: &str| p.trim_start_matches("./").to_owned();
        self.downloaded.iter().any(|d| strip(d) == strip(path))
    }
}

/// The arguments `xargs` reads: the words of a literal input, paths when a path lister feeds
/// it, anything otherwise (its input could hold `-rf /`).
fn xargs_input(stdin: &Stdin) -> Vec<Field> {
    let literal = match stdin {
        Stdin::Pipe(up) => up.text.clone(),
        Stdin::Text(values, _) if values.len() == 1 => Some(values[0].0.clone()),
        _ => None,
    };
    if let Some(text) = literal {
        return text.split_whitespace().map(Field::lit).collect();
    }
    match stdin {
        Stdin::Pipe(up) if up.paths => {
            vec![Field::lit(format!("./{}", super::value::QUOTED_UNKNOWN))]
        }
        _ => vec![Field::lit(SPLIT_UNKNOWN.to_string())],
    }
}

/// Whether the unknown text could be an option such as `-r`.
pub(super) fn could_be_flag(text: &str) -> bool {
    text.contains(SPLIT_UNKNOWN)
        || (text.starts_with(super::value::QUOTED_UNKNOWN)
            && text
                .chars()
                .all(|c| has_unknown(&c.to_string()) || c.is_ascii_alphanumeric() || c == '-'))
}
