//! Cutting a file's text into chunks for retrieval, by structure first and size second: a chunk
//! never spans two sections (a Markdown heading starts a new one, and the chunk knows the
//! headings it sits under), is cut between paragraphs, code blocks and blank-line separated
//! blocks where it can, between lines where a block is too big, and inside a line only when a
//! line alone is. Consecutive chunks of a section overlap by a few lines so a passage cut in two
//! is still found whole. Every chunk keeps the lines of the file it spans (1-based).

use super::Format;

/// How big chunks are, in estimated tokens (see [`tokens`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkOptions {
    /// The most a chunk holds.
    pub max_tokens: usize,
    /// What the next chunk of the same section repeats from the end of the one before.
    pub overlap_tokens: usize,
}

impl Default for ChunkOptions {
    fn default() -> Self {
        Self {
            max_tokens: 400,
            overlap_tokens: 40,
        }
    }
}

/// One chunk of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Its text.
    pub text: String,
    /// The headings it sits under, outermost first (Markdown; empty otherwise).
    pub headings: Vec<String>,
    /// The first line of the file it holds (1-based).
    pub line_start: usize,
    /// The last line of the file it holds (1-based).
    pub line_end: usize,
}

/// An estimate of the tokens `text` costs: one per four characters, rounded up. The same
/// estimate everywhere, so a file is cut the same way on every machine.
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// A run of lines that belongs together (0-based, inclusive), in one section.
#[derive(Clone, Copy, Debug)]
struct Block {
    start: usize,
    end: usize,
    section: usize,
}

/// A Markdown heading line: its level and title.
fn heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    let level = t.bytes().take_while(|b| *b == b'#').count();
    let rest = &t[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with([' ', '\t'])))
        .then(|| (level, rest.trim().trim_end_matches('#').trim()))
}

fn fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The blocks of `lines` and the heading path of each section.
fn blocks(lines: &[&str], format: Format) -> (Vec<Block>, Vec<Vec<String>>) {
    let mut sections: Vec<Vec<String>> = vec![Vec::new()];
    // The level of each heading of the current section's path.
    let mut levels: Vec<usize> = Vec::new();
    let mut out: Vec<Block> = Vec::new();
    let mut open: Option<usize> = None;
    let mut in_fence = false;
    let close = |open: &mut Option<usize>, end: usize, section: usize, out: &mut Vec<Block>| {
        if let Some(start) = open.take() {
            out.push(Block {
                start,
                end,
                section,
            });
        }
    };
    for (i, line) in lines.iter().enumerate() {
        let section = sections.len() - 1;
        if format == Format::Markdown && fence(line) {
            if in_fence {
                // The closing fence ends the code block, which stays whole.
                in_fence = false;
                open.get_or_insert(i);
                close(&mut open, i, section, &mut out);
            } else {
                close(&mut open, i.saturating_sub(1), section, &mut out);
                in_fence = true;
                open = Some(i);
            }
            continue;
        }
        if in_fence {
            continue;
        }
        if format == Format::Markdown
            && let Some((level, title)) = heading(line)
        {
            close(&mut open, i.saturating_sub(1), section, &mut out);
            // A heading closes the sections of its level and deeper, whatever levels the
            // document skipped (a page of `##` headings is a list of siblings).
            let mut path = sections[section].clone();
            while levels.last().is_some_and(|l| *l >= level) {
                levels.pop();
                path.pop();
            }
            levels.push(level);
            path.push(title.to_owned());
            sections.push(path);
            // The heading opens its section's first block.
            open = Some(i);
            continue;
        }
        if line.trim().is_empty() {
            close(&mut open, i.saturating_sub(1), section, &mut out);
        } else {
            open.get_or_insert(i);
        }
    }
    let last = lines.len().saturating_sub(1);
    close(&mut open, last, sections.len() - 1, &mut out);
    (out, sections)
}

