//! Turning a file on disk into message content: images as `data:` URLs (for models that can
//! see them), UTF-8 text as a file part the context inlines with limits, anything else as a
//! file part that only names it.

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
fn media_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
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

/// The content part for the file at `path` (see the module docs).
pub fn from_path(path: &Path) -> Result<ContentPart, AttachmentError> {
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
    let media = media_type(path);
    if let Some(image) = media.filter(|m| m.starts_with("image/")) {
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        return Ok(ContentPart::Image {
            url: format!("data:{image};base64,{data}"),
            media_type: Some(image.to_owned()),
            detail: None,
        });
    }
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    Ok(ContentPart::File {
        name,
        media_type: media.map(str::to_owned),
        text: String::from_utf8(bytes).ok(),
        size,
    })
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
        let missing = from_path(&dir.join("nope.txt")).unwrap_err().to_string();
        assert!(missing.contains("nope.txt"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
