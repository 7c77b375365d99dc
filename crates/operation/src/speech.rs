//! `speech`: `say` (text spoken by the configured `speech_model`, kept as an audio artifact of
//! the conversation the person can play) and `transcribe` (an artifact or an upload of the
//! operation's owner written down by the configured `transcription_model`), through the model
//! runtime's OpenAI-compatible audio endpoints ([`rein_model::audio`]). Each API is offered
//! only when its model is configured. A transcription's cost is priced by the catalog from the
//! tokens the provider reports; speech reports none and is priced by the characters spoken
//! (the catalog's `media.per_million_characters`).

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::Usd;
use rein_core::engine::ports::{PortError, ToolFile, ToolOutput};
use rein_core::state::ModelRef;
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use rein_model::Catalog;
use rein_model::audio::{SpeechRequest, TranscriptionRequest};
use rein_store::Store;
use rein_tools::{Tool, ToolContext};
use std::sync::Arc;

/// The tool's identifier.
pub const IDENTIFIER: &str = "speech";

/// A voice of OpenAI's speech models (`speech.say`, `POST /v1/audio/speech`).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Voice {
    /// Alloy.
    Alloy,
    /// Ash.
    Ash,
    /// Ballad.
    Ballad,
    /// Coral.
    Coral,
    /// Echo.
    Echo,
    /// Fable.
    Fable,
    /// Nova.
    Nova,
    /// Onyx.
    Onyx,
    /// Sage.
    Sage,
    /// Shimmer.
    Shimmer,
    /// Verse.
    Verse,
}

