//! Inputs the shell parser (brush-parser) cannot be given: it backtracks exponentially on
//! some shapes, panics on others, and on a few never ends while its memory grows. Each was found
//! by the `shell_guard` fuzz target (`fuzz/`, docs/reliability.md); a command of such a shape is
//! refused before parsing, and so is unanalysable (it needs a human), answered at once.

/// Unquoted parentheses nested deeper than this are not parsed: brush-parser backtracks
/// exponentially on deep subshells or `((` that do not parse (`( ( ( … ;` 24 deep took
/// seconds, and each level doubles it; found by the `shell_guard` fuzz target).
const MAX_PAREN_DEPTH: usize = 16;
/// Parameter expansions with an unclosed subscript (`${a[b}`) beyond this many are not parsed:
/// brush-parser backtracks exponentially on them, in quotes or not (8 took over 30 s; found by
/// the `shell_guard` fuzz target).
const MAX_UNCLOSED_SUBSCRIPTS: usize = 2;
/// Why `text` is not given to the parser, if it is not.
pub(super) fn beyond_the_parser(text: &str) -> Option<String> {
    // The tokenizer never ends on a here-document whose delimiter starts with a carriage return
    // or a form feed (`<<\x0c `: memory grows until the process dies). Bash reads both as
    // ordinary word characters.
    if text.contains(['\r', '\x0c']) {
        return Some("it contains a carriage return or a form feed".to_owned());
    }
    // Nor on one whose delimiter is an empty quoted word at the end (`<<"" `, `<<'' `).
    if empty_heredoc_delimiter(text) {
        return Some("it has a here-document with an empty delimiter".to_owned());
    }
    if unclosed_subscripts(text) > MAX_UNCLOSED_SUBSCRIPTS {
        return Some("it has parameter expansions with unclosed subscripts (`${a[b}`)".to_owned());
    }
    if paren_depth(text) > MAX_PAREN_DEPTH {
        return Some(format!(
            "it nests parentheses more than {MAX_PAREN_DEPTH} deep, beyond what is analysed"
        ));
    }
    None
}

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
