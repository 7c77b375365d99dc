//! `docs/cli.md`, the command reference, written from the command line's own definitions: every
//! command, its usage and each option with its help, accepted values, default and environment
//! variable. A test in `main.rs` compares the file with what this renders, so the reference
//! cannot drift from the flags; `REIN_UPDATE_DOCS=1` makes that test write it instead.

use clap::{Arg, Command};
use std::fmt::Write;

/// The reference of `root` (built, so that each command knows its full name), as Markdown.
pub fn markdown(root: &mut Command) -> String {
    root.build();
    let mut out = String::from(
        "# rein command reference\n\n\
         Every command and option of `rein`, written from its definitions (`crates/cli/src`) by\n\
         `REIN_UPDATE_DOCS=1 cargo test -p rein-cli --bin rein cli_reference`; that test fails\n\
         when this file and the flags disagree. The README says what the commands are for.\n",
    );
    let globals: Vec<&Arg> = root
        .get_arguments()
        .filter(|a| a.is_global_set() && !a.is_hide_set())
        .collect();
    if !globals.is_empty() {
        out.push_str("\n## Options of every command\n\n");
        table(&mut out, globals.into_iter());
    }
    for sub in root.get_subcommands_mut() {
        command(&mut out, sub, 2);
    }
    out
}

fn command(out: &mut String, cmd: &mut Command, depth: usize) {
    if cmd.is_hide_set() || cmd.get_name() == "help" {
        return;
    }
    let name = cmd
        .get_bin_name()
        .map_or_else(|| cmd.get_name().to_owned(), str::to_owned);
    let _ = write!(out, "\n{} `{name}`\n\n", "#".repeat(depth.min(4)));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", one_line(&about.to_string()));
    }
    let usage = cmd.render_usage().to_string();
    let usage = usage.trim_start_matches("Usage:").trim();
    let _ = writeln!(out, "Usage: `{usage}`");
    let own: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_global_set() && !a.is_hide_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !own.is_empty() {
        out.push('\n');
        table(out, own.into_iter());
    }
    for sub in cmd.get_subcommands_mut() {
        command(out, sub, depth + 1);
    }
}

fn table<'a>(out: &mut String, args: impl Iterator<Item = &'a Arg>) {
    out.push_str("| argument | what it does |\n|---|---|\n");
    for a in args {
        let _ = writeln!(out, "| `{}` | {} |", form(a), cell(&describe(a)));
    }
}

/// How the argument is written: `<NAME>`, `--long <VALUE>`, `-s, --long`.
fn form(a: &Arg) -> String {
    let value = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    if a.is_positional() {
        return value;
    }
    let takes_value = a.get_num_args().is_some_and(|n| n.takes_values());
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let names = names.join(", ");
    if takes_value {
        format!("{names} {value}")
    } else {
        names
    }
}

fn describe(a: &Arg) -> String {
    let mut text = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| one_line(&h.to_string()))
        .unwrap_or_default();
    // clap drops a help text's last period; the sentences added below need it back.
    if !text.is_empty() && !text.ends_with(['.', '!', '?']) {
        text.push('.');
    }
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    let takes_value = a.get_num_args().is_some_and(|n| n.takes_values());
    if takes_value && !values.is_empty() {
        let _ = write!(text, " One of {}.", values.join(", "));
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if takes_value && !defaults.is_empty() {
        let _ = write!(text, " Default: `{}`.", defaults.join(","));
    }
    if let Some(env) = a.get_env() {
        let _ = write!(text, " Environment: `{}`.", env.to_string_lossy());
    }
    text.trim().to_owned()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A table cell: a `|` would end it.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}
