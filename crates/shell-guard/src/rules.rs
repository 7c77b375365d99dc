//! The rules over one expanded command: what `rm`, `mv`, `chmod`/`chown`/`chgrp`, `find`,
//! `dd` and the disk tools would touch.

use super::ShellPredicate;
use super::command::could_be_flag;
use super::reach::{Cwd, Reach, block_device, reach, shown};
use super::value::{Field, QUOTED_UNKNOWN, SPLIT_UNKNOWN, has_unknown};
use super::walk::{Stdin, Walker};

/// Programs that write a whole device given as an argument.
const DISK_TOOLS: &[&str] = &[
    "mkfs",
    "mke2fs",
    "mkswap",
    "mkdosfs",
    "mkntfs",
    "wipefs",
    "fdisk",
    "sfdisk",
    "cfdisk",
    "gdisk",
    "sgdisk",
    "parted",
    "blkdiscard",
    "shred",
    "badblocks",
    "hdparm",
    "cryptsetup",
    "zpool",
    "pvcreate",
    "tee",
    "truncate",
];

fn disk_tool(name: &str) -> bool {
    DISK_TOOLS.contains(&name) || name.starts_with("mkfs.") || name.starts_with("mke2fs")
}

/// Options of `rm`-like commands: whether recursion is asked (or could be, through an unknown
/// argument), and the operands.
struct Parsed {
    /// `-r` is given, or an unquoted unknown argument could spread into `-r` and paths.
    recursive: bool,
    /// Operands (by index) whose unknown quoted value could be `-r`: one argument cannot be
    /// both the flag and a path, so such an operand makes the *other* operands recursive.
    flag_operands: Vec<usize>,
    operands: Vec<Field>,
}

impl Parsed {
    /// Whether operand `i` could be removed recursively.
    fn recursive_for(&self, i: usize) -> bool {
        self.recursive || self.flag_operands.iter().any(|f| *f != i)
    }

    fn any_recursive(&self) -> bool {
        self.recursive || !self.flag_operands.is_empty()
    }
}

fn parse(
    args: &[Field],
    recursive_short: &[char],
    recursive_long: &[&str],
    valued: &[&str],
) -> Parsed {
    let mut p = Parsed {
        recursive: false,
        flag_operands: Vec::new(),
        operands: Vec::new(),
    };
    let mut done = false;
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        let t = a.text.as_str();
        if done {
            p.operands.push(a.clone());
            continue;
        }
        if t == "--" {
            done = true;
        } else if t.contains(SPLIT_UNKNOWN) {
            // Unquoted: it could split into `-r` and paths.
            p.recursive = true;
            p.operands.push(a.clone());
        } else if has_unknown(t) && could_be_flag(t) {
            p.flag_operands.push(p.operands.len());
            p.operands.push(a.clone());
        } else if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            p.recursive |= recursive_long
                .iter()
                .any(|r| r.starts_with(name) && !name.is_empty());
            if valued.contains(&name) && !long.contains('=') {
                skip = true;
            }
        } else if t.len() > 1 && t.starts_with('-') {
            p.recursive |= t.chars().skip(1).any(|c| recursive_short.contains(&c));
        } else {
            p.operands.push(a.clone());
        }
    }
    p
}

