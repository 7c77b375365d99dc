//! `/v1/audio`: OpenAI's audio endpoints in front of the server's own speech models, for the
//! web app's play and microphone buttons and any OpenAI SDK: `POST /v1/audio/speech` speaks a
//! text with `speech_model`, `POST /v1/audio/transcriptions` writes down an uploaded recording
//! with `transcription_model` (both from the server's configuration; a `model` a client names
//! is read and not used: the operator chooses the models and pays for them). Without the model
//! configured the answer is 422 `model_unavailable`; a provider's refusal is a 502.
//! `GET /v1/audio` says which of the two are configured. What they spend belongs to no
//! operation, so the spending caps do not count it; a user whose cap is spent is refused here
//! as an operation would be (429 `spend_cap_reached`).

use crate::AppState;
use crate::api::{Api, Input, Method, OperationDoc, Output};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::Body;
use axum::Json;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use rein_core::state::ModelRef;
use rein_model::audio::{SpeechRequest, TranscriptionRequest};
use rein_operation::speech::Voice;
use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// An audio format (`POST /v1/audio/speech`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AudioFormat {
    /// MP3.
    Mp3,
    /// Opus in Ogg.
    Opus,
    /// AAC.
    Aac,
    /// FLAC.
    Flac,
    /// WAV.
    Wav,
    /// Raw 24 kHz 16-bit PCM.
    Pcm,
}

impl AudioFormat {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Opus => "opus",
            AudioFormat::Aac => "aac",
            AudioFormat::Flac => "flac",
            AudioFormat::Wav => "wav",
            AudioFormat::Pcm => "pcm",
        }
    }
}

/// `POST /v1/audio/speech` body (OpenAI's).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeechBody {
    /// What to say.
    #[schemars(length(min = 1, max = 4096))]
    pub input: String,
    /// The voice (default alloy).
    #[serde(default)]
    pub voice: Option<Voice>,
    /// Read and not used: the server speaks with its `speech_model`.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub model: Option<String>,
    /// The audio format (default mp3).
    #[serde(default)]
    pub response_format: Option<AudioFormat>,
    /// How to say it.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub instructions: Option<String>,
}

/// `POST /v1/audio/transcriptions` answer (OpenAI's `json` format).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptionOut {
    /// What was said.
    pub text: String,
}

/// `GET /v1/audio`: which of the audio endpoints this server answers, so a front end offers
/// its play and microphone buttons only where they work.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AudioOffer {
    /// `POST /v1/audio/speech` speaks (a `speech_model` is configured).
    pub speech: bool,
    /// `POST /v1/audio/transcriptions` writes down (a `transcription_model` is configured).
    pub transcription: bool,
}

/// Spoken audio, as the speech endpoint answers.
pub struct Audio {
    media_type: String,
    bytes: Vec<u8>,
}

impl axum::response::IntoResponse for Audio {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{HeaderValue, header};
        let mut response = self.bytes.into_response();
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&self.media_type) {
            headers.insert(header::CONTENT_TYPE, v);
        }
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }
}

impl Output for Audio {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.success = Some((
            200,
            json!({
                "description": "The spoken audio",
                "content": {"audio/*": {"schema": {"type": "string", "format": "binary"}}}
            }),
        ));
        doc.error(422, "The server has no speech model (`speech_model`)");
        doc.error(429, "A spending cap of yours or the server's is spent");
        doc.error(502, "The model provider refused or could not be reached");
    }
}

/// A recording sent to be written down: multipart parts `file` (required), `model`,
/// `language`, `response_format` (`json`), `prompt`, `temperature`.
pub struct Recording {
    name: String,
    media_type: String,
    bytes: Vec<u8>,
    language: Option<String>,
}

impl FromRequest<AppState> for Recording {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.config.upload_limit;
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ApiErrorCode::PayloadTooLarge,
                format!("a recording may be at most {limit} bytes on this server"),
            )
        };
        let mut form = axum::extract::Multipart::from_request(req, state)
            .await
            .map_err(|r| {
                ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    ApiErrorCode::UnsupportedMediaType,
                    format!(
                        "send the recording as multipart/form-data: {}",
                        r.body_text()
                    ),
                )
            })?;
        let read_error = |e: axum::extract::multipart::MultipartError| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                ApiError::bad_request(e.body_text())
            }
        };
        let (mut file, mut language) = (None, None);
        while let Some(mut field) = form.next_field().await.map_err(read_error)? {
            match field.name() {
                Some("file") if file.is_none() => {
                    let name = field.file_name().unwrap_or("audio").to_owned();
                    let declared = field.content_type().map(str::to_owned);
                    let bytes = crate::routes::files::read_part(
                        &mut field,
                        limit as u64,
                        &read_error,
                        &too_large,
                    )
                    .await?;
                    let sniffed = rein_operation::attachment::media_type_of(&name, &bytes);
                    let media_type =
                        if sniffed.starts_with("audio/") || sniffed.starts_with("video/") {
                            sniffed
                        } else {
                            declared.unwrap_or(sniffed)
                        };
                    file = Some((name, media_type, bytes));
                }
                Some("language") => {
                    let l = field.text().await.map_err(read_error)?;
                    if l.len() != 2 || !l.bytes().all(|b| b.is_ascii_lowercase()) {
                        return Err(ApiError::bad_request(
                            "language is an ISO-639-1 code of two lower-case letters",
                        ));
                    }
                    language = Some(l);
                }
                Some("response_format") => {
                    let f = field.text().await.map_err(read_error)?;
                    if f != "json" {
                        return Err(ApiError::bad_request(
                            "response_format: this server answers `json`",
                        ));
                    }
                }
                Some("model" | "prompt" | "temperature") => {
                    field.text().await.map_err(read_error)?;
                }
                other => {
                    let shown: String = other.unwrap_or_default().chars().take(40).collect();
                    return Err(ApiError::bad_request(format!(
                        "unexpected part {shown:?}: send `file` (and optionally `model`, `language`, `response_format`, `prompt`, `temperature`)"
                    )));
                }
            }
        }
        let (name, media_type, bytes) =
            file.ok_or_else(|| ApiError::bad_request("no `file` part"))?;
        Ok(Recording {
            name,
            media_type,
            bytes,
            language,
        })
    }
}

