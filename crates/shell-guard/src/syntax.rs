//! Parsing a command line into a syntax tree without letting hostile input crash the process.
//!
//! brush-parser recurses once per nesting level (braces, subshells, `if`, `$(`, `[[ ! …`), so a
//! command nested a few hundred levels deep overflows a thread's stack, which aborts the whole
//! process. Every nesting level needs at least one opener character or keyword, so counting
//! them bounds the depth: small commands (almost all) are parsed where they are; larger ones on
//! a thread with a large stack (reserved, not committed, until used); beyond a hard limit, or
//! where no thread can be started (wasm), the command is not parsed and counts as unanalysable.
//! A panic inside the parser is caught and counts the same way.

use super::Analysis;
use super::walk::Walker;
use brush_parser::ast;

/// Openers up to which parsing runs on the caller's stack (measured: 64 nesting levels parse
/// in well under 1 MiB of stack in a debug build).
pub(super) const INLINE_OPENERS: usize = 48;
/// Openers up to which parsing runs on a dedicated large stack.
const MAX_OPENERS: usize = 4096;
/// The dedicated stack: ~64 KiB per nesting level at the limit, four times what a debug build
/// was measured to need.
#[cfg(not(target_family = "wasm"))]
const BIG_STACK: usize = 256 << 20;
/// Unquoted parentheses nested deeper than this are not parsed: brush-parser backtracks
/// exponentially on deep subshells or `((` that do not parse (`( ( ( … ;` 24 deep took
/// seconds, and each level doubles it; found by the `shell_guard` fuzz target).
const MAX_PAREN_DEPTH: usize = 16;
/// Parameter expansions with an unclosed subscript (`${a[b}`) beyond this many are not parsed:
/// brush-parser backtracks exponentially on them, in quotes or not (8 took over 30 s; found by
/// the `shell_guard` fuzz target).
const MAX_UNCLOSED_SUBSCRIPTS: usize = 2;
/// Commands longer than this are not parsed.
const MAX_LEN: usize = 1 << 20;

/// Whether a here-document operator (`<<`, `<<-`; not the here-string `<<<`) is followed by
/// an empty quoted word (`""`, `''`) as its delimiter.
pub(super) fn empty_heredoc_delimiter(text: &str) -> bool {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("<<").map(|i| from + i) {
        let mut j = at + 2;
        from = j;
        if b.get(j) == Some(&b'<') {
            // A here-string, and the run of `<` it is in.
            while b.get(from) == Some(&b'<') {
                from += 1;
            }
            continue;
        }
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        let quoted_empty = matches!(b.get(j..j + 2), Some(b"\"\"" | b"''"));
        let word_goes_on = b.get(j + 2).is_some_and(|c| {
            !matches!(
                c,
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
            )
        });
        if quoted_empty && !word_goes_on {
            return true;
        }
    }
    false
}

/// How many `${name[` in `text` have no `]` before their `}`.
pub(super) fn unclosed_subscripts(text: &str) -> usize {
    text.match_indices("${")
        .filter(|(at, _)| {
            let rest = &text[at + 2..];
            let name = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let Some(subscript) = rest[name..].strip_prefix('[') else {
                return false;
            };
            let close = subscript.find(']').unwrap_or(usize::MAX);
            let end = subscript.find('}').unwrap_or(usize::MAX);
            close == usize::MAX || close > end
        })
        .count()
}

/// How deep unquoted, unescaped parentheses nest in `text` (subshells, `$(`, `((`); a `)`
/// without its `(` (a `case` pattern) does not go below zero.
pub(super) fn paren_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for (c, _) in crate::value::unquoted(text) {
        match c {
            '(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Characters and keywords that can open a nesting level in the parser or the tokenizer.
pub(super) fn openers(text: &str) -> usize {
    let chars = text
        .bytes()
        .filter(|b| matches!(b, b'(' | b'{' | b'[' | b'`' | b'!'))
        .count();
    let keywords = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| {
            matches!(
                *w,
                "if" | "while" | "until" | "for" | "case" | "select" | "function" | "coproc"
            )
        })
        .count();
    chars + keywords
}

/// Parse `text` as a shell program; the error says why it could not be read.
pub(super) fn parse(text: &str, max_openers: usize) -> Result<ast::Program, String> {
    if text.len() > MAX_LEN {
        return Err(format!("it is longer than {MAX_LEN} bytes"));
    }
    // brush-parser's tokenizer never ends on a here-document whose delimiter starts with a
    // carriage return or a form feed (`<<\x0c `: memory grows until the process dies; found
    // by the `shell_guard` fuzz target). Bash reads both as ordinary word characters; a command
    // that has one is not analysed.
    if text.contains(['\r', '\x0c']) {
        return Err("it contains a carriage return or a form feed".to_owned());
    }
    if unclosed_subscripts(text) > MAX_UNCLOSED_SUBSCRIPTS {
        return Err("it has parameter expansions with unclosed subscripts (`${a[b}`)".to_owned());
    }
    // Nor on one whose delimiter is an empty quoted word (`<<"" `, `<<'' `).
    if empty_heredoc_delimiter(text) {
        return Err("it has a here-document with an empty delimiter".to_owned());
    }
    if openers(text) > max_openers {
        return Err(format!(
            "it nests or groups more than {max_openers} times, beyond what is analysed"
        ));
    }
    if paren_depth(text) > MAX_PAREN_DEPTH {
        return Err(format!(
            "it nests parentheses more than {MAX_PAREN_DEPTH} deep, beyond what is analysed"
        ));
    }
    let parse = || {
        let options = brush_parser::ParserOptions::default();
        let tokens = brush_parser::tokenize_str_with_options(text, &options.tokenizer_options())
            .map_err(|e| format!("it does not tokenize: {e}"))?;
        brush_parser::parse_tokens(&tokens, &options).map_err(|e| format!("it does not parse: {e}"))
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse))
        .unwrap_or_else(|_| Err("the parser failed on it".to_owned()))
}

/// Analyse `command`, choosing where to run the parser by how deeply it could nest.
pub(super) fn analyze_guarded(command: &str) -> Analysis {
    let n = openers(command);
    if n <= INLINE_OPENERS {
        return Walker::analyze(command, INLINE_OPENERS);
    }
    if n <= MAX_OPENERS
        && let Some(a) = on_big_stack(command)
    {
        return a;
    }
    Walker::unanalysable(
        command,
        &format!("it nests or groups more than {INLINE_OPENERS} times, beyond what is analysed"),
    )
}

#[cfg(not(target_family = "wasm"))]
fn on_big_stack(command: &str) -> Option<Analysis> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("rein-shell-guard".into())
            .stack_size(BIG_STACK)
            .spawn_scoped(s, || Walker::analyze(command, MAX_OPENERS))
            .ok()?;
        // A panic is a failed analysis: unanalysable, never a crash.
        Some(
            handle
                .join()
                .unwrap_or_else(|_| Walker::unanalysable(command, "the analysis failed on it")),
        )
    })
}

#[cfg(target_family = "wasm")]
fn on_big_stack(_command: &str) -> Option<Analysis> {
    None
}
