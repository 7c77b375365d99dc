//! Launchers: programs that run a command given in their arguments (`sudo`, `env`, `nice`,
//! `timeout`, `prlimit`, `setpriv`, `script -c`, `sg GROUP -c`, `ssh HOST …`, `watch`, …).
//! One table says, for each, which of its options take values and how the rest of its
//! arguments becomes the command it runs; [`unwrap`] reads that from an argument list, so the
//! walk steps over a launcher generically to what it runs. Also reading an option's value.

use super::value::Field;

/// How the rest of a launcher's arguments becomes the command it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Runs {
    /// The words after its options (and positional words) are the command and its arguments.
    Argv,
    /// The value of one of `flags` is a string a shell runs (`su -c`, `script -qc`, `env -S`);
    /// without one, `otherwise`.
    String {
        /// The options whose value is the string (`-c`, `--command`).
        flags: &'static [&'static str],
        /// What the launcher runs without them.
        otherwise: Otherwise,
    },
    /// The words after its options are joined with spaces and run by a shell (`watch`,
    /// `ssh HOST …`).
    Joined,
    /// After `--`, the words are a shell's own arguments (`capsh -- -c CMD`).
    ShellArgs,
    /// It runs the commands its standard input holds (`at`, `batch`), or the file of `-f`.
    Stdin,
}

/// What a [`Runs::String`] launcher runs without its string option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Otherwise {
    /// The words after its options (`flock FILE CMD`, `env CMD`).
    Argv,
    /// The words after its options, joined and run by a shell (`sg GROUP CMD`).
    Joined,
    /// A shell reading its standard input (`su USER`, `script`).
    Stdin,
}

/// A launcher: its names, the shapes of its options, and what it runs.
pub(super) struct Launcher {
    /// Names it is called by.
    pub(super) names: &'static [&'static str],
    /// Short options taking a value (attached, `-n5`, or the next word; last in a cluster).
    value_flags: &'static str,
    /// Long options taking a value (`--user root` or `--user=root`).
    long_value_flags: &'static [&'static str],
    /// Long options taking two values (`bwrap --bind SRC DEST`).
    long_pair_flags: &'static [&'static str],
    /// Words it consumes before the command (`timeout 5`, `chroot /srv`, `sg wheel`).
    positionals: usize,
    /// Options after which it takes no positional word (`runuser -u USER CMD`).
    no_positionals_after: &'static [&'static str],
    /// How the rest becomes a command.
    pub(super) runs: Runs,
}

const fn argv(
    names: &'static [&'static str],
    value_flags: &'static str,
    long_value_flags: &'static [&'static str],
    positionals: usize,
) -> Launcher {
    Launcher {
        names,
        value_flags,
        long_value_flags,
        long_pair_flags: &[],
        positionals,
        no_positionals_after: &[],
        runs: Runs::Argv,
    }
}

