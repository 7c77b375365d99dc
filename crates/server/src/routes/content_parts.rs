//! A message's content as OpenAI-style clients send it, made rein's: the text of its `text`
//! parts, and its images and files as content parts by the rules of `rein run --attach`
//! (`rein_operation::attachment`). Images: `image_url` with a `data:` URL (its bytes) or an
//! `https://` URL (the provider fetches it). Files: `file` with the `file_id` of one of the
//! caller's uploads (`POST /v1/files`) or `file_data` (a base64 `data:` URL) with its
//! `filename`. The Responses API's `input_text`/`output_text`, `input_image` (`image_url` or
//! `file_id`) and `input_file` (`file_id`, or `file_data` and `filename`) read the same way.
//! Any other part is refused naming its type.

use crate::error::ApiError;
use base64::Engine as _;
use rein_core::message::ContentPart;
use serde_json::Value;

/// A message's text and its other parts, in order.
#[derive(Debug, Default)]
pub struct Parts {
    /// The text parts joined by newlines (a string content as it is).
    pub text: String,
    /// The images and files.
    pub attached: Vec<ContentPart>,
}

/// The messages before a request's last one, by role: system and developer texts become
/// instructions, user and assistant messages the history (each hanging from the one before,
/// a user's with its images and files).
pub fn earlier<R: AsRef<str>>(
    turns: impl IntoIterator<Item = (R, Parts)>,
) -> (Vec<rein_core::Message>, Vec<String>) {
    let mut instructions = Vec::new();
    let mut history: Vec<rein_core::Message> = Vec::new();
    for (role, parts) in turns {
        let mut msg = match role.as_ref() {
            "system" | "developer" => {
                instructions.push(parts.text);
                continue;
            }
            "assistant" => rein_core::Message::assistant(parts.text),
            _ => {
                let mut said = rein_core::Message::user(parts.text);
                said.content.extend(parts.attached);
                said
            }
        };
        msg.parent_id = history.last().map(|p| p.id);
        history.push(msg);
    }
    (history, instructions)
}

/// A part's refusal as the API answers it when the request's schema was met: what the part
/// lacks beyond its type is unprocessable (422), not malformed.
pub fn unprocessable(e: ApiError) -> ApiError {
    if e.status == axum::http::StatusCode::BAD_REQUEST {
        ApiError::invalid_conversation(e.message)
    } else {
        e
    }
}

/// What a part asks for: a part made here, or an upload to read.
enum Wanted {
    Part(ContentPart),
    Upload(String),
}

/// The parts of `content` (a string, or a list of parts) of `owner`'s message.
pub async fn parts_of(
    store: &(dyn rein_store::Files + Sync),
    owner: &str,
    content: &Value,
) -> Result<Parts, ApiError> {
    let list = match content {
        Value::String(s) => {
            return Ok(Parts {
                text: s.clone(),
                attached: Vec::new(),
            });
        }
        Value::Null => return Ok(Parts::default()),
        Value::Array(list) => list,
        _ => {
            return Err(ApiError::bad_request(
                "a message's content is a string or a list of parts",
            ));
        }
    };
    let mut texts = Vec::new();
    let mut wanted = Vec::new();
    for (i, part) in list.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        let bad = |why: &str| ApiError::bad_request(format!("content part {i} ({kind}): {why}"));
        match kind {
            "text" | "input_text" | "output_text" => texts.push(
                part.get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("no `text`"))?
                    .to_owned(),
            ),
            "image_url" => {
                let image = part.get("image_url").ok_or_else(|| bad("no `image_url`"))?;
                let url = image
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("no `image_url.url`"))?;
                let detail = detail_of(image).map_err(&bad)?;
                wanted.push(Wanted::Part(image_part(url, detail).map_err(&bad)?));
            }
            "file" => {
                let file = part.get("file").ok_or_else(|| bad("no `file`"))?;
                wanted.push(file_part(file).map_err(&bad)?);
            }
            // The Responses API's: the image's URL or an upload's id beside the type.
            "input_image" => {
                let detail = detail_of(part).map_err(&bad)?;
                wanted.push(match upload_of(part).map_err(&bad)? {
                    Some(upload) => upload,
                    None => {
                        let url = part
                            .get("image_url")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("give `image_url` or `file_id`"))?;
                        Wanted::Part(image_part(url, detail).map_err(&bad)?)
                    }
                });
            }
            "input_file" => wanted.push(file_part(part).map_err(&bad)?),
            _ => {
                return Err(bad(
                    "rein reads `text`, `image_url` and `file` parts of a message (the Responses API's `input_text`, `input_image` and `input_file`)",
                ));
            }
        }
    }
    let mut attached = Vec::with_capacity(wanted.len());
    for w in wanted {
        match w {
            Wanted::Part(p) => attached.push(p),
            Wanted::Upload(id) => attached.extend(
                rein_operation::attachment::from_uploads(store, owner, std::slice::from_ref(&id))
                    .await?,
            ),
        }
    }
    Ok(Parts {
        text: texts.join("\n"),
        attached,
    })
}

