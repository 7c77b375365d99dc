//! Image generation: one [`ImageRequest`] sent as each protocol's image endpoint takes it
//! (OpenAI's Images API, `POST /images/generations`; Gemini's image output, `generateContent`
//! asking for the `IMAGE` modality), its answer read into [`GeneratedImages`] with the usage the
//! provider reports (priced by the catalog like any call). Which protocol does what is in each
//! protocol's [`crate::protocol::wire::Wire`] answer; the shapes both read and write are here.

use crate::protocol::WireRequest;
use base64::Engine as _;
use rein_core::usage::TokenUsage;
use serde_json::{Value, json};

/// What to draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRequest {
    /// The model.
    pub model: String,
    /// What the image shows.
    pub prompt: String,
    /// `WIDTHxHEIGHT` (OpenAI) or `auto`; none: the provider's default.
    pub size: Option<String>,
    /// `low`, `medium`, `high`, `auto` (GPT Image) or `standard`, `hd` (DALL·E 3); none: the
    /// provider's default.
    pub quality: Option<String>,
    /// How many images.
    pub n: u32,
}

/// One image a provider made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedImage {
    /// Its media type.
    pub media_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// What an image call gave back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GeneratedImages {
    /// The images.
    pub images: Vec<GeneratedImage>,
    /// Text the model said with them (Gemini), or the prompt as the provider rewrote it.
    pub text: Option<String>,
    /// Tokens, when the provider reports them.
    pub usage: Option<TokenUsage>,
}

fn decode(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// OpenAI's `POST /images/generations`. GPT Image models answer base64 always and refuse
/// `response_format`; DALL·E answers URLs unless asked for `b64_json`.
pub fn openai_request(req: &ImageRequest) -> WireRequest {
    let mut body = json!({ "model": req.model, "prompt": req.prompt, "n": req.n });
    if let Some(size) = &req.size {
        body["size"] = json!(size);
    }
    if let Some(quality) = &req.quality {
        body["quality"] = json!(quality);
    }
    if req.model.starts_with("dall-e") {
        body["response_format"] = json!("b64_json");
    }
    WireRequest {
        path: "/images/generations".into(),
        body,
    }
}

/// The images of an OpenAI Images answer (`data[].b64_json`; `output_format` names their type,
/// PNG when absent), with its `usage`.
pub fn openai_images(answer: &Value) -> Option<GeneratedImages> {
    let media_type = match answer.get("output_format").and_then(Value::as_str) {
        Some("jpeg") => "image/jpeg",
        Some("webp") => "image/webp",
        _ => "image/png",
    };
    let data = answer.get("data")?.as_array()?;
    let images = data
        .iter()
        .map(|d| {
            Some(GeneratedImage {
                media_type: media_type.to_owned(),
                bytes: decode(d.get("b64_json")?.as_str()?)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let text = data
        .iter()
        .find_map(|d| d.get("revised_prompt").and_then(Value::as_str))
        .map(str::to_owned);
    let usage = answer.get("usage").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        TokenUsage {
            input: n("input_tokens"),
            output: n("output_tokens"),
            total: n("total_tokens"),
            ..Default::default()
        }
    });
    Some(GeneratedImages {
        images,
        text,
        usage,
    })
}

/// A picture to change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceImage {
    /// Its name (its extension tells OpenAI the format).
    pub name: String,
    /// Its media type.
    pub media_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The multipart fields of OpenAI's `POST /images/edits` for `req` (the picture is the form's
/// `image` part).
pub fn openai_edit_fields(req: &ImageRequest) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        ("model", req.model.clone()),
        ("prompt", req.prompt.clone()),
        ("n", req.n.to_string()),
    ];
    if let Some(size) = &req.size {
        fields.push(("size", size.clone()));
    }
    if let Some(quality) = &req.quality {
        fields.push(("quality", quality.clone()));
    }
    if req.model.starts_with("dall-e") {
        fields.push(("response_format", "b64_json".into()));
    }
    fields
}

/// Gemini's `generateContent` changing `source` as `req.prompt` says (the picture first, as
/// inline data, then the words).
pub fn gemini_edit_request(req: &ImageRequest, source: &SourceImage) -> WireRequest {
    let mut wire = gemini_request(req);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&source.bytes);
    wire.body["contents"][0]["parts"] = json!([
        {"inlineData": {"mimeType": source.media_type, "data": b64}},
        {"text": req.prompt},
    ]);
    wire
}

