//! Launchers: programs that run the command given as their arguments (`sudo`, `env`, `nice`,
//! `timeout`, `xargs`, ...), the shapes of their options, and how to step over them to the
//! command they run; and reading an option's value from an argument list.

use super::value::Field;

/// A launcher's option shapes: short flags taking a value, long flags taking a value when not
/// written `--x=v`, and positional words consumed before the command.
struct Launcher {
    names: &'static [&'static str],
    value_flags: &'static str,
    long_value_flags: &'static [&'static str],
    positionals: usize,
}

/// Whether `name` is a launcher.
pub(super) fn is_launcher(name: &str) -> bool {
    LAUNCHERS.iter().any(|l| l.names.contains(&name))
}

const LAUNCHERS: &[Launcher] = &[
    Launcher {
        names: &["sudo", "doas", "pkexec", "run0", "ksu", "calife"],
        value_flags: "ugCDhprtTUa",
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
            "--setenv",
        ],
        positionals: 0,
    },
    Launcher {
        names: &["env"],
        value_flags: "uCPa",
        long_value_flags: &["--unset", "--chdir", "--argv0"],
        positionals: 0,
    },
    Launcher {
        names: &[
            "nohup",
            "builtin",
            "time",
            "setsid",
            "unbuffer",
            "caffeinate",
            "then",
            "do",
        ],
        value_flags: "",
        long_value_flags: &[],
        positionals: 0,
    },
    Launcher {
        names: &["exec"],
        value_flags: "a",
        long_value_flags: &[],
        positionals: 0,
    },
    Launcher {
        names: &["command"],
        value_flags: "",
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
        names: &["chrt"],
        value_flags: "",
        long_value_flags: &[],
        positionals: 1,
    },
    Launcher {
        names: &["taskset"],
        value_flags: "",
        long_value_flags: &[],
        positionals: 1,
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
        names: &["parallel"],
        value_flags: "jIPnLNSEdaCXsk",
        long_value_flags: &[
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
        ],
        positionals: 0,
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
        value_flags: "ugsgGw",
        long_value_flags: &[
            "--user",
            "--group",
            "--shell",
            "--supp-group",
            "--whitelist-environment",
        ],
        positionals: 0,
    },
    Launcher {
        names: &["chroot"],
        value_flags: "",
        long_value_flags: &["--userspec", "--groups"],
        positionals: 1,
    },
    Launcher {
        names: &["systemd-run"],
        value_flags: "upMHE",
        long_value_flags: &[
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
        positionals: 0,
    },
    Launcher {
        names: &["watch"],
        value_flags: "nd",
        long_value_flags: &["--interval", "--differences"],
        positionals: 0,
    },
];

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

/// Words of `ssh`'s own options, up to the host.
pub(super) fn skip_ssh_options(args: &[Field]) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if !t.starts_with('-') || t.len() < 2 {
            break;
        }
        // Options taking a value, written apart (`-p 22`) or together (`-p22`).
        let takes = t.len() == 2 && "BbcDEeFIiJLlmOoPpQRSWw".contains(&t[1..]);
        i += if takes { 2 } else { 1 };
    }
    i.min(args.len())
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
    let Some(l) = LAUNCHERS.iter().find(|l| l.names.contains(&name)) else {
        return 0;
    };
    let mut i = 0;
    let mut positionals = l.positionals;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if name == "env" && is_assignment(t) {
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let takes = !long.contains('=') && l.long_value_flags.contains(&t);
            i += if takes { 2 } else { 1 };
            continue;
        }
        if let Some(short) = t.strip_prefix('-')
            && !short.is_empty()
        {
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
    i.min(args.len())
}
