//! Unit tests of the analysis' parts; the table-driven corpus is `tests/shell_guard.rs`.

use super::reach::{Cwd, Reach, block_device, glob_match, reach};
use super::value::{HOME, QUOTED_UNKNOWN, SPLIT_UNKNOWN, decode_ansi_c};
use super::*;

fn work() -> Vec<Cwd> {
    vec![Cwd::Work(Vec::new())]
}

#[test]
fn globs_match_like_a_shell() {
    assert!(glob_match("*", "usr"));
    assert!(
        !glob_match("*", ".ssh"),
        "a wildcard never matches a leading dot"
    );
    assert!(glob_match(".*", ".."));
    assert!(glob_match("u?r", "usr"));
    assert!(glob_match("[a-v]sr", "usr"));
    assert!(!glob_match("[!u]sr", "usr"));
    assert!(!glob_match("*.log", "usr"));
    assert!(
        glob_match("@(usr|tmp)", "usr"),
        "extended globs over-approximate"
    );
}

#[test]
fn paths_resolve_to_what_they_could_reach() {
    let w = work();
    assert_eq!(reach("/", &w), Some(Reach::Root));
    assert_eq!(reach("/usr/local/lib", &w), Some(Reach::Root));
    assert_eq!(reach("/var/log", &w), Some(Reach::Root));
    assert_eq!(reach("/var/tmp/build", &w), None);
    assert_eq!(reach("/tmp/x/..", &w), None);
    assert_eq!(reach("/tmp/..", &w), Some(Reach::Root));
    assert_eq!(reach(HOME, &w), Some(Reach::Home));
    assert_eq!(reach(&format!("{HOME}/../*"), &w), Some(Reach::Home));
    assert_eq!(reach(&format!("{HOME}/project"), &w), None);
    assert_eq!(reach(&format!("{HOME}/.*"), &w), Some(Reach::Home));
    assert_eq!(reach("build", &w), None);
    assert_eq!(reach("*", &w), None);
    assert_eq!(reach("..", &w), Some(Reach::WorkdirOrAbove));
    assert_eq!(reach("../*", &w), Some(Reach::WorkdirOrAbove));
    assert_eq!(reach("../sibling", &w), None);
    assert_eq!(reach("", &w), None);
    // After `cd /` a relative path is absolute.
    let cwds = vec![Cwd::Work(Vec::new()), Cwd::Abs(Vec::new())];
    assert_eq!(reach("*", &cwds), Some(Reach::Root));
    // Unknown parts: pinned only by a final ordinary name.
    assert_eq!(reach(&format!("{QUOTED_UNKNOWN}/cache"), &w), None);
    assert_eq!(
        reach(&format!("{QUOTED_UNKNOWN}/usr"), &w),
        Some(Reach::Unresolved)
    );
    assert_eq!(
        reach(&format!("{QUOTED_UNKNOWN}"), &w),
        Some(Reach::Unresolved)
    );
    assert_eq!(
        reach(&format!("{SPLIT_UNKNOWN}/cache"), &w),
        Some(Reach::Unresolved)
    );
    assert_eq!(reach(&format!("./{QUOTED_UNKNOWN}/*.pyc"), &w), None);
}

#[test]
fn block_devices_by_name_glob_or_unknown_name() {
    let w = work();
    for d in [
        "/dev/sda",
        "/dev/sdb1",
        "/dev/nvme0n1p2",
        "/dev/mapper/root",
        "/dev/disk/by-id/x",
        "/dev/sd*",
        "/dev/vd?",
    ] {
        assert!(block_device(d, &w), "{d}");
    }
    assert!(block_device(&format!("/dev/{QUOTED_UNKNOWN}"), &w));
    for d in [
        "/dev/null",
        "/dev/stderr",
        "/dev/tty",
        "/dev/zero",
        "/dev/shm/x",
        "./disk.img",
        "sda",
    ] {
        assert!(!block_device(d, &w), "{d}");
    }
    assert!(block_device("sda", &[Cwd::Abs(vec!["dev".into()])]));
}

#[test]
fn ansi_c_strings_decode() {
    assert_eq!(decode_ansi_c(r"\x72\x6d"), "rm");
    assert_eq!(decode_ansi_c(r"\162\155"), "rm");
    assert_eq!(decode_ansi_c(r"\u0072m"), "rm");
    assert_eq!(decode_ansi_c(r"a\tb\\c\'"), "a\tb\\c'");
    assert_eq!(decode_ansi_c(r"\q"), r"\q");
}

