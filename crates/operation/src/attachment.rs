//! Turning a file (on disk for `rein run --attach`, uploaded for the API's `attachments`) into
//! message content, one rule for both: its type from its first bytes, then its name; images
//! as `data:` URLs (for models that can see them), UTF-8 text as a file part the context
//! inlines with limits, anything else as a file part that only names it.

use base64::Engine;
use rein_core::message::ContentPart;
use std::path::Path;

/// Files larger than this are refused: a request must stay a reasonable size.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// Why a file could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachmentError {
    /// Reading it failed.
    #[error("cannot read attachment {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// It is over [`MAX_ATTACHMENT_BYTES`].
    #[error("attachment {path} is {size} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

/// MIME type by file extension, for the kinds worth telling a model about.
fn by_extension(name: &str) -> Option<&'static str> {
    let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "rs" => "text/x-rust",
        "py" => "text/x-python",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/typescript",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => return None,
    })
}

/// Images models take as images; any other file is text or a note naming it.
const VIEWABLE: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The media type of a file named `name` holding `bytes`: what its first bytes say (a PNG
/// named `notes.txt` is a PNG), else, for UTF-8 text, its name's text type (`text/plain` when
/// the name says none or says something that is not text), else its name's type, else
/// `application/octet-stream`.
pub fn media_type_of(name: &str, bytes: &[u8]) -> String {
    if let Some(kind) = infer::get(bytes) {
        return kind.mime_type().to_owned();
    }
    let named = by_extension(name);
    if std::str::from_utf8(bytes).is_ok() {
        let textual = |m: &&str| m.starts_with("text/") || m.starts_with("application/");
        return named
            .filter(textual)
            .filter(|m| !matches!(*m, "application/pdf" | "application/zip"))
            .unwrap_or("text/plain")
            .to_owned();
    }
    named
        .filter(|m| !m.starts_with("text/"))
        .unwrap_or("application/octet-stream")
        .to_owned()
}

/// The content part for a file named `name` holding `bytes` (see the module docs): an image
/// models can view as a `data:` URL, UTF-8 text as a file part with its text, anything else
/// as a file part naming it.
pub fn from_bytes(name: &str, bytes: &[u8]) -> ContentPart {
    let media = media_type_of(name, bytes);
    if VIEWABLE.contains(&media.as_str()) {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        return ContentPart::Image {
            url: format!("data:{media};base64,{data}"),
            media_type: Some(media),
            detail: None,
        };
    }
    let text = std::str::from_utf8(bytes).ok().map(str::to_owned);
    ContentPart::File {
        name: name.to_owned(),
        // A type nobody could sniff or name says nothing worth telling the model.
        media_type: (media != "application/octet-stream").then_some(media),
        text,
        size: bytes.len() as u64,
    }
}

/// Why uploaded files could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum UploadedError {
    /// The owner has no such file (never theirs, or deleted).
    #[error("no file {0} of yours: upload it with POST /v1/files (a deleted file is gone)")]
    Missing(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rein_store::StoreError),
}

/// The content parts of `owner`'s uploaded files `ids`, in order, by the rules of
/// [`from_bytes`]; the first id that is not theirs refuses them all.
pub async fn from_uploads(
    store: &(dyn rein_store::Files + Sync),
    owner: &str,
    ids: &[String],
) -> Result<Vec<ContentPart>, UploadedError> {
    let mut parts = Vec::with_capacity(ids.len());
    for id in ids {
        let file = store
            .file_content(owner, id)
            .await?
            .ok_or_else(|| UploadedError::Missing(id.clone()))?;
        parts.push(from_bytes(&file.record.name, &file.bytes));
    }
    Ok(parts)
}

/// The content part for the file at `path` (see the module docs).
pub fn from_path(path: &Path) -> Result<ContentPart, AttachmentError> {
    let (name, bytes) = read(path)?;
    Ok(from_bytes(&name, &bytes))
}

/// The name and bytes of the file at `path`, refused over [`MAX_ATTACHMENT_BYTES`] before it
/// is read (what `rein run --attach` sends, here or to a server).
pub fn read(path: &Path) -> Result<(String, Vec<u8>), AttachmentError> {
    let shown = path.display().to_string();
    let read = |source| AttachmentError::Read {
        path: shown.clone(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read)?.len();
    if size > MAX_ATTACHMENT_BYTES {
        return Err(AttachmentError::TooLarge {
            path: shown,
            size,
            limit: MAX_ATTACHMENT_BYTES,
        });
    }
    let bytes = std::fs::read(path).map_err(read)?;
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    Ok((name, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_text_and_binary_files_become_the_right_parts() {
        let dir = std::env::temp_dir().join(format!("rein-attach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let png = dir.join("dot.PNG");
        std::fs::write(&png, [0x89, b'P', b'N', b'G']).unwrap();
        let csv = dir.join("t.csv");
        std::fs::write(&csv, "a,b\n1,2\n").unwrap();
        let bin = dir.join("blob.bin");
        std::fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();

        match from_path(&png).unwrap() {
            ContentPart::Image {
                url, media_type, ..
            } => {
                assert_eq!(url, "data:image/png;base64,iVBORw==");
                assert_eq!(media_type.as_deref(), Some("image/png"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            from_path(&csv).unwrap(),
            ContentPart::File {
                name: "t.csv".into(),
                media_type: Some("text/csv".into()),
                text: Some("a,b\n1,2\n".into()),
                size: 8,
            }
        );
        assert!(matches!(
            from_path(&bin).unwrap(),
            ContentPart::File {
                text: None,
                size: 3,
                ..
            }
        ));
        // Content first: a PNG named as text is an image, text named as a PNG is text.
        assert!(matches!(
            from_bytes("notes.txt", &[0x89, b'P', b'N', b'G', 0x0d, 0x0a]),
            ContentPart::Image { .. }
        ));
        assert_eq!(media_type_of("chart.png", b"not an image"), "text/plain");
        assert_eq!(media_type_of("data.csv", b"a,b\n"), "text/csv");
        assert_eq!(media_type_of("x.bin", b"%PDF-1.7\n"), "application/pdf");
        assert_eq!(
            media_type_of("x.txt", &[0xff, 0xfe, 0x00]),
            "application/octet-stream"
        );
        let missing = from_path(&dir.join("nope.txt")).unwrap_err().to_string();
        assert!(missing.contains("nope.txt"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