/// Every launcher the guard steps over.
pub(super) const LAUNCHERS: &[Launcher] = &[
    argv(
        &["sudo", "doas", "pkexec", "run0", "ksu", "calife"],
        "ugCDhprtTUa",
        &[
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
            "--setenv",
        ],
        0,
    ),
    Launcher {
        names: &["env"],
        value_flags: "uCPaS",
        long_value_flags: &["--unset", "--chdir", "--argv0", "--split-string"],
        long_pair_flags: &[],
        positionals: 0,
        no_positionals_after: &[],
        runs: Runs::String {
            flags: &["-S", "--split-string"],
            otherwise: Otherwise::Argv,
        },
    },
    argv(
        &[
            "nohup",
            "builtin",
            "time",
            "setsid",
            "unbuffer",
            "caffeinate",
            "then",
            "do",
            "eatmydata",
            "nocache",
            "catchsegv",
            "torsocks",
            "ssh-agent",
            "nq",
            "tsp",
            "fakeroot-ng",
        ],
        "",
        &[],
        0,
    ),
    argv(&["exec"], "a", &[], 0),
    argv(&["command"], "", &[], 0),
    argv(&["nice"], "n", &["--adjustment"], 0),
    argv(&["ionice"], "cnp", &["--class", "--classdata", "--pid"], 0),
    argv(&["chrt"], "", &[], 1),
    argv(&["taskset"], "", &[], 1),
    argv(&["stdbuf"], "ioe", &["--input", "--output", "--error"], 0),
    argv(&["timeout"], "sk", &["--signal", "--kill-after"], 1),
    Launcher {
        names: &["flock"],
        value_flags: "wEc",
        long_value_flags: &["--timeout", "--conflict-exit-code", "--command"],
        long_pair_flags: &[],
        positionals: 1,
        no_positionals_after: &[],
        runs: Runs::String {
            flags: &["-c", "--command"],
            otherwise: Otherwise::Argv,
        },
    },
    argv(
        &["parallel", "sem"],
        "jIPnLNSEdaCXsk",
        &[
            "--jobs",
            "--sshlogin",
            "--max-args",
            "--delimiter",
            "--arg-file",
            "--timeout",
            "--joblog",
            "--results",
            "--tmpdir",
            "--workdir",
            "--colsep",
            "--id",
        ],
        0,
    ),
    argv(
        &["xargs"],
        "IinPdLsaE",
        &[
            "--replace",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--max-lines",
            "--arg-file",
            "--eof",
        ],
        0,
    ),
    argv(
        &["strace", "ltrace"],
        "oepsuEaIXP",
        &["--output", "--expr", "--attach", "--user"],
        0,
    ),
    Launcher {
        names: &["su"],
        value_flags: "cgGswC",
        long_value_flags: &[
            "--command",
            "--session-command",
            "--group",
            "--supp-group",
            "--shell",
            "--whitelist-environment",
        ],
        long_pair_flags: &[],
        // `su [-] [USER] [-c CMD]`.
        positionals: 1,
        no_positionals_after: &[],
        runs: Runs::String {
            flags: &["-c", "--command", "--session-command"],
            otherwise: Otherwise::Stdin,
        },
    },
    Launcher {
        names: &["runuser"],
        value_flags: "cugGsw",
        long_value_flags: &[
            "--command",
            "--user",
            "--group",
            "--supp-group",
            "--shell",
            "--whitelist-environment",
        ],
        long_pair_flags: &[],
        // `runuser [-] USER -c CMD`, or `runuser -u USER [--] CMD…`.
        positionals: 1,
        no_positionals_after: &["-u", "--user"],
        runs: Runs::String {
            flags: &["-c", "--command"],
            otherwise: Otherwise::Argv,
        },
    },
    Launcher {
        names: &["script"],
        value_flags: "cEIOBTmo",
        long_value_flags: &[
            "--command",
            "--echo",
            "--log-in",
            "--log-out",
            "--log-io",
            "--log-timing",
            "--logging-format",
            "--output-limit",
        ],
        long_pair_flags: &[],
        positionals: 0,
        no_positionals_after: &[],
        runs: Runs::String {
            flags: &["-c", "--command"],
            otherwise: Otherwise::Stdin,
        },
    },
    Launcher {
        names: &["sg"],
        value_flags: "c",
        long_value_flags: &[],
        long_pair_flags: &[],
        positionals: 1,
        no_positionals_after: &[],
        runs: Runs::String {
            flags: &["-c"],
            otherwise: Otherwise::Joined,
        },
    },
    argv(&["chroot"], "", &["--userspec", "--groups"], 1),
    argv(
        &["systemd-run"],
        "upMHE",
        &[
            "--unit",
            "--property",
            "--machine",
            "--host",
            "--setenv",
            "--uid",
            "--gid",
            "--working-directory",
            "--description",
            "--slice",
        ],
        0,
    ),
    Launcher {
        names: &["watch"],
        value_flags: "nd",
        long_value_flags: &["--interval", "--differences"],
        long_pair_flags: &[],
        positionals: 0,
        no_positionals_after: &[],
        runs: Runs::Joined,
    },
    Launcher {
        names: &["ssh"],
        value_flags: "BbcDEeFIiJLlmOoPpQRSWw",
        long_value_flags: &[],
        long_pair_flags: &[],
        positionals: 1,
        no_positionals_after: &[],
        runs: Runs::Joined,
    },
    argv(&["prlimit"], "po", &["--pid", "--output"], 0),
    argv(&["fakeroot"], "lsib", &["--lib", "--faked", "--fd-base"], 0),
    argv(
        &["setpriv"],
        "",
        &[
            "--reuid",
            "--regid",
            "--ruid",
            "--rgid",
            "--euid",
            "--egid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
            "--seccomp-filter",
            "--ptracer",
        ],
        0,
    ),
    argv(
        &["unshare"],
        "SGRwl",
        &[
            "--setuid",
            "--setgid",
            "--root",
            "--wd",
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--propagation",
            "--load-interp",
        ],
        0,
    ),
    argv(
        &["nsenter"],
        "tSGrwZ",
        &["--target", "--setuid", "--setgid", "--env"],
        0,
    ),
    Launcher {
        names: &["capsh"],
        value_flags: "",
        long_value_flags: &[],
        long_pair_flags: &[],
        positionals: 0,
        no_positionals_after: &[],
        runs: Runs::ShellArgs,
    },
    argv(&["firejail"], "", &[], 0),
    Launcher {
        names: &["bwrap"],
        value_flags: "",
        long_value_flags: &[
            "--args",
            "--argv0",
            "--userns",
            "--userns2",
            "--pidns",
            "--uid",
            "--gid",
            "--hostname",
            "--chdir",
            "--unsetenv",
            "--lock-file",
            "--sync-fd",
            "--remount-ro",
            "--proc",
            "--dev",
            "--tmpfs",
            "--mqueue",
            "--dir",
            "--seccomp",
            "--add-seccomp-fd",
            "--block-fd",
            "--userns-block-fd",
            "--info-fd",
            "--json-status-fd",
            "--cap-add",
            "--cap-drop",
            "--perms",
            "--size",
            "--exec-label",
            "--file-label",
        ],
        long_pair_flags: &[
            "--setenv",
            "--bind",
            "--bind-try",
            "--dev-bind",
            "--dev-bind-try",
            "--ro-bind",
            "--ro-bind-try",
            "--file",
            "--bind-data",
            "--ro-bind-data",
            "--symlink",
            "--chmod",
            "--overlay-src",
        ],
        positionals: 0,
        no_positionals_after: &[],
        runs: Runs::Argv,
    },
    argv(
        &["proot"],
        "rRbwkqi",
        &["--rootfs", "--bind", "--cwd", "--kernel-release", "--qemu"],
        0,
    ),
    argv(&["chpst"], "uUbenlLmdopfcrt", &[], 0),
    argv(&["daemonize"], "ceoplE", &[], 0),
    argv(&["faketime"], "", &[], 1),
    argv(
        &["dbus-run-session"],
        "",
        &["--config-file", "--dbus-daemon"],
        0,
    ),
    argv(&["dbus-launch"], "", &["--config-file", "--autolaunch"], 0),
    argv(
        &["valgrind"],
        "",
        &["--tool", "--log-file", "--suppressions"],
        0,
    ),
    argv(&["proxychains", "proxychains4"], "f", &[], 0),
    argv(
        &["rlwrap"],
        "bCefFgHlMOPqsStwz",
        &[
            "--always-readline",
            "--break-chars",
            "--command-name",
            "--extra-char-after-completion",
            "--file",
            "--filter",
            "--history-filename",
            "--histsize",
            "--prompt-colour",
            "--substitute-prompt",
        ],
        0,
    ),
    argv(
        &["systemd-inhibit"],
        "",
        &["--what", "--who", "--why", "--mode"],
        0,
    ),
    argv(
        &["numactl"],
        "CNmpiP",
        &[
            "--physcpubind",
            "--cpunodebind",
            "--membind",
            "--preferred",
            "--interleave",
            "--preferred-many",
        ],
        0,
    ),
    argv(&["cpulimit"], "lpe", &["--limit", "--pid", "--exe"], 0),
    argv(
        &["xvfb-run"],
        "efnpsw",
        &[
            "--error-file",
            "--auth-file",
            "--server-num",
            "--xauth-protocol",
            "--server-args",
            "--wait",
        ],
        0,
    ),
    argv(&["screen"], "SceplLtTXhR", &[], 0),
    Launcher {
        names: &["at", "batch"],
        value_flags: "qfmtMulKo",
        long_value_flags: &[],
        long_pair_flags: &[],
        positionals: 0,
        no_positionals_after: &[],
        runs: Runs::Stdin,
    },
];

