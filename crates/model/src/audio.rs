//! Speech: text spoken by a text-to-speech model and audio written down by a transcription
//! model, through the OpenAI-compatible audio endpoints (`POST /audio/speech`, JSON in and
//! audio out; `POST /audio/transcriptions`, a multipart form in and JSON out) of a provider
//! speaking OpenAI's protocols. The provider's key, base URL, transport and error reading are
//! the chat calls' own ([`crate::Provider`]); the shapes are here.

use crate::error::{ErrorKind, ModelError};
use rein_core::usage::TokenUsage;
use serde_json::{Value, json};

/// Audio formats the speech endpoint writes.
pub const SPEECH_FORMATS: [&str; 6] = ["mp3", "opus", "aac", "flac", "wav", "pcm"];

/// Voices OpenAI's speech models speak with.
pub const VOICES: [&str; 11] = [
    "alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse",
];

/// Text to speak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpeechRequest {
    /// The model (`gpt-4o-mini-tts`, `tts-1`).
    pub model: String,
    /// What to say.
    pub input: String,
    /// The voice ([`VOICES`]).
    pub voice: String,
    /// The audio format ([`SPEECH_FORMATS`]; none: mp3).
    pub format: Option<String>,
    /// How to say it (GPT speech models only).
    pub instructions: Option<String>,
}

/// Spoken audio.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Speech {
    /// Its media type.
    pub media_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Audio to write down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TranscriptionRequest {
    /// The model (`gpt-4o-transcribe`, `whisper-1`).
    pub model: String,
    /// The file's name (its extension tells the provider the format).
    pub file_name: String,
    /// Its media type.
    pub media_type: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The spoken language (ISO-639-1), when known.
    pub language: Option<String>,
}

/// What was said.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transcript {
    /// The text.
    pub text: String,
    /// Tokens, when the provider reports them (GPT transcription models).
    pub usage: Option<TokenUsage>,
}

/// The media type of a speech format.
pub fn format_media_type(format: &str) -> &'static str {
    match format {
        "opus" => "audio/ogg",
        "aac" => "audio/aac",
        "flac" => "audio/flac",
        "wav" => "audio/wav",
        "pcm" => "audio/pcm",
        _ => "audio/mpeg",
    }
}

/// The JSON body of a speech request.
pub fn speech_body(req: &SpeechRequest) -> Value {
    let mut body = json!({
        "model": req.model,
        "input": req.input,
        "voice": req.voice,
        "response_format": req.format.as_deref().unwrap_or("mp3"),
    });
    if let Some(i) = &req.instructions {
        body["instructions"] = json!(i);
    }
    body
}

/// A multipart form: `(content type with its boundary, body)`. The boundary is one that
/// occurs nowhere in the parts.
pub fn multipart(fields: &[(&str, &str)], file: (&str, &str, &str, &[u8])) -> (String, Vec<u8>) {
    let (field, name, media_type, bytes) = file;
    let mut n = 0u64;
    let boundary = loop {
        let b = format!("rein-form-{n:016x}");
        let clash = |hay: &[u8]| hay.windows(b.len()).any(|w| w == b.as_bytes());
        if !clash(bytes) && !fields.iter().any(|(_, v)| clash(v.as_bytes())) {
            break b;
        }
        n += 1;
    };
    // Quotes and line breaks cannot end a header's quoted value.
    let quoted = |s: &str| s.replace(['"', '\r', '\n'], "_");
    let mut body = Vec::new();
    for (k, v) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n{v}\r\n",
                quoted(k)
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {}\r\n\r\n",
            quoted(field),
            quoted(name),
            quoted(media_type)
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The transcript of a transcription answer (`{"text", "usage"?}`).
pub fn transcript(answer: &Value) -> Result<Transcript, ModelError> {
    let text = answer
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ModelError::new(
                ErrorKind::MalformedStream,
                "the transcription response has no text",
            )
        })?
        .to_owned();
    let usage = answer.get("usage").and_then(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        Some(TokenUsage {
            input: n("input_tokens")?,
            output: n("output_tokens").unwrap_or(0),
            total: n("total_tokens").unwrap_or(0),
            ..Default::default()
        })
    });
    Ok(Transcript { text, usage })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_has_its_fields_and_file_between_a_boundary_found_in_neither() {
        let (kind, body) = multipart(
            &[("model", "whisper-1")],
            (
                "file",
                "a\"b.wav",
                "audio/wav",
                b"RIFF--rein-form-0000000000000000 data",
            ),
        );
        assert_eq!(
            kind,
            "multipart/form-data; boundary=rein-form-0000000000000001"
        );
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with("--rein-form-0000000000000001\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"), "{text}");
        assert!(
            text.contains(
                "name=\"file\"; filename=\"a_b.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF--"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("\r\n--rein-form-0000000000000001--\r\n"),
            "{text}"
        );
    }
}