impl Voice {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Voice::Alloy => "alloy",
            Voice::Ash => "ash",
            Voice::Ballad => "ballad",
            Voice::Coral => "coral",
            Voice::Echo => "echo",
            Voice::Fable => "fable",
            Voice::Nova => "nova",
            Voice::Onyx => "onyx",
            Voice::Sage => "sage",
            Voice::Shimmer => "shimmer",
            Voice::Verse => "verse",
        }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SayArgs {
    /// What to say
    #[schemars(length(min = 1, max = 4096))]
    text: String,
    /// The voice (default alloy)
    #[serde(default)]
    voice: Option<Voice>,
    /// How to say it (tone, pace, accent)
    #[serde(default)]
    #[schemars(length(max = 1000))]
    instructions: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TranscribeArgs {
    /// The audio: an artifact (`art-…`) or an uploaded file (`file-…`)
    #[schemars(regex(pattern = r"^(art|file)-[0-9a-f]{32}$"))]
    audio: String,
    /// The spoken language (ISO-639-1, e.g. `en`), when known
    #[serde(default)]
    #[schemars(regex(pattern = r"^[a-z]{2}$"))]
    language: Option<String>,
}

/// `speech.say` and `speech.transcribe`.
pub struct SpeechTool {
    /// Where the models' providers come from.
    pub models: Arc<dyn crate::models::ModelSource>,
    /// Where artifacts and uploads are read.
    pub store: Arc<dyn Store>,
    /// Prices transcriptions.
    pub catalog: Arc<Catalog>,
    /// What speaks (none: no `say`).
    pub say: Option<ModelRef>,
    /// What listens (none: no `transcribe`).
    pub hear: Option<ModelRef>,
}

impl SpeechTool {
    async fn say(&self, model: &ModelRef, args: SayArgs) -> ToolOutput {
        let provider = match self.models.provider(model) {
            Ok(p) => p,
            Err(e) => return ToolOutput::failed(format!("{e}; nothing was said")),
        };
        let voice = args.voice.unwrap_or(Voice::Alloy).as_str();
        // Speech reports no tokens: it is priced by the characters spoken.
        let cost = self
            .catalog
            .lookup(&model.provider, &model.model)
            .and_then(|m| m.media.speech(args.text.chars().count()))
            .unwrap_or(Usd::ZERO);
        let spoken = provider
            .speak(SpeechRequest {
                model: model.model.to_string(),
                input: args.text.clone(),
                voice: voice.into(),
                format: Some("mp3".into()),
                instructions: args.instructions,
            })
            .await;
        match spoken {
            Ok(s) => {
                let mut out = ToolOutput::ok(format!(
                    "Said it with {} ({voice}, {} bytes of audio).",
                    model.key(),
                    s.bytes.len()
                ));
                out.cost = cost;
                out.files = vec![ToolFile {
                    name: format!("speech-{}.mp3", chrono::Utc::now().format("%Y%m%d-%H%M%S")),
                    media_type: s.media_type,
                    bytes: s.bytes,
                }];
                out
            }
            Err(e) => ToolOutput::failed(format!("{} could not say it: {e}", model.key())),
        }
    }

    async fn transcribe(
        &self,
        cx: &ToolContext,
        model: &ModelRef,
        args: TranscribeArgs,
    ) -> Result<ToolOutput, PortError> {
        let store_error = |e: rein_store::StoreError| {
            PortError::new(rein_core::failure::Fault::Store, e.to_string())
        };
        let owner = cx.files_owner.as_str();
        let found = if args.audio.starts_with("art-") {
            self.store
                .artifact_content(owner, &args.audio)
                .await
                .map_err(store_error)?
                .map(|a| (a.record.name, a.record.media_type, a.bytes))
        } else {
            self.store
                .file_content(owner, &args.audio)
                .await
                .map_err(store_error)?
                .map(|f| (f.record.name, f.record.media_type, f.bytes))
        };
        let Some((name, media_type, bytes)) = found else {
            return Ok(ToolOutput::failed(format!(
                "There is no {} of this conversation's owner.",
                args.audio
            )));
        };
        if !media_type.starts_with("audio/") && !media_type.starts_with("video/") {
            return Ok(ToolOutput::failed(format!(
                "{} is {media_type}, not audio.",
                args.audio
            )));
        }
        let provider = match self.models.provider(model) {
            Ok(p) => p,
            Err(e) => return Ok(ToolOutput::failed(format!("{e}; nothing was transcribed"))),
        };
        let heard = provider
            .transcribe(TranscriptionRequest {
                model: model.model.to_string(),
                file_name: name,
                media_type,
                bytes,
                language: args.language,
            })
            .await;
        Ok(match heard {
            Ok(t) => {
                let cost = t
                    .usage
                    .as_ref()
                    .and_then(|u| self.catalog.cost(&model.provider, &model.model, u))
                    .unwrap_or(Usd::ZERO);
                let mut out = ToolOutput::ok(t.text);
                out.cost = cost;
                out
            }
            Err(e) => ToolOutput::failed(format!("{} could not transcribe it: {e}", model.key())),
        })
    }
}

impl Tool for SpeechTool {
    fn manifest(&self) -> ToolManifest {
        let mut apis = Vec::new();
        if self.say.is_some() {
            apis.push(ToolApi {
                name: "say".into(),
                description: "Speak a text aloud; the audio is kept with the conversation for the person to play.".into(),
                parameters: rein_tools::parameters_of::<SayArgs>(),
                intervention: None,
                cost: None,
            });
        }
        if self.hear.is_some() {
            apis.push(ToolApi {
                name: "transcribe".into(),
                description: "Write down what is said in an audio artifact or uploaded audio file."
                    .into(),
                parameters: rein_tools::parameters_of::<TranscribeArgs>(),
                intervention: None,
                cost: None,
            });
        }
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Speech".into(),
            description: "Speak text aloud and write down speech.".into(),
            system_role: None,
            apis,
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        // Each call is a paid model call: a re-run step does not make it again.
        Effect::AtMostOnce
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let invalid = |e: serde_json::Error| {
                Ok(ToolOutput::failed(format!(
                    "Invalid arguments for `speech/{api}`: {e}"
                )))
            };
            match (api, &self.say, &self.hear) {
                ("say", Some(model), _) => match serde_json::from_value(args) {
                    Ok(a) => Ok(self.say(model, a).await),
                    Err(e) => invalid(e),
                },
                ("transcribe", _, Some(model)) => match serde_json::from_value(args) {
                    Ok(a) => self.transcribe(cx, model, a).await,
                    Err(e) => invalid(e),
                },
                _ => Ok(ToolOutput::failed(format!(
                    "`speech/{api}` is not available on this host (no model is configured for it)."
                ))),
            }
        }
        .boxed()
    }
}
