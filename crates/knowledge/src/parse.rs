//! What a file added to a knowledge base holds: its text and how it is structured (Markdown,
//! plain text, source code), or why it is skipped (binary, empty, not valid UTF-8, a format not
//! read), said so a person can act on it. HTML becomes Markdown (headings kept, scripts and
//! styles dropped); a PDF becomes its pages' text, each under a `Page N` heading, so a chunk's
//! heading path says which page it is from (its lines are those of the extracted text).

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

/// What `bytes`, the contents of `path`, hold. Text comes out as every store and provider
/// takes it: control characters other than line breaks and tabs shown as their pictures
/// (PostgreSQL refuses U+0000, which a PDF's or an HTML page's text can hold); text that turns
/// out mostly binary past its first 8 KiB is skipped as binary.
pub fn parse(path: &Path, bytes: &[u8]) -> Parsed {
    match read(path, bytes) {
        Parsed::Text { text, format } => {
            if rein_core::text::is_binary(&text) {
                return Parsed::Skipped {
                    reason: "a binary file".into(),
                };
            }
            let text = match rein_core::text::visible_controls(&text) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(shown) => shown,
            };
            Parsed::Text { text, format }
        }
        skipped @ Parsed::Skipped { .. } => skipped,
    }
}

/// What `bytes` hold, as read.
fn read(path: &Path, bytes: &[u8]) -> Parsed {
    let skip = |reason: String| Parsed::Skipped { reason };
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if ext == "pdf" || bytes.starts_with(b"%PDF-") {
        return pdf(bytes);
    }
    if matches!(ext.as_str(), "html" | "htm" | "xhtml") {
        return html(bytes);
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

/// A PDF's text, page by page under `## Page N` headings.
fn pdf(bytes: &[u8]) -> Parsed {
    let skip = |reason: String| Parsed::Skipped { reason };
    // A hostile or broken file must cost a skip, never the process: the parser's own checks
    // are trusted first, and a panic deep in it is caught as one more way to be unreadable.
    let read = std::panic::catch_unwind(|| -> Result<Vec<(u32, String)>, String> {
        let doc = lopdf::Document::load_mem(bytes).map_err(|e| e.to_string())?;
        if doc.is_encrypted() {
            return Err("it is encrypted".into());
        }
        Ok(doc
            .get_pages()
            .into_keys()
            .filter_map(|n| doc.extract_text(&[n]).ok().map(|t| (n, t)))
            .collect())
    });
    let pages = match read {
        Ok(Ok(pages)) => pages,
        Ok(Err(e)) => return skip(format!("a PDF that could not be read ({e})")),
        Err(_) => return skip("a PDF that could not be read (its structure is broken)".into()),
    };
    let mut text = String::new();
    for (n, page) in pages {
        let page = page.replace("\r\n", "\n").replace('\r', "\n");
        if page.trim().is_empty() {
            continue;
        }
        text.push_str(&format!("## Page {n}\n\n"));
        for line in page.lines() {
            // The page's own lines never open a section.
            if line.trim_start().starts_with('#') {
                text.push('\\');
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text.push('\n');
    }
    if text.trim().is_empty() {
        return skip("a PDF without text (scanned pages need OCR, which rein does not do)".into());
    }
    Parsed::Text {
        text,
        format: Format::Markdown,
    }
}

/// An HTML page as Markdown (what a reader sees: scripts, styles and the head left out).
fn html(bytes: &[u8]) -> Parsed {
    let skip = |reason: String| Parsed::Skipped { reason };
    let source = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => return skip(format!("not valid UTF-8 (at byte {})", e.valid_up_to())),
    };
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec!["script", "style", "head", "noscript", "template"])
        .build();
    match converter.convert(source) {
        Ok(md) if md.trim().is_empty() => skip("an HTML page without text".into()),
        Ok(md) => Parsed::Text {
            text: md.replace("\r\n", "\n"),
            format: Format::Markdown,
        },
        Err(e) => skip(format!("HTML that could not be read ({e})")),
    }
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
        assert!(
            reason("paper.pdf", b"%PDF-1.7 ...").starts_with("a PDF that could not be read ("),
            "a truncated PDF"
        );
        assert_eq!(
            reason(
                "page.html",
                b"<html><head><title>T</title></head><body><script>x()</script></body></html>"
            ),
            "an HTML page without text"
        );
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

    #[test]
    fn control_characters_past_the_first_8_kib_are_shown_and_binary_is_skipped() {
        let mut text = "a line\n".repeat(1_200).into_bytes();
        text.extend_from_slice(b"NUL\0 here and an \x1b escape\n");
        let Parsed::Text { text: read, .. } = parse(Path::new("log.txt"), &text) else {
            panic!("a text file")
        };
        assert!(!read.contains('\0'));
        assert!(
            read.ends_with("NUL\u{2400} here and an \u{241b} escape\n"),
            "{}",
            &read[read.len() - 40..]
        );
        let mut binary = "header\n".repeat(1_200).into_bytes();
        binary.extend(std::iter::repeat_n(1u8, 20_000));
        assert_eq!(reason("dump.txt", &binary), "a binary file");
    }

    #[test]
    fn a_pdf_is_read_page_by_page_under_page_headings() {
        let bytes = rein_testkit::pdf(&["Install rein with cargo.", "# Not a heading"]);
        let Parsed::Text { text, format } = parse(Path::new("manual.pdf"), &bytes) else {
            panic!("the PDF was not read");
        };
        assert_eq!(format, Format::Markdown);
        assert!(
            text.starts_with("## Page 1\n\nInstall rein with cargo."),
            "{text}"
        );
        assert!(text.contains("## Page 2\n\n\\# Not a heading"), "{text}");
        let chunks = crate::chunk(&text, format, &Default::default());
        assert_eq!(chunks[1].headings, ["Page 2"]);
        // Cut anywhere, a PDF is skipped with a reason, never a panic.
        for cut in (0..bytes.len()).step_by(7) {
            match parse(Path::new("manual.pdf"), &bytes[..cut]) {
                Parsed::Skipped { reason } => assert!(reason.starts_with("a PDF"), "{reason}"),
                Parsed::Text { .. } => {}
            }
        }
    }

    #[test]
    fn html_becomes_markdown_with_its_headings() {
        let page = b"<html><head><style>p{}</style></head><body><h1>Guide</h1>\
            <p>Run <code>rein serve</code>.</p><h2>Upgrade</h2><p>Migrations run.</p>\
            <script>track()</script></body></html>";
        let Parsed::Text { text, format } = parse(Path::new("guide.html"), page) else {
            panic!("the page was not read");
        };
        assert_eq!(format, Format::Markdown);
        assert!(
            text.contains("# Guide") && text.contains("## Upgrade"),
            "{text}"
        );
        assert!(
            text.contains("`rein serve`") && !text.contains("track()"),
            "{text}"
        );
        let chunks = crate::chunk(&text, format, &Default::default());
        assert!(
            chunks.iter().any(|c| c.headings == ["Guide", "Upgrade"]),
            "{chunks:?}"
        );
    }
}
