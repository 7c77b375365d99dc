//! A web page as a reader sees it: its title, and the Markdown of its main content (the
//! `<main>` or `<article>` when the page marks one, else its body) without navigation,
//! headers, footers, sidebars, forms, scripts or styles. Converted by `htmd` (the crate that
//! also reads knowledge bases' HTML); links stay links, so what a page cites can be followed.

use std::sync::LazyLock;

/// What [`readable`] keeps of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The `<title>`, on one line.
    pub title: Option<String>,
    /// The main content as Markdown.
    pub text: String,
}

static TITLE: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"(?is)<title\b[^>]*>(.*?)</title\s*>").ok());

/// Tags whose content is not what a page says.
const CHROME: [&str; 14] = [
    "script", "style", "head", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "svg", "iframe", "button", "dialog",
];

/// The part of `html` between the first `<{tag}` and the last `</{tag}>`, if both are there.
fn region<'a>(html: &'a str, lower: &str, tag: &str) -> Option<&'a str> {
    let start = lower.find(&format!("<{tag}"))?;
    // The opening tag's name ends there (`<main>`, `<main class=…>`, not `<mainframe>`).
    let after = lower[start + 1 + tag.len()..].chars().next()?;
    if !(after == '>' || after.is_whitespace()) {
        return None;
    }
    let close = format!("</{tag}");
    let end = lower.rfind(&close)?;
    let end = end + lower[end..].find('>')? + 1;
    (end > start).then(|| &html[start..end])
}

/// `html` as a reader sees it (see the module docs).
pub fn readable(html: &str) -> Page {
    let title = TITLE
        .as_ref()
        .and_then(|re| re.captures(html))
        .map(|c| crate::web::html_to_text(&c[1]))
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty());
    // Lower-casing ASCII keeps every byte offset, so regions found in `lower` cut `html`.
    let lower = html.to_ascii_lowercase();
    let main = ["main", "article", "body"]
        .iter()
        .find_map(|tag| region(html, &lower, tag))
        .unwrap_or(html);
    let converter = htmd::HtmlToMarkdown::builder()
        .options(htmd::options::Options {
            bullet_list_marker: htmd::options::BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ..Default::default()
        })
        .skip_tags(CHROME.to_vec())
        .build();
    let text = match converter.convert(main) {
        Ok(md) if !md.trim().is_empty() => md.replace("\r\n", "\n").trim().to_owned(),
        // A page htmd cannot read (or that is all chrome) still gets its words.
        _ => crate::web::html_to_text(main),
    };
    Page { title, text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_content_is_kept_and_the_chrome_dropped() {
        let html = r#"<!doctype html><html><head><title>Rust &amp; you</title>
            <style>p{}</style></head><body>
            <header><nav><a href="/">Home</a> | <a href="/blog">Blog</a></nav></header>
            <main class="post"><h1>Ownership</h1><p>Each value has <b>one</b> owner.
            See <a href="https://doc.rust-lang.org/book/">the book</a>.</p>
            <script>track()</script><ul><li>moves</li><li>borrows</li></ul></main>
            <aside>Related posts</aside><footer>© 2026</footer></body></html>"#;
        let page = readable(html);
        assert_eq!(page.title.as_deref(), Some("Rust & you"));
        assert!(page.text.starts_with("# Ownership"), "{}", page.text);
        assert!(
            page.text.contains("Each value has **one** owner."),
            "{}",
            page.text
        );
        assert!(
            page.text
                .contains("[the book](https://doc.rust-lang.org/book/)")
        );
        assert!(page.text.contains("moves") && page.text.contains("borrows"));
        for gone in ["Home", "Blog", "Related posts", "©", "track()", "p{}"] {
            assert!(!page.text.contains(gone), "{gone} in {}", page.text);
        }
    }

    #[test]
    fn a_page_without_landmarks_gives_its_body() {
        let page = readable("<p>plain <i>page</i></p><mainframe>x</mainframe>");
        assert_eq!(page.title, None);
        assert!(page.text.contains("plain *page*"), "{}", page.text);
    }
}
