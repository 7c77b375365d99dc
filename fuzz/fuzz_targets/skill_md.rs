//! A `SKILL.md` from a skills folder anyone can share: its front matter either reads, with a
//! valid name and the rest of the file as its body (trimmed), or is refused naming the line; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match rein_tools::skills::parse_skill_md(text) {
        Ok((front, body)) => {
            assert!(
                rein_tools::skills::valid_name(&front.name),
                "accepted name {:?}",
                front.name
            );
            assert!(
                text.trim_end().ends_with(&body),
                "the body is not the file's end"
            );
        }
        Err((line, problem)) => {
            assert!(
                !problem.is_empty(),
                "a refusal at line {line} without a reason"
            );
        }
    }
});
