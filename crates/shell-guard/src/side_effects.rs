//! Deletion by side effect: commands whose job is something else but which delete what they
//! are given — `tar --remove-files` (what it archived), `rsync --delete` (what the destination
//! has beyond the source) and `--remove-source-files`, `git clean -f` (what the repository does
//! not track), `zip -m` (what it zipped), `shred` and `truncate` (a file's content). Their
//! targets count when they can reach a home directory, the root, a system directory, or above
//! the working directory; the working directory itself is the work's own place.

use super::ShellPredicate;
use super::reach::{block_device, reach_beyond_work, shown};
use super::value::Field;
use super::walk::Walker;

/// Commands that destroy a file's content.
pub(super) const WIPERS: &[&str] = &["shred", "truncate", "wipe", "srm"];

/// The operands of `args` and the values of its options, for a command whose short options
/// `short_values` and long options `long_values` take a value (`-C DIR`, `--file=F`, `-fX`).
struct Args {
    operands: Vec<Field>,
    /// Options met: (flag, value).
    options: Vec<(String, Option<Field>)>,
}

fn read_args(args: &[Field], short_values: &str, long_values: &[&str]) -> Args {
    let mut out = Args {
        operands: Vec::new(),
        options: Vec::new(),
    };
    let mut i = 0;
    let mut done = false;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        i += 1;
        if done || t == "-" || !t.starts_with('-') {
            out.operands.push(a.clone());
            continue;
        }
        if t == "--" {
            done = true;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            match long.split_once('=') {
                Some((f, v)) => out.options.push((
                    format!("--{f}"),
                    Some(Field {
                        text: v.to_owned(),
                        ..a.clone()
                    }),
                )),
                None if long_values.contains(&t) => {
                    out.options.push((t.to_owned(), args.get(i).cloned()));
                    i += 1;
                }
                None => out.options.push((t.to_owned(), None)),
            }
            continue;
        }
        let cluster = &t[1..];
        for (at, c) in cluster.char_indices() {
            if short_values.contains(c) {
                let rest = &cluster[at + c.len_utf8()..];
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(Field {
                        text: rest.to_owned(),
                        ..a.clone()
                    })
                };
                out.options.push((format!("-{c}"), value));
                break;
            }
            out.options.push((format!("-{c}"), None));
        }
    }
    out
}

impl Args {
    fn has(&self, flags: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(f, _)| flags.contains(&f.as_str()))
    }

    fn value(&self, flags: &[&str]) -> Option<&Field> {
        self.options
            .iter()
            .find(|(f, _)| flags.contains(&f.as_str()))
            .and_then(|(_, v)| v.as_ref())
    }
}

/// `target` under `dir` (a `-C DIR`), unless it is absolute.
fn under(dir: Option<&Field>, target: &Field) -> Field {
    match dir {
        Some(d) if !target.text.starts_with('/') && !target.text.starts_with('~') => Field {
            text: format!("{}/{}", d.text.trim_end_matches('/'), target.text),
            downloads: d.downloads || target.downloads,
            decodes: d.decodes || target.decodes,
            procsubst: d.procsubst || target.procsubst,
        },
        _ => target.clone(),
    }
}

impl Walker {
    /// `targets` deleted by `what` as a side effect: each that reaches beyond the work's place
    /// is a finding.
    fn side_effect(&mut self, targets: &[Field], node: &str, what: &str) {
        self.deletion(targets, node, reach_beyond_work, |t, r| {
            format!("`{what}` deletes `{}`, which {}", shown(t), r.phrase())
        });
    }

    /// `tar … --remove-files`: what it archives is deleted.
    pub(super) fn tar(&mut self, args: &[Field], node: &str) {
        let mut words = args.to_vec();
        // The old style: a first word without a dash is a bundle of options (`tar cf x.tar`).
        if let Some(first) = words.first_mut()
            && !first.text.starts_with('-')
            && first.is_literal()
        {
            first.text.insert(0, '-');
        }
        let a = read_args(
            &words,
            "fCTXbHVNgIKL",
            &[
                "--file",
                "--directory",
                "--files-from",
                "--exclude-from",
                "--exclude",
                "--blocking-factor",
                "--format",
                "--label",
                "--newer",
                "--listed-incremental",
                "--use-compress-program",
                "--transform",
                "--owner",
                "--group",
                "--mode",
                "--mtime",
            ],
        );
        if !a.has(&["--remove-files"]) {
            return;
        }
        if a.has(&["-T", "--files-from"]) {
            self.found(
                ShellPredicate::Unanalysable,
                node,
                "`tar --remove-files` deletes the files a list names".into(),
            );
        }
        let dir = a.value(&["-C", "--directory"]).cloned();
        let targets: Vec<Field> = a.operands.iter().map(|t| under(dir.as_ref(), t)).collect();
        self.side_effect(&targets, node, "tar --remove-files");
    }