/// The `detail` of an image part (none, `auto`, `low` or `high`).
fn detail_of(image: &Value) -> Result<Option<&str>, &'static str> {
    match image.get("detail").and_then(Value::as_str) {
        None => Ok(None),
        Some(d @ ("auto" | "low" | "high")) => Ok(Some(d)),
        Some(_) => Err("`detail` is auto, low or high"),
    }
}

/// The upload a part's `file_id` names, if it names one.
fn upload_of(part: &Value) -> Result<Option<Wanted>, &'static str> {
    match part.get("file_id").and_then(Value::as_str) {
        None => Ok(None),
        Some(id) if rein_store::valid_file_id(id) => Ok(Some(Wanted::Upload(id.to_owned()))),
        Some(_) => Err("`file_id` is `file-` and 32 hex digits"),
    }
}

/// A file part's content: the upload its `file_id` names, or its `file_data` (a base64
/// `data:` URL) named `filename`.
fn file_part(file: &Value) -> Result<Wanted, &'static str> {
    if let Some(upload) = upload_of(file)? {
        return Ok(upload);
    }
    let data = file
        .get("file_data")
        .and_then(Value::as_str)
        .ok_or("give `file_id` or `file_data`")?;
    let name = file
        .get("filename")
        .and_then(Value::as_str)
        .unwrap_or("attachment");
    let (_, bytes) = data_url(data)?;
    Ok(Wanted::Part(rein_operation::attachment::from_bytes(
        name, &bytes,
    )))
}

/// An image part for `url`: a `data:` URL is checked to hold an image models view (its type
/// sniffed from its bytes), an `https://` one is passed on.
fn image_part(url: &str, detail: Option<&str>) -> Result<ContentPart, &'static str> {
    let media_type = if url.starts_with("data:") {
        let (_, bytes) = data_url(url)?;
        let sniffed = rein_operation::attachment::media_type_of("image", &bytes);
        if !sniffed.starts_with("image/") {
            return Err("its data is not an image");
        }
        Some(sniffed)
    } else if url.starts_with("https://") || url.starts_with("http://") {
        None
    } else {
        return Err("an image URL is a data: URL or an http(s) URL");
    };
    Ok(ContentPart::Image {
        url: url.to_owned(),
        media_type,
        detail: detail.map(str::to_owned),
    })
}

/// The media type and bytes of a base64 `data:` URL.
fn data_url(url: &str) -> Result<(String, Vec<u8>), &'static str> {
    let rest = url.strip_prefix("data:").ok_or("not a data: URL")?;
    let (head, data) = rest
        .split_once(',')
        .ok_or("a data: URL has a `,` before its data")?;
    let media = head
        .strip_suffix(";base64")
        .ok_or("only base64 data: URLs are read")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|_| "its data is not base64")?;
    Ok((media.to_owned(), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_are_read_and_images_sniffed() {
        let png = "data:image/png;base64,iVBORw0KGgo=";
        assert!(matches!(
            image_part(png, Some("low")),
            Ok(ContentPart::Image { media_type: Some(m), detail: Some(d), .. }) if m == "image/png" && d == "low"
        ));
        assert_eq!(
            image_part("data:image/png;base64,aGVsbG8=", None).unwrap_err(),
            "its data is not an image"
        );
        assert!(image_part("ftp://x/y.png", None).is_err());
        assert!(data_url("data:text/plain,hello").is_err());
        assert_eq!(
            data_url("data:text/plain;base64,aGVsbG8=").unwrap(),
            ("text/plain".to_owned(), b"hello".to_vec())
        );
    }
}