impl Walker {
    /// Check one command (its launchers already peeled) against the rules.
    pub(super) fn rules(&mut self, name: &str, args: &[Field], node: &str) {
        if super::side_effects::WIPERS.contains(&name) {
            self.wipe(name, args, node);
        }
        match name {
            "tar" | "bsdtar" | "gtar" => self.tar(args, node),
            "git" => self.git(args, node),
            "zip" => self.zip(args, node),
            "rm" => {
                let p = parse(args, &['r', 'R'], &["recursive"], &[]);
                if p.any_recursive() {
                    let targets: Vec<Field> = p
                        .operands
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| p.recursive_for(*i))
                        .map(|(_, f)| f.clone())
                        .collect();
                    self.removal(&targets, node, "recursive rm");
                }
            }
            "mv" => self.mv(args, node),
            "chmod" | "chown" | "chgrp" => self.permissions(name, args, node),
            "dd" => {
                for a in args {
                    if let Some(target) = a.text.strip_prefix("of=") {
                        let f = Field {
                            text: target.to_owned(),
                            ..a.clone()
                        };
                        self.disk_write_target(&f, node);
                    }
                }
            }
            "cp" | "install" | "rsync" | "ln" => {
                if let Some(dest) = args.iter().rev().find(|a| !a.text.starts_with('-')) {
                    self.disk_write_target(dest, node);
                }
                if name == "rsync" {
                    self.rsync(args, node);
                }
            }
            n if disk_tool(n) => {
                for a in args.iter().filter(|a| !a.text.starts_with('-')) {
                    if a.is_literal() && block_device(&a.text, &self.cwds) {
                        self.disk_write_target(a, node);
                    } else if n != "tee"
                        && n != "truncate"
                        && a.is_literal()
                        && reach(&a.text, &self.cwds) == Some(Reach::Root)
                    {
                        self.found(
                            ShellPredicate::DiskWrite,
                            node,
                            format!("`{n}` on `{}`", shown(&a.text)),
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// Removal of `targets` (recursive): each target resolved against what it could reach.
    fn removal(&mut self, targets: &[Field], node: &str, what: &str) {
        self.deletion(targets, node, reach, |t, r| {
            format!("the target `{}` of a {what} {}", shown(t), r.phrase())
        });
    }

    /// Deletion of `targets`: each that `reach_of` finds reaching a protected place (or that
    /// cannot be resolved) is a finding, worded by `say(target, reach)`. Shared by removal
    /// proper and deletion by side effect, which differ only in what they count as reach.
    pub(super) fn deletion(
        &mut self,
        targets: &[Field],
        node: &str,
        reach_of: fn(&str, &[Cwd]) -> Option<Reach>,
        say: impl Fn(&str, Reach) -> String,
    ) {
        for t in targets {
            let r = if t.procsubst {
                Some(Reach::Unresolved)
            } else {
                reach_of(&t.text, &self.cwds)
            };
            let Some(r) = r else { continue };
            let predicate = match r {
                Reach::Root => ShellPredicate::RmRecursiveRootTarget,
                Reach::Home => ShellPredicate::RmRecursiveHomeTarget,
                Reach::WorkdirOrAbove => ShellPredicate::RmForceDotTarget,
                Reach::Unresolved => ShellPredicate::Unanalysable,
            };
            self.found(predicate, node, say(&t.text, r));
        }
    }

    fn mv(&mut self, args: &[Field], node: &str) {
        let p = parse(args, &[], &[], &["target-directory", "suffix", "backup"]);
        let target_dir = super::launchers::option_value(args, &["-t", "--target-directory"]);
        let mut operands = p.operands;
        let dest = match &target_dir {
            Some(d) => Some(d.clone()),
            None => operands.pop(),
        };
        if let Some(d) = &target_dir {
            operands.retain(|o| o.text != d.text);
        }
        for s in &operands {
            match reach(&s.text, &self.cwds) {
                None => {}
                Some(Reach::Unresolved) => self.found(
                    ShellPredicate::Unanalysable,
                    node,
                    format!("the source `{}` of mv cannot be resolved", shown(&s.text)),
                ),
                Some(r) => self.found(
                    ShellPredicate::MoveProtectedPath,
                    node,
                    format!("the source `{}` of mv {}", shown(&s.text), r.phrase()),
                ),
            }
        }
        if let Some(d) = dest {
            self.disk_write_target(&d, node);
        }
    }

    fn permissions(&mut self, name: &str, args: &[Field], node: &str) {
        let p = parse(args, &['R'], &["recursive"], &["reference", "from"]);
        let reference = args.iter().any(|a| a.text.starts_with("--reference"));
        // chmod MODE FILES…, chown OWNER FILES…, unless --reference gives the mode or owner.
        let first = usize::from(!reference);
        for (i, t) in p.operands.iter().enumerate().skip(first) {
            if !p.recursive_for(i) {
                continue;
            }
            match reach(&t.text, &self.cwds) {
                None => {}
                Some(Reach::Unresolved) => self.found(
                    ShellPredicate::Unanalysable,
                    node,
                    format!(
                        "the target `{}` of a recursive {name} cannot be resolved",
                        shown(&t.text)
                    ),
                ),
                Some(r) => self.found(
                    ShellPredicate::RecursivePermissionChange,
                    node,
                    format!(
                        "the target `{}` of a recursive {name} {}",
                        shown(&t.text),
                        r.phrase()
                    ),
                ),
            }
        }
    }

    /// A write to `target`: a block device (or an unknown path under `/dev`) is a disk write.
    pub(super) fn disk_write_target(&mut self, target: &Field, node: &str) {
        if block_device(&target.text, &self.cwds) {
            self.found(
                ShellPredicate::DiskWrite,
                node,
                format!("it writes to the block device `{}`", shown(&target.text)),
            );
        }
    }

    /// `find START… EXPR`: `-delete` removes what it finds, `-exec CMD {} ;` runs CMD on it.
    pub(super) fn find(&mut self, args: &[Field], node: &str) {
        let mut i = 0;
        while args.get(i).is_some_and(|a| {
            matches!(a.text.as_str(), "-H" | "-L" | "-P")
                || a.text.starts_with("-D")
                || a.text.starts_with("-O")
        }) {
            i += 1;
        }
        let mut starts: Vec<Field> = Vec::new();
        while let Some(a) = args.get(i) {
            if a.text.starts_with('-') || a.text == "(" || a.text == "!" {
                break;
            }
            starts.push(a.clone());
            i += 1;
        }
        if starts.is_empty() {
            starts.push(Field::lit("."));
        }
        let expr = &args[i..];
        // A name test narrows what is found to entries so named, somewhere below the start.
        let name_test = expr.windows(2).find_map(|w| {
            matches!(
                w[0].text.as_str(),
                "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-regex" | "-iregex"
            )
            .then(|| w[1].clone())
        });
        let found: Vec<Field> = starts
            .iter()
            .map(|s| match &name_test {
                Some(pattern)
                    if !super::reach::broad(pattern.text.rsplit('/').next().unwrap_or("")) =>
                {
                    let last = pattern.text.rsplit('/').next().unwrap_or("").to_owned();
                    Field {
                        text: format!("{}/{QUOTED_UNKNOWN}/{last}", s.text.trim_end_matches('/')),
                        ..s.clone()
                    }
                }
                _ => s.clone(),
            })
            .collect();
        if expr.iter().any(|a| a.text == "-delete") {
            self.removal(&found, node, "find -delete");
        }
        let mut j = 0;
        while j < expr.len() {
            if matches!(
                expr[j].text.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                let end = expr[j + 1..]
                    .iter()
                    .position(|a| a.text == ";" || a.text == "+")
                    .map_or(expr.len(), |p| j + 1 + p);
                let inner = &expr[j + 1..end];
                // What it runs on each entry found deletes it (or its content) even without
                // `-r`: the search is the recursion.
                if let Some(cmd) = inner.first().filter(|c| c.is_literal()) {
                    let cmd = cmd.text.rsplit('/').next().unwrap_or(&cmd.text);
                    if matches!(cmd, "rm" | "unlink" | "rmdir")
                        || super::side_effects::WIPERS.contains(&cmd)
                    {
                        self.removal(&found, node, &format!("find -exec {cmd}"));
                    }
                }
                for f in &found {
                    let argv: Vec<Field> = inner
                        .iter()
                        .map(|a| {
                            if a.text.contains("{}") {
                                Field {
                                    text: a.text.replace("{}", &f.text),
                                    ..f.clone()
                                }
                            } else {
                                a.clone()
                            }
                        })
                        .collect();
                    if !argv.is_empty() {
                        self.in_context("`find -exec` command", |w| {
                            let _ = w.exec(&argv, &Stdin::Inherited);
                        });
                    }
                }
                j = end + 1;
            } else {
                j += 1;
            }
        }
    }
}
