//! What an external CLI agent (Claude Code, Codex, a program speaking rein's JSON lines) prints:
//! the first byte picks the kind, the rest is its standard output. Each line is read into facts
//! and the facts into recorded steps; nothing panics, whatever a newer (or hostile) CLI prints.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_core::spec::ExternalKind;
use rein_operation::external::reader;
use rein_operation::external::transcript::Transcript;

fuzz_target!(|data: &[u8]| {
    let [which, output @ ..] = data else {
        return;
    };
    let kind = ExternalKind::ALL[usize::from(*which) % ExternalKind::ALL.len()];
    let text = String::from_utf8_lossy(output);
    let mut reader = reader(kind);
    let mut transcript = Transcript::default();
    for line in text.lines() {
        for fact in reader.line(line) {
            let _ = transcript.push(fact);
        }
    }
    for fact in reader.end() {
        let _ = transcript.push(fact);
    }
    let _ = transcript.close();
});