/// Cut `text` (of structure `format`) into chunks of at most `opts.max_tokens` each, plus the
/// overlap a chunk repeats from the one before it in its section.
pub fn chunk(text: &str, format: Format, opts: &ChunkOptions) -> Vec<Chunk> {
    let max = opts.max_tokens.max(1);
    let lines: Vec<&str> = text.lines().collect();
    let (blocks, sections) = blocks(&lines, format);
    let span = |a: usize, b: usize| lines[a..=b].join("\n");
    // Each chunk as (first line, last line, section), or a part of one long line.
    let mut ranges: Vec<(usize, usize, usize)> = Vec::new();
    let mut pieces: Vec<Chunk> = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let b = blocks[i];
        if tokens(&span(b.start, b.end)) > max {
            // Too big for one chunk: cut between lines, a line alone inside it.
            let mut start = b.start;
            while start <= b.end {
                let mut end = start;
                while end < b.end && tokens(&span(start, end + 1)) <= max {
                    end += 1;
                }
                if tokens(lines[start]) > max {
                    for part in split_line(lines[start], max) {
                        pieces.push(Chunk {
                            text: part,
                            headings: sections[b.section].clone(),
                            line_start: start + 1,
                            line_end: start + 1,
                        });
                    }
                    ranges.push((start, start, usize::MAX));
                } else {
                    ranges.push((start, end, b.section));
                }
                start = end + 1;
            }
            i += 1;
            continue;
        }
        let mut end = b.end;
        let mut j = i + 1;
        while j < blocks.len()
            && blocks[j].section == b.section
            && tokens(&span(b.start, blocks[j].end)) <= max
        {
            end = blocks[j].end;
            j += 1;
        }
        ranges.push((b.start, end, b.section));
        i = j;
    }
    let mut out = Vec::with_capacity(ranges.len());
    let mut parts = pieces.into_iter().peekable();
    for k in 0..ranges.len() {
        let (start, end, section) = ranges[k];
        if section == usize::MAX {
            while let Some(p) = parts.next_if(|p| p.line_start == start + 1) {
                out.push(p);
            }
            continue;
        }
        // Repeat the last whole lines of the previous chunk of this section that fit in the
        // overlap (never all of it). The whole chunk is measured too: the line break that joins
        // the overlap to the chunk, and rounding each part up, can cost a token more than the
        // two estimates apart.
        let mut from = start;
        if k > 0 && ranges[k - 1].2 == section && opts.overlap_tokens > 0 {
            let prev_start = ranges[k - 1].0;
            while from > prev_start + 1
                && tokens(&span(from - 1, start - 1)) <= opts.overlap_tokens
                && tokens(&span(from - 1, end)) <= max + opts.overlap_tokens
            {
                from -= 1;
            }
            while from < start && lines[from].trim().is_empty() {
                from += 1;
            }
        }
        out.push(Chunk {
            text: span(from, end),
            headings: sections[section].clone(),
            line_start: from + 1,
            line_end: end + 1,
        });
    }
    out
}

