//! What a file added to a knowledge base holds: its text and how it is structured (Markdown,
//! plain text, source code), or why it is skipped (binary, empty, not valid UTF-8, a format not
//! read yet), said so a person can act on it.

use std::path::Path;

/// How a file's text is structured, which decides where it may be cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Headings (`#`), paragraphs and fenced code blocks.
    Markdown,
    /// Paragraphs separated by blank lines.
    Text,
    /// Source code: blocks separated by blank lines.
    Code,
}

/// What a file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Text to chunk.
    Text {
        /// The text (line ends normalised to `\n`).
        text: String,
        /// Its structure.
        format: Format,
    },
    /// Not indexed, and why.
    Skipped {
        /// The reason, for a person.
        reason: String,
    },
}

const MARKDOWN: &[&str] = &["md", "markdown", "mdx"];
const TEXT: &[&str] = &[
    "txt", "text", "rst", "adoc", "org", "csv", "tsv", "json", "jsonl", "yaml", "yml", "toml",
    "ini", "cfg", "conf", "log", "xml", "tex",
];
const CODE: &[&str] = &[
    "rs", "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "java", "kt", "kts", "scala", "c",
    "h", "cc", "cpp", "cxx", "hpp", "cs", "rb", "php", "swift", "m", "sh", "bash", "zsh", "fish",
    "ps1", "sql", "lua", "pl", "r", "jl", "hs", "ml", "ex", "exs", "erl", "clj", "dart", "vue",
    "svelte", "css", "scss", "proto", "graphql", "tf", "nix", "zig", "cmake", "mk",
];
/// Names without an extension that are text.
const NAMED: &[&str] = &[
    "readme",
    "license",
    "makefile",
    "dockerfile",
    "changelog",
    "notice",
    "authors",
];

/// What `bytes`, the contents of `path`, hold.
pub fn parse(path: &Path, bytes: &[u8]) -> Parsed {
    let skip = |reason: String| Parsed::Skipped { reason };
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if ext == "pdf" || bytes.starts_with(b"%PDF-") {
        return skip("a PDF: not read yet".into());
    }
    if matches!(ext.as_str(), "html" | "htm" | "xhtml") {
        return skip("HTML: not read yet".into());
    }
    // A NUL early on is what text files do not have.
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return skip("a binary file".into());
    }
    let format = if MARKDOWN.contains(&ext.as_str()) {
        Format::Markdown
    } else if CODE.contains(&ext.as_str()) {
        Format::Code
    } else if TEXT.contains(&ext.as_str())
        || (ext.is_empty()
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| NAMED.contains(&n.to_ascii_lowercase().as_str())))
    {
        Format::Text
    } else if ext.is_empty() {
        return skip("no extension to tell what it holds".into());
    } else {
        return skip(format!("`.{ext}` files are not read"));
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.trim_start_matches('\u{feff}').replace("\r\n", "\n"),
        Err(e) => {
            return skip(format!("not valid UTF-8 (at byte {})", e.valid_up_to()));
        }
    };
    if text.trim().is_empty() {
        return skip("empty".into());
    }
    Parsed::Text { text, format }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(name: &str, bytes: &[u8]) -> String {
        match parse(Path::new(name), bytes) {
            Parsed::Skipped { reason } => reason,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn files_are_read_by_what_they_are_and_the_rest_is_skipped_with_a_reason() {
        let md = parse(
            Path::new("docs/Guide.MD"),
            b"\xef\xbb\xbf# Title\r\nBody\r\n",
        );
        assert_eq!(
            md,
            Parsed::Text {
                text: "# Title\nBody\n".into(),
                format: Format::Markdown
            }
        );
        assert!(matches!(
            parse(Path::new("src/lib.rs"), b"fn main() {}"),
            Parsed::Text {
                format: Format::Code,
                ..
            }
        ));
        assert!(matches!(
            parse(Path::new("README"), b"hello"),
            Parsed::Text {
                format: Format::Text,
                ..
            }
        ));
        assert_eq!(
            reason("logo.png", b"\x89PNG\r\n\x1a\n\0\0"),
            "a binary file"
        );
        assert_eq!(reason("paper.pdf", b"%PDF-1.7 ..."), "a PDF: not read yet");
        assert_eq!(reason("page.html", b"<p>x</p>"), "HTML: not read yet");
        assert_eq!(reason("notes.txt", b"  \n\t"), "empty");
        assert_eq!(reason("data.bin", b"abc"), "`.bin` files are not read");
        assert_eq!(
            reason("Latin1.txt", b"caf\xe9"),
            "not valid UTF-8 (at byte 3)"
        );
        assert_eq!(
            reason("run", b"#!/bin/sh"),
            "no extension to tell what it holds"
        );
    }
}
