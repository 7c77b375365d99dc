//! A file added to a knowledge base: the first byte picks its name (and so how it is read:
//! Markdown, text, code, HTML, PDF, unknown), the next two the chunk size and overlap, the rest
//! is its bytes. Reading must not panic; every chunk must lie within the file's lines, in
//! order, and hold at most its size plus the overlap it repeats.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_knowledge::chunk::tokens;
use rein_knowledge::{ChunkOptions, Parsed, chunk, parse};
use std::path::Path;

const NAMES: [&str; 8] = [
    "notes.md",
    "notes.txt",
    "main.rs",
    "page.html",
    "paper.pdf",
    "README",
    "data.bin",
    "x.json",
];

fuzz_target!(|data: &[u8]| {
    let [which, max, overlap, bytes @ ..] = data else {
        return;
    };
    let name = NAMES[usize::from(*which) % NAMES.len()];
    let Parsed::Text { text, format } = parse(Path::new(name), bytes) else {
        return;
    };
    let opts = ChunkOptions {
        max_tokens: usize::from(*max) + 1,
        overlap_tokens: usize::from(*overlap) % (usize::from(*max) + 1),
    };
    let lines = text.lines().count().max(1);
    let mut last_start = 0;
    for c in chunk(&text, format, &opts) {
        assert!(
            1 <= c.line_start && c.line_start <= c.line_end && c.line_end <= lines,
            "{name}: chunk lines {}..{} outside 1..{lines}",
            c.line_start,
            c.line_end
        );
        assert!(c.line_start >= last_start, "{name}: chunks out of order");
        last_start = c.line_start;
        assert!(
            tokens(&c.text) <= opts.max_tokens + opts.overlap_tokens,
            "{name}: a chunk of {} tokens with max {} and overlap {}",
            tokens(&c.text),
            opts.max_tokens,
            opts.overlap_tokens
        );
    }
});
