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
/// Commands longer than this are not parsed.
const MAX_LEN: usize = 1 << 20;

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
    if let Some(why) = crate::limits::beyond_the_parser(text) {
        return Err(why);
    }
    if openers(text) > max_openers {
        return Err(format!(
            "it nests or groups more than {max_openers} times, beyond what is analysed"
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