/// The launcher `name` is, if it is one.
pub(super) fn launcher(name: &str) -> Option<&'static Launcher> {
    LAUNCHERS.iter().find(|l| l.names.contains(&name))
}

/// Every launcher name, for tests that keep one case per entry.
pub fn launcher_names() -> impl Iterator<Item = &'static str> {
    LAUNCHERS.iter().flat_map(|l| l.names.iter().copied())
}

/// What a launcher runs, read from its arguments.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Unwrapped {
    /// The command and its arguments start at this word.
    Argv(usize),
    /// A string a shell runs.
    Shell(Field),
    /// A shell's own arguments start at this word.
    ShellArgs(usize),
    /// What its standard input holds (or the file its `-f` names).
    Stdin(Option<Field>),
}

/// An option met while reading a launcher's arguments, with its value.
struct Met {
    flag: String,
    value: Option<Field>,
}

/// Read `l`'s options from `args`: the options met, and where the command starts.
fn options(l: &Launcher, name: &str, args: &[Field]) -> (Vec<Met>, usize) {
    let mut met = Vec::new();
    let mut i = 0;
    let mut positionals = l.positionals;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return (met, i + 1);
        }
        if name == "env" && is_assignment(t) {
            i += 1;
            continue;
        }
        if t == "-" {
            // `su -`: a login shell; `env -`: an empty environment.
            met.push(Met {
                flag: "-".into(),
                value: None,
            });
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--")
            && !long.is_empty()
        {
            let (flag, inline) = match long.split_once('=') {
                Some((f, v)) => (format!("--{f}"), Some(v.to_owned())),
                None => (t.to_owned(), None),
            };
            let takes = l.long_value_flags.contains(&flag.as_str());
            let pair = l.long_pair_flags.contains(&flag.as_str());
            let value = match (&inline, takes || pair) {
                (Some(v), _) => Some(Field {
                    text: v.clone(),
                    ..w.clone()
                }),
                (None, true) => args.get(i + 1).cloned(),
                (None, false) => None,
            };
            i += 1
                + usize::from(inline.is_none() && takes)
                + 2 * usize::from(inline.is_none() && pair);
            met.push(Met { flag, value });
            continue;
        }
        if let Some(short) = t.strip_prefix('-')
            && !short.is_empty()
            && !short.starts_with('-')
        {
            // A cluster (`-qc`, `-n5`): the first letter taking a value takes the rest of the
            // word, or the next word when it ends the cluster.
            let mut consumed = 1;
            for (at, c) in short.char_indices() {
                if l.value_flags.contains(c) {
                    let rest = &short[at + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        consumed = 2;
                        args.get(i + 1).cloned()
                    } else {
                        Some(Field {
                            text: rest.to_owned(),
                            ..w.clone()
                        })
                    };
                    met.push(Met {
                        flag: format!("-{c}"),
                        value,
                    });
                    break;
                }
                met.push(Met {
                    flag: format!("-{c}"),
                    value: None,
                });
            }
            i += consumed;
            continue;
        }
        let told_no_more = met
            .iter()
            .any(|m| l.no_positionals_after.contains(&m.flag.as_str()));
        if positionals > 0 && !told_no_more {
            positionals -= 1;
            i += 1;
            continue;
        }
        break;
    }
    (met, i.min(args.len()))
}