    /// `rsync --delete … DEST` deletes in the destination; `--remove-source-files` the sources.
    pub(super) fn rsync(&mut self, args: &[Field], node: &str) {
        let a = read_args(
            args,
            "efTBM",
            &[
                "--rsh",
                "--filter",
                "--exclude",
                "--include",
                "--exclude-from",
                "--include-from",
                "--files-from",
                "--backup-dir",
                "--temp-dir",
                "--partial-dir",
                "--log-file",
                "--compare-dest",
                "--copy-dest",
                "--link-dest",
                "--chmod",
                "--chown",
                "--max-size",
                "--min-size",
                "--bwlimit",
                "--timeout",
                "--port",
                "--password-file",
                "--suffix",
                "--out-format",
                "--rsync-path",
                "--block-size",
                "--remote-option",
            ],
        );
        let local = |f: &&Field| !f.text.contains(':') || f.text.starts_with('/');
        let Some((dest, sources)) = a.operands.split_last() else {
            return;
        };
        let deletes = a.options.iter().any(|(f, _)| {
            f.starts_with("--delete") || f == "--del" || f == "--remove-source-files"
        });
        if !deletes {
            return;
        }
        if a.options.iter().any(|(f, _)| f.starts_with("--del")) && local(&dest) {
            self.side_effect(std::slice::from_ref(dest), node, "rsync --delete");
        }
        if a.has(&["--remove-source-files"]) {
            let sources: Vec<Field> = sources.iter().filter(local).cloned().collect();
            self.side_effect(&sources, node, "rsync --remove-source-files");
        }
    }

    /// `git [-C DIR] clean -f…`: what the repository does not track is deleted, from its top
    /// (at most the directory it runs in) or the paths named.
    pub(super) fn git(&mut self, args: &[Field], node: &str) {
        let mut i = 0;
        let mut dir: Option<Field> = None;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if matches!(t, "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace") {
                if matches!(t, "-C" | "--work-tree") {
                    dir = args.get(i + 1).cloned();
                }
                i += 2;
                continue;
            }
            if let Some(v) = t.strip_prefix("--work-tree=") {
                dir = Some(Field {
                    text: v.to_owned(),
                    ..a.clone()
                });
            }
            if !t.starts_with('-') {
                break;
            }
            i += 1;
        }
        if args.get(i).is_none_or(|s| s.text != "clean") {
            return;
        }
        let a = read_args(&args[i + 1..], "e", &["--exclude"]);
        let forced = a.has(&["-f", "--force"]);
        let dry = a.has(&["-n", "--dry-run"]);
        if !forced || dry {
            return;
        }
        let base = dir.unwrap_or_else(|| Field::lit("."));
        let targets: Vec<Field> = if a.operands.is_empty() {
            vec![base]
        } else {
            a.operands.iter().map(|t| under(Some(&base), t)).collect()
        };
        self.side_effect(&targets, node, "git clean");
    }

    /// `zip -m ARCHIVE FILES…`: what it zips is deleted.
    pub(super) fn zip(&mut self, args: &[Field], node: &str) {
        let a = read_args(
            args,
            "bntxiOPZs",
            &[
                "--temp-path",
                "--exclude",
                "--include",
                "--output-file",
                "--password",
                "--compression-method",
                "--split-size",
            ],
        );
        if !a.has(&["-m", "--move"]) {
            return;
        }
        let files: Vec<Field> = a.operands.iter().skip(1).cloned().collect();
        self.side_effect(&files, node, "zip -m");
    }

    /// `shred`, `truncate`, `wipe`, `srm`: what they are given loses its content.
    pub(super) fn wipe(&mut self, name: &str, args: &[Field], node: &str) {
        let a = read_args(
            args,
            "nsrS",
            &[
                "--iterations",
                "--size",
                "--random-source",
                "--reference",
                "--remove",
            ],
        );
        // A disk given to them is the disk-write rule's.
        let targets: Vec<Field> = a
            .operands
            .into_iter()
            .filter(|t| !block_device(&t.text, &self.cwds))
            .collect();
        self.side_effect(&targets, node, name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_values_clusters_and_operands_are_told_apart() {
        let words: Vec<Field> = [
            "-cvzf",
            "out.tar",
            "-C",
            "/tmp",
            "--exclude=x",
            "a",
            "--",
            "-b",
        ]
        .iter()
        .map(|w| Field::lit(*w))
        .collect();
        let a = read_args(&words, "fC", &[]);
        assert_eq!(a.value(&["-f"]).map(|f| f.text.as_str()), Some("out.tar"));
        assert_eq!(a.value(&["-C"]).map(|f| f.text.as_str()), Some("/tmp"));
        assert!(a.has(&["-z"]) && a.has(&["--exclude"]));
        let ops: Vec<&str> = a.operands.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(ops, ["a", "-b"]);
    }
}
