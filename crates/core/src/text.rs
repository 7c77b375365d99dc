//! Text as a message carries it: what tools return (a shell's output, a file's bytes, a
//! fetched page, an MCP result) is normalised once, where it becomes a tool result, so every
//! store takes it (PostgreSQL refuses U+0000 in text) and every provider reads the same thing.
//! Line breaks and tabs stay; `\r\n` and a lone `\r` become `\n`; every other control character
//! (C0, DEL) is shown as its Unicode control picture (`␀` for NUL, `␛` for ESC, `␡` for DEL),
//! so it stays visible instead of vanishing or breaking the request. Output that is mostly not
//! text (a binary file read whole) is replaced by a short description: its size and a hex
//! preview of its first bytes.

use std::borrow::Cow;

/// How many bytes the preview of binary output shows.
const PREVIEW: usize = 48;

/// Whether `c` is kept as it is.
fn plain(c: char) -> bool {
    !c.is_control() || c == '\n' || c == '\t'
}

/// `raw` as message text (see the module docs); borrowed when nothing changes.
pub fn message_text(raw: &str) -> Cow<'_, str> {
    if raw.chars().all(plain) {
        return Cow::Borrowed(raw);
    }
    if is_binary(raw) {
        return Cow::Owned(describe_binary(raw));
    }
    visible_controls(raw)
}

/// `raw` with its line breaks normalised and every other control character shown as its
/// picture, binary or not: for text that is known to be text (a document's, a memory's), where
/// [`message_text`]'s description of binary output would lose it.
pub fn visible_controls(raw: &str) -> Cow<'_, str> {
    if raw.chars().all(plain) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            c if plain(c) => out.push(c),
            c => out.push(picture(c)),
        }
    }
    Cow::Owned(out)
}

/// The control picture of a control character (U+2400 block), or U+FFFD for the C1 range,
/// which has none.
fn picture(c: char) -> char {
    match u32::from(c) {
        n @ 0..=0x1f => char::from_u32(0x2400 + n).unwrap_or('\u{fffd}'),
        0x7f => '\u{2421}',
        _ => '\u{fffd}',
    }
}

/// Mostly not text: at least 16 characters, more than three in ten of them control characters
/// other than line breaks and tabs, or replacement characters (what invalid UTF-8 became when
/// it was read). Text with a few escapes or a stray NUL stays text.
pub fn is_binary(raw: &str) -> bool {
    let (mut odd, mut all) = (0usize, 0usize);
    for c in raw.chars() {
        all += 1;
        if !(plain(c) || c == '\r') || c == '\u{fffd}' {
            odd += 1;
        }
    }
    all >= 16 && odd * 10 > all * 3
}

fn describe_binary(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let preview: Vec<String> = bytes
        .iter()
        .take(PREVIEW)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "(binary output, {} bytes, not shown as text; the first {} bytes in hex: {}{})",
        bytes.len(),
        preview.len(),
        preview.join(" "),
        if bytes.len() > PREVIEW { " …" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_borrowed_untouched() {
        let s = "line one\n\tindented — ünïcödé 🙂";
        assert!(matches!(message_text(s), Cow::Borrowed(t) if t == s));
    }

    #[test]
    fn nul_and_escapes_become_visible_and_line_ends_normal() {
        assert_eq!(message_text("a\0b"), "a\u{2400}b");
        assert_eq!(
            message_text("\x1b[31mred\x1b[0m"),
            "\u{241b}[31mred\u{241b}[0m"
        );
        assert_eq!(
            message_text("one\r\ntwo\rthree\x7f"),
            "one\ntwo\nthree\u{2421}"
        );
    }

    #[test]
    fn a_binary_file_is_described_not_sent() {
        let elf: String = String::from_utf8_lossy(
            &[
                0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0x3e, 0, 1, 0, 0,
                0,
            ]
            .repeat(20),
        )
        .into_owned();
        let out = message_text(&elf);
        assert!(out.starts_with("(binary output, "), "{out}");
        assert!(out.contains("7f 45 4c 46"), "{out}");
        assert!(!out.contains('\0'));
    }

    proptest! {
        /// Whatever a tool returns, the text has no control character but line breaks and
        /// tabs, and normalising it again changes nothing.
        #[test]
        fn normalised_text_is_storable_and_stable(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let raw = String::from_utf8_lossy(&bytes);
            let once = message_text(&raw).into_owned();
            prop_assert!(once.chars().all(plain), "{once:?}");
            prop_assert_eq!(message_text(&once).into_owned(), once.clone());
        }
    }
}