/// What launcher `l` (called `name`) runs with `args`.
pub(super) fn unwrap(l: &Launcher, name: &str, args: &[Field]) -> Unwrapped {
    let (met, rest) = options(l, name, args);
    let value_of = |flags: &[&str]| {
        met.iter()
            .find(|m| flags.contains(&m.flag.as_str()))
            .and_then(|m| m.value.clone())
    };
    match l.runs {
        Runs::Argv => Unwrapped::Argv(rest),
        Runs::String { flags, otherwise } => match value_of(flags) {
            Some(body) => Unwrapped::Shell(body),
            None => match otherwise {
                Otherwise::Argv => Unwrapped::Argv(rest),
                Otherwise::Joined => Unwrapped::Shell(join(&args[rest..])),
                Otherwise::Stdin => Unwrapped::Stdin(None),
            },
        },
        Runs::Joined => Unwrapped::Shell(join(&args[rest..])),
        Runs::ShellArgs => Unwrapped::ShellArgs(rest),
        Runs::Stdin => Unwrapped::Stdin(value_of(&["-f"])),
    }
}

/// Arguments joined by spaces, as `eval`, `watch` and `ssh` do.
pub(super) fn join(args: &[Field]) -> Field {
    Field {
        text: args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        downloads: args.iter().any(|a| a.downloads),
        decodes: args.iter().any(|a| a.decodes),
        procsubst: args.iter().any(|a| a.procsubst),
    }
}