impl Input for Recording {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.body = Some(json!({
            "required": true,
            "content": {"multipart/form-data": {"schema": {
                "type": "object",
                "additionalProperties": false,
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "model": {"type": "string"},
                    "language": {"type": "string", "pattern": "^[a-z]{2}$"},
                    "response_format": {"type": "string", "enum": ["json"]},
                    "prompt": {"type": "string"},
                    "temperature": {"type": "string"}
                }
            }}}
        }));
        doc.error(400, "No `file` part, another part, a malformed language");
        doc.error(413, "The recording is over the server's upload limit");
        doc.error(415, "The body is not multipart/form-data");
        doc.error(
            422,
            "The server has no transcription model (`transcription_model`)",
        );
        doc.error(429, "A spending cap of yours or the server's is spent");
        doc.error(502, "The model provider refused or could not be reached");
    }
}

fn not_configured(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        ApiErrorCode::ModelUnavailable,
        format!("this server has no {what} (`{what}` in its configuration)"),
    )
}

fn provider_failed(model: &ModelRef, e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        ApiErrorCode::ProviderFailed,
        format!("{}: {e}", model.key()),
    )
}

/// `GET /v1/audio`: what the server's audio endpoints can do.
pub async fn offer(State(app): State<AppState>, Caller(_): Caller) -> Json<AudioOffer> {
    let host = &app.runner.host;
    Json(AudioOffer {
        speech: host.speech_model.is_some(),
        transcription: host.transcription_model.is_some(),
    })
}

/// `POST /v1/audio/speech`: a text spoken.
pub async fn speech(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(body): Body<SpeechBody>,
) -> Result<Audio, ApiError> {
    // What these calls spend is not an operation's, so it is not counted in the caps; a user
    // whose cap is spent may not spend more here either.
    app.config
        .caps
        .admit(&*app.store, &user, chrono::Utc::now())
        .await?;
    let host = &app.runner.host;
    let model = host
        .speech_model
        .clone()
        .ok_or_else(|| not_configured("speech_model"))?;
    let provider = host
        .models_of(Some(&user.id))
        .await?
        .provider(&model)
        .map_err(rein_operation::DriverError::from)?;
    let format = body.response_format.unwrap_or(AudioFormat::Mp3).as_str();
    let voice = body.voice.unwrap_or(Voice::Alloy).as_str();
    let spoken = provider
        .speak(SpeechRequest {
            model: model.model.to_string(),
            input: body.input,
            voice: voice.into(),
            format: Some(format.into()),
            instructions: body.instructions,
        })
        .await
        .map_err(|e| provider_failed(&model, e))?;
    Ok(Audio {
        media_type: spoken.media_type,
        bytes: spoken.bytes,
    })
}

/// `POST /v1/audio/transcriptions`: a recording written down.
pub async fn transcriptions(
    State(app): State<AppState>,
    Caller(user): Caller,
    recording: Recording,
) -> Result<Json<TranscriptionOut>, ApiError> {
    app.config
        .caps
        .admit(&*app.store, &user, chrono::Utc::now())
        .await?;
    let host = &app.runner.host;
    let model = host
        .transcription_model
        .clone()
        .ok_or_else(|| not_configured("transcription_model"))?;
    let provider = host
        .models_of(Some(&user.id))
        .await?
        .provider(&model)
        .map_err(rein_operation::DriverError::from)?;
    let heard = provider
        .transcribe(TranscriptionRequest {
            model: model.model.to_string(),
            file_name: recording.name,
            media_type: recording.media_type,
            bytes: recording.bytes,
            language: recording.language,
        })
        .await
        .map_err(|e| provider_failed(&model, e))?;
    Ok(Json(TranscriptionOut { text: heard.text }))
}

/// The audio routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/audio",
            "Which audio endpoints this server answers (a speech and a transcription model configured)",
            offer,
        )
        .route(
            Method::Post,
            "/v1/audio/speech",
            "Speak a text with the server's speech model (OpenAI's audio/speech)",
            speech,
        )
        .route_with_body_limit(
            Method::Post,
            "/v1/audio/transcriptions",
            "Write down a recording with the server's transcription model (OpenAI's audio/transcriptions)",
            crate::routes::files::MAX_UPLOAD_CAP,
            transcriptions,
        )
}