#[test]
fn findings_say_where_and_why() {
    let a = analyze("if true; then sh -c 'rm -rf ~'; fi");
    let f = a
        .find(ShellPredicate::RmRecursiveHomeTarget)
        .expect("found");
    assert_eq!(f.node, "`rm -rf ~` in if › `sh -c` string");
    assert!(
        f.detail.contains("reaches a home directory"),
        "{}",
        f.detail
    );
    // The analysis of the last command is memoized per thread.
    let again = analyze("if true; then sh -c 'rm -rf ~'; fi");
    assert!(Arc::ptr_eq(&a, &again));
    assert!(explain(ShellPredicate::RmRecursiveHomeTarget, "ls").is_none());
}

#[test]
fn rendered_commands_have_quotes_removed_and_variables_substituted() {
    let a = analyze("F=/etc/pass''wd; sudo cat \"$F\" > /tmp/x");
    assert!(
        a.rendered
            .iter()
            .any(|r| r == "sudo cat /etc/passwd > /tmp/x"),
        "{:?}",
        a.rendered
    );
}

#[test]
fn a_word_of_many_unquoted_braces_is_unanalysable_not_a_guard_that_never_answers() {
    // Found by the `shell_guard` fuzz target: brush-parser's brace grammar backtracks
    // exponentially on these (16 braces took seconds, 20 over two minutes).
    let runs = [
        format!(" {}", "{".repeat(60)),
        format!("echo {}", "{,".repeat(16)),
        format!("rm -rf {}{}", "{".repeat(16), "}".repeat(16)),
    ];
    for command in &runs {
        let analysis = analyze(command);
        assert!(
            analysis.find(ShellPredicate::Unanalysable).is_some(),
            "{command}: {analysis:?}"
        );
    }
    // Braces in quotes are not expanded (a JSON body), and a few unquoted ones still are.
    let json = format!(
        "curl -d '{}1{}' https://example.com",
        "{\"a\":".repeat(12),
        "}".repeat(12)
    );
    assert_eq!(analyze(&json).findings, Vec::new(), "{json}");
    assert!(check(ShellPredicate::RmRecursiveRootTarget, "rm -rf {/,x}"));
    assert_eq!(value::unquoted_braces(r#"a{b} '{' "{" \{ ${x} {"#), 2);
}

#[test]
fn parentheses_nested_beyond_the_limit_are_unanalysable_and_quoted_ones_do_not_count() {
    // Found by the `shell_guard` fuzz target: brush-parser backtracks exponentially on deep
    // parentheses that do not parse (each level doubled the time; 24 took seconds).
    for command in [
        "(".repeat(30),
        format!("{};{}", "( ".repeat(24), ")".repeat(24)),
        format!("{}x,{}", "(".repeat(10), "(".repeat(14)),
    ] {
        let analysis = analyze(&command);
        assert!(
            analysis.find(ShellPredicate::Unanalysable).is_some(),
            "{command}: {analysis:?}"
        );
    }
    let quoted = format!("echo '{}' \\( x", "(".repeat(40));
    assert_eq!(analyze(&quoted).findings, Vec::new(), "{quoted}");
    assert_eq!(limits::paren_depth("(a (b) $(c (d))) \\( '(((' x)"), 3);
    assert!(check(
        ShellPredicate::RmRecursiveRootTarget,
        "(((((rm -rf /)))))"
    ));
    assert!(limits::empty_heredoc_delimiter("cat <<'' x"));
    assert_eq!(
        limits::unclosed_subscripts("${a[1]} ${b[x} ${c} ${d[e}} $x[ ${f[g"),
        3
    );
    assert_eq!(
        analyze("echo ${a[1]} ${b[2]} ${c[3]} ${d[4]}").findings,
        Vec::new()
    );
    assert!(!limits::empty_heredoc_delimiter(
        "cat <<''x; cat <<<'' ; cat <<EOF"
    ));
}

#[test]
fn what_the_parser_panics_or_loops_on_is_unanalysable_not_a_crash() {
    // Found by the `shell_guard` fuzz target: brush-parser unwraps a brace sequence's number
    // into an i64 (and a `~+N` directory-stack index).
    for command in [
        "ss{h -p 2s{-777777777777777777777",
        "echo {1..99999999999999999999}",
        "rm -rf {0..99999999999999999999999}",
        "cd ~+99999999999999999999999",
        // The tokenizer never ended on these (memory grew until the process died).
        "<<\x0c ",
        "cat << \r x",
        "<<\"\" ",
        "cat <<-'' ",
        "echo ${u[t}${u[t}${u[t}",
        "echo \"${u[t}${u[t}${u[t}${u[t}\"",
    ] {
        let analysis = analyze(command);
        assert!(
            analysis.find(ShellPredicate::Unanalysable).is_some(),
            "{command}: {analysis:?}"
        );
    }
}