/// Whether `word` is `NAME=value`.
pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The replace string of `xargs -I R` / `-i` / `--replace[=R]`, if any.
pub(super) fn replace_string(args: &[Field]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if !t.starts_with('-') || t == "--" {
            break;
        }
        if t == "-I" {
            return args.get(i + 1).map(|f| f.text.clone());
        }
        if let Some(r) = t
            .strip_prefix("-I")
            .or_else(|| t.strip_prefix("--replace="))
        {
            return Some(r.to_owned());
        }
        if t == "-i" || t == "--replace" {
            return Some("{}".to_owned());
        }
        if let Some(r) = t.strip_prefix("-i") {
            return Some(r.to_owned());
        }
    }
    None
}

/// The value of the first of `flags` in `args` (`-c X`, `--command=X`, `-cX` for one-letter
/// flags).
pub(super) fn option_value(args: &[Field], flags: &[&str]) -> Option<Field> {
    for (i, a) in args.iter().enumerate() {
        for flag in flags {
            if a.text == *flag {
                return args.get(i + 1).cloned();
            }
            if flag.starts_with("--")
                && let Some(v) = a.text.strip_prefix(&format!("{flag}="))
            {
                return Some(Field {
                    text: v.to_owned(),
                    ..a.clone()
                });
            }
            if flag.len() == 2
                && !flag.starts_with("--")
                && a.text.len() > 2
                && a.text.starts_with(flag)
                && !a.text.starts_with("--")
            {
                return Some(Field {
                    text: a.text[2..].to_owned(),
                    ..a.clone()
                });
            }
        }
    }
    None
}

/// Words after a launcher's own options and positional words, up to its command.
pub(super) fn skip_launcher_options(name: &str, args: &[Field]) -> usize {
    match launcher(name) {
        Some(l) => options(l, name, args).1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Field> {
        s.split_whitespace().map(Field::lit).collect()
    }

    fn unwrapped(name: &str, args: &str) -> Unwrapped {
        unwrap(launcher(name).unwrap(), name, &words(args))
    }

    #[test]
    fn option_clusters_values_and_pairs_are_read_by_each_launchers_shapes() {
        assert_eq!(
            unwrapped("script", "-qc X out"),
            Unwrapped::Shell(Field::lit("X"))
        );
        assert_eq!(unwrapped("su", "-lc X"), Unwrapped::Shell(Field::lit("X")));
        assert_eq!(unwrapped("su", "root"), Unwrapped::Stdin(None));
        assert_eq!(
            unwrapped("sg", "wheel -c X"),
            Unwrapped::Shell(Field::lit("X"))
        );
        assert_eq!(
            unwrapped("sg", "wheel rm -rf"),
            Unwrapped::Shell(Field::lit("rm -rf"))
        );
        assert_eq!(unwrapped("timeout", "-s KILL 5 rm"), Unwrapped::Argv(3));
        assert_eq!(unwrapped("nice", "-n5 rm"), Unwrapped::Argv(1));
        assert_eq!(
            unwrapped("prlimit", "--nofile=10 -p 4 rm"),
            Unwrapped::Argv(3)
        );
        assert_eq!(
            unwrapped("bwrap", "--bind / / --chdir /tmp rm"),
            Unwrapped::Argv(5)
        );
        assert_eq!(
            unwrapped("setpriv", "--reuid 1000 --clear-groups rm"),
            Unwrapped::Argv(3)
        );
        assert_eq!(
            unwrapped("capsh", "--caps=x -- -c X"),
            Unwrapped::ShellArgs(2)
        );
        assert_eq!(
            unwrapped("ssh", "-p 22 host rm -rf"),
            Unwrapped::Shell(Field::lit("rm -rf"))
        );
        assert_eq!(unwrapped("at", "now"), Unwrapped::Stdin(None));
        assert_eq!(
            unwrapped("at", "-f job now"),
            Unwrapped::Stdin(Some(Field::lit("job")))
        );
        assert_eq!(
            unwrapped("env", "A=1 -S X"),
            Unwrapped::Shell(Field::lit("X"))
        );
        assert_eq!(unwrapped("env", "-i A=1 rm"), Unwrapped::Argv(2));
    }
}