/// Gemini's `generateContent` asking for text and images (one candidate; `n` is not a
/// Gemini parameter, so one image is asked for). A size becomes its aspect ratio.
pub fn gemini_request(req: &ImageRequest) -> WireRequest {
    let mut config = json!({ "responseModalities": ["TEXT", "IMAGE"] });
    if let Some(ratio) = req.size.as_deref().and_then(aspect_ratio) {
        config["imageConfig"] = json!({ "aspectRatio": ratio });
    }
    WireRequest {
        path: format!("/models/{}:generateContent", req.model),
        body: json!({
            "contents": [{"role": "user", "parts": [{"text": req.prompt}]}],
            "generationConfig": config,
        }),
    }
}

/// `WIDTHxHEIGHT` as the aspect ratio Gemini takes, when it is one of them.
fn aspect_ratio(size: &str) -> Option<&'static str> {
    let (w, h) = size.split_once('x')?;
    let (w, h): (u32, u32) = (w.parse().ok()?, h.parse().ok()?);
    const RATIOS: [(&str, u32, u32); 10] = [
        ("1:1", 1, 1),
        ("2:3", 2, 3),
        ("3:2", 3, 2),
        ("3:4", 3, 4),
        ("4:3", 4, 3),
        ("4:5", 4, 5),
        ("5:4", 5, 4),
        ("9:16", 9, 16),
        ("16:9", 16, 9),
        ("21:9", 21, 9),
    ];
    RATIOS
        .iter()
        .find(|(_, a, b)| w * b == h * a)
        .map(|(r, _, _)| *r)
}

/// The images (`inlineData`) and text of a Gemini answer, with its `usageMetadata`.
pub fn gemini_images(answer: &Value) -> Option<GeneratedImages> {
    let parts = answer
        .get("candidates")?
        .get(0)?
        .get("content")?
        .get("parts")?
        .as_array()?;
    let mut out = GeneratedImages::default();
    let mut text = String::new();
    for p in parts {
        if let Some(inline) = p.get("inlineData") {
            out.images.push(GeneratedImage {
                media_type: inline
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("image/png")
                    .to_owned(),
                bytes: decode(inline.get("data")?.as_str()?)?,
            });
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
    }
    out.text = (!text.trim().is_empty()).then(|| text.trim().to_owned());
    out.usage = answer.get("usageMetadata").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        TokenUsage {
            input: n("promptTokenCount"),
            output: n("candidatesTokenCount"),
            total: n("totalTokenCount"),
            ..Default::default()
        }
    });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_become_gemini_aspect_ratios_when_they_are_one() {
        assert_eq!(aspect_ratio("1024x1024"), Some("1:1"));
        assert_eq!(aspect_ratio("1536x1024"), Some("3:2"));
        assert_eq!(aspect_ratio("1024x1536"), Some("2:3"));
        assert_eq!(aspect_ratio("1000x333"), None);
        assert_eq!(aspect_ratio("auto"), None);
    }

    #[test]
    fn gpt_image_is_not_asked_for_a_response_format_and_dall_e_is() {
        let mut req = ImageRequest {
            model: "gpt-image-1".into(),
            prompt: "a cat".into(),
            size: None,
            quality: Some("low".into()),
            n: 1,
        };
        let body = openai_request(&req).body;
        assert!(body.get("response_format").is_none(), "{body}");
        assert!(body.get("size").is_none(), "{body}");
        req.model = "dall-e-3".into();
        assert_eq!(openai_request(&req).body["response_format"], "b64_json");
    }
}