/// A line too long for one chunk, in parts of at most `max` tokens.
fn split_line(line: &str, max: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    chars.chunks(max * 4).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUIDE: &str = "# Guide\n\nIntro paragraph.\n\n## Install\n\nRun the installer.\n\n```sh\ncargo install rein\n\nrein --help\n```\n\n## Use\n\nAsk it things.\n";

    #[test]
    fn a_heading_closes_its_level_whatever_levels_were_skipped() {
        let text = "## A\n\na\n\n#### A1\n\na1\n\n## B\n\nb\n\n# C\n\n### C1\n\nc1\n";
        let heads: Vec<Vec<String>> = chunk(text, Format::Markdown, &ChunkOptions::default())
            .into_iter()
            .map(|c| c.headings)
            .collect();
        let want: Vec<Vec<&str>> = vec![
            vec!["A"],
            vec!["A", "A1"],
            vec!["B"],
            vec!["C"],
            vec!["C", "C1"],
        ];
        assert_eq!(heads, want);
    }

    #[test]
    fn sections_stay_apart_code_blocks_stay_whole_and_lines_are_kept() {
        let chunks = chunk(GUIDE, Format::Markdown, &ChunkOptions::default());
        let heads: Vec<Vec<String>> = chunks.iter().map(|c| c.headings.clone()).collect();
        assert_eq!(
            heads,
            [
                vec!["Guide".to_owned()],
                vec!["Guide".to_owned(), "Install".to_owned()],
                vec!["Guide".to_owned(), "Use".to_owned()],
            ]
        );
        assert_eq!((chunks[1].line_start, chunks[1].line_end), (5, 13));
        assert!(
            chunks[1]
                .text
                .contains("cargo install rein\n\nrein --help\n```")
        );
        assert_eq!(chunks[2].text, "## Use\n\nAsk it things.");
    }

    #[test]
    fn a_section_too_big_is_cut_between_blocks_with_overlap() {
        let paragraphs: Vec<String> = (1..=6)
            .map(|n| format!("Paragraph {n} says something about topic {n}."))
            .collect();
        let text = paragraphs.join("\n\n");
        let opts = ChunkOptions {
            max_tokens: 25,
            overlap_tokens: 12,
        };
        let chunks = chunk(&text, Format::Text, &opts);
        assert!(chunks.len() >= 3, "{chunks:#?}");
        for c in &chunks {
            assert!(
                tokens(&c.text) <= opts.max_tokens + opts.overlap_tokens,
                "{c:?}"
            );
        }
        // The second chunk repeats the last paragraph of the first.
        assert!(chunks[1].line_start <= chunks[0].line_end, "{chunks:#?}");
        for p in &paragraphs {
            assert!(
                chunks.iter().any(|c| c.text.contains(p.as_str())),
                "{p} lost"
            );
        }
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_cut_inside() {
        let long = "x".repeat(50);
        let chunks = chunk(
            &format!("short\n\n{long}\n\nend"),
            Format::Text,
            &ChunkOptions {
                max_tokens: 4,
                overlap_tokens: 0,
            },
        );
        let parts: Vec<&Chunk> = chunks.iter().filter(|c| c.line_start == 3).collect();
        assert_eq!(parts.len(), 4, "{chunks:#?}");
        assert_eq!(
            parts.iter().map(|c| c.text.as_str()).collect::<String>(),
            long
        );
        assert_eq!(chunks.last().map(|c| c.text.as_str()), Some("end"));
    }

    /// Found by the property below: a code block cut between lines, whose overlap and own
    /// lines each fit but, joined by a line break and each rounded up, came to a token over.
    #[test]
    fn an_overlap_never_takes_a_chunk_past_its_bound() {
        let text = [
            "```",
            "```",
            "```",
            &"a".repeat(80),
            "",
            "aa aa   aa    aa aa   a  a   a   a aa      a   a aaa  aaaaa ",
            " a  aaaa     aaa aa a  aaaaa aaa aaa    a      aaa  a    aa",
            "",
            "```",
        ]
        .join("\n");
        let opts = ChunkOptions {
            max_tokens: 16,
            overlap_tokens: 15,
        };
        let chunks = chunk(&text, Format::Markdown, &opts);
        for c in &chunks {
            assert!(tokens(&c.text) <= 31, "{c:?}");
        }
        assert!(chunks.iter().any(|c| c.line_end == 9), "{chunks:#?}");
    }

    fn line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            4 => "[a-z ]{0,60}",
            1 => Just(String::new()),
            1 => "#{1,3} [a-z]{1,10}",
            1 => Just("```".to_owned()),
            1 => "[a-z]{80,200}",
        ]
    }

    proptest::proptest! {
        // A fixed seed: the same cases on every run, so a failure is found here, not by chance
        // in CI.
        #![proptest_config(proptest::test_runner::Config {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0xc4a2_0016),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        /// Whatever the text and the sizes: no chunk is bigger than it may be, every line with
        /// something on it is in a chunk, chunks come in the file's order, and a chunk of whole
        /// lines is exactly those lines of the file.
        #[test]
        fn chunks_are_bounded_cover_the_file_and_keep_its_lines(
            lines in proptest::collection::vec(line(), 0..60),
            markdown in proptest::bool::ANY,
            max in 1usize..80,
            overlap in 0usize..20,
        ) {
            let text = lines.join("\n");
            let format = if markdown { Format::Markdown } else { Format::Text };
            let opts = ChunkOptions { max_tokens: max, overlap_tokens: overlap };
            let chunks = chunk(&text, format, &opts);
            let file: Vec<&str> = text.lines().collect();
            let mut last_start = 0;
            for c in &chunks {
                proptest::prop_assert!(tokens(&c.text) <= max + overlap, "{c:?}");
                proptest::prop_assert!(c.line_start >= last_start && c.line_start <= c.line_end);
                last_start = c.line_start;
                let whole = file[c.line_start - 1..c.line_end].join("\n");
                proptest::prop_assert!(
                    c.text == whole || (c.line_start == c.line_end && whole.contains(&c.text)),
                    "{c:?} vs {whole:?}"
                );
            }
            for (i, l) in file.iter().enumerate() {
                if !l.trim().is_empty() {
                    proptest::prop_assert!(
                        chunks.iter().any(|c| c.line_start <= i + 1 && i < c.line_end),
                        "line {} ({l:?}) is in no chunk", i + 1
                    );
                }
            }
        }
    }
}
