//! A command line as a model could write it: the guard's analysis must finish without a panic or
//! a stack overflow (deep nesting fails closed as `Unanalysable`, it does not crash the
//! process), a panic of the parser it uses must be caught (the command is unanalysable), and
//! every finding must name its command.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // The guard catches a panic of the shell parser it uses and calls the command
        // unanalysable; libFuzzer's hook would abort on it first. A panic the guard does not
        // catch still fails the run (libfuzzer-sys catches what unwinds out of this target);
        // the parser's own, caught ones are not printed.
        std::panic::set_hook(Box::new(|info| {
            if !info
                .location()
                .is_some_and(|l| l.file().contains("brush-parser"))
            {
                eprintln!("{info}");
            }
        }));
    },
    |data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else {
        return;
    };
    // On this thread, without the deadline: a new shape the parser hangs on shows as a
    // timeout, and a panic of the guard's own code fails the run.
    let analysis = rein_shell_guard::analyze_here(command);
    for finding in &analysis.findings {
        assert!(
            rein_shell_guard::check(finding.predicate, command),
            "a finding the check does not see: {finding:?}"
        );
        assert!(!finding.describe().is_empty());
    }
    }
);
