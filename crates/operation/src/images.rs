//! `image.generate` and `image.edit`: a picture drawn, or one of the conversation's changed,
//! by the image model this host names (`image_model` in the configuration: OpenAI's GPT Image
//! or DALL·E through the Images API, Gemini's image output), through the model runtime's
//! providers and registry like any model call. Each image
//! comes back as a file of the call (kept as an artifact of the conversation, shown by the web
//! app); what it cost is priced by the catalog from the usage the provider reports and counted
//! in the operation's spending. Drawing again costs again, so a call runs at most once.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::Usd;
use rein_core::engine::ports::{PortError, ToolFile, ToolOutput};
use rein_core::state::ModelRef;
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use rein_model::images::{GeneratedImages, SourceImage};
use rein_model::{Catalog, ImageRequest};
use rein_tools::{Tool, ToolContext};
use std::sync::Arc;

/// The tool's identifier.
pub const IDENTIFIER: &str = "image";

/// Sizes the Images API takes (GPT Image: `auto`, square, landscape, portrait; DALL·E 3 and
/// 2: theirs); Gemini takes the ratio of one.
#[derive(Clone, Copy, Debug, serde::Deserialize, schemars::JsonSchema)]
enum Size {
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "1024x1024")]
    Square,
    #[serde(rename = "1536x1024")]
    Landscape,
    #[serde(rename = "1024x1536")]
    Portrait,
    #[serde(rename = "1792x1024")]
    Wide,
    #[serde(rename = "1024x1792")]
    Tall,
    #[serde(rename = "512x512")]
    Small,
    #[serde(rename = "256x256")]
    Tiny,
}

impl Size {
    fn as_str(self) -> &'static str {
        match self {
            Size::Auto => "auto",
            Size::Square => "1024x1024",
            Size::Landscape => "1536x1024",
            Size::Portrait => "1024x1536",
            Size::Wide => "1792x1024",
            Size::Tall => "1024x1792",
            Size::Small => "512x512",
            Size::Tiny => "256x256",
        }
    }
}

/// Quality levels: GPT Image's (`low`, `medium`, `high`, `auto`) and DALL·E 3's (`standard`,
/// `hd`).
#[derive(Clone, Copy, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Quality {
    Auto,
    Low,
    Medium,
    High,
    Standard,
    Hd,
}

impl Quality {
    fn as_str(self) -> &'static str {
        match self {
            Quality::Auto => "auto",
            Quality::Low => "low",
            Quality::Medium => "medium",
            Quality::High => "high",
            Quality::Standard => "standard",
            Quality::Hd => "hd",
        }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GenerateArgs {
    /// What the image shows, in detail
    #[schemars(length(min = 1, max = 4000))]
    prompt: String,
    /// Its size (default: the model's)
    #[serde(default)]
    size: Option<Size>,
    /// Its quality (default: the model's)
    #[serde(default)]
    quality: Option<Quality>,
    /// How many images (1 to 4, default 1)
    #[serde(default)]
    #[schemars(range(min = 1, max = 4))]
    n: Option<u32>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// The picture to change: an artifact (`art-…`) or an uploaded file (`file-…`)
    #[schemars(regex(pattern = r"^(art|file)-[0-9a-f]{32}$"))]
    image: String,
    /// What to change, in detail
    #[schemars(length(min = 1, max = 4000))]
    prompt: String,
    /// The result's size (default: the model's)
    #[serde(default)]
    size: Option<Size>,
    /// Its quality (default: the model's)
    #[serde(default)]
    quality: Option<Quality>,
}

/// `image.generate` and `image.edit` with `model`.
pub struct ImageTool {
    /// Where the model's provider comes from.
    pub models: Arc<dyn crate::models::ModelSource>,
    /// Where the pictures to edit are read (the caller's artifacts and uploads).
    pub store: Arc<dyn rein_store::Store>,
    /// Prices the call.
    pub catalog: Arc<Catalog>,
    /// The image model.
    pub model: ModelRef,
}

impl ImageTool {
    /// The picture `id` of `owner` (an artifact or an upload), if it is theirs and an image.
    async fn source(
        &self,
        owner: &str,
        id: &str,
    ) -> Result<Result<SourceImage, String>, PortError> {
        let store_error = |e: rein_store::StoreError| {
            PortError::new(rein_core::failure::Fault::Store, e.to_string())
        };
        let found = if id.starts_with("art-") {
            self.store
                .artifact_content(owner, id)
                .await
                .map_err(store_error)?
                .map(|a| (a.record.name, a.record.media_type, a.bytes))
        } else {
            self.store
                .file_content(owner, id)
                .await
                .map_err(store_error)?
                .map(|f| (f.record.name, f.record.media_type, f.bytes))
        };
        Ok(match found {
            None => Err(format!("There is no {id} of this conversation's owner.")),
            Some((_, media_type, _)) if !media_type.starts_with("image/") => {
                Err(format!("{id} is {media_type}, not an image."))
            }
            Some((name, media_type, bytes)) => Ok(SourceImage {
                name,
                media_type,
                bytes,
            }),
        })
    }

    /// The answer to a call that drew `drawn` (`verb`: what was done): the pictures as the
    /// call's files, the cost from the catalog.
    fn drawn(&self, verb: &str, drawn: GeneratedImages) -> ToolOutput {
        let cost = drawn
            .usage
            .as_ref()
            .and_then(|u| {
                self.catalog
                    .cost(&self.model.provider, &self.model.model, u)
            })
            .unwrap_or(Usd::ZERO);
        let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
        let files: Vec<ToolFile> = drawn
            .images
            .into_iter()
            .enumerate()
            .map(|(i, img)| {
                let ext = match img.media_type.as_str() {
                    "image/jpeg" => "jpg",
                    "image/webp" => "webp",
                    _ => "png",
                };
                ToolFile {
                    name: format!("image-{stamp}-{}.{ext}", i + 1),
                    media_type: img.media_type,
                    bytes: img.bytes,
                }
            })
            .collect();
        let mut text = format!(
            "{verb} {} image{} with {}.",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            self.model.key()
        );
        if let Some(said) = drawn.text {
            text.push_str(&format!("\nThe model said: {said}"));
        }
        let mut out = ToolOutput::ok(text);
        out.cost = cost;
        out.files = files;
        out
    }
}

impl Tool for ImageTool {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Image".into(),
            description: format!("Draw and edit images ({}).", self.model.key()),
            system_role: None,
            apis: vec![
                ToolApi {
                    name: "generate".into(),
                    description: "Draw images from a description; they are shown to the person and kept with the conversation.".into(),
                    parameters: rein_tools::parameters_of::<GenerateArgs>(),
                    intervention: None,
                    cost: None,
                },
                ToolApi {
                    name: "edit".into(),
                    description: "Change a picture (an artifact or an uploaded image) as described; the result is kept beside it.".into(),
                    parameters: rein_tools::parameters_of::<EditArgs>(),
                    intervention: None,
                    cost: None,
                },
            ],
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::AtMostOnce
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let provider = match self.models.provider(&self.model) {
                Ok(p) => p,
                Err(e) => return Ok(ToolOutput::failed(format!("{e}; nothing was drawn"))),
            };
            let invalid = |e: serde_json::Error| {
                Ok(ToolOutput::failed(format!(
                    "Invalid arguments for `image/{api}`: {e}"
                )))
            };
            if api == "edit" {
                let args: EditArgs = match serde_json::from_value(args) {
                    Ok(a) => a,
                    Err(e) => return invalid(e),
                };
                let source = match self.source(&cx.files_owner, &args.image).await? {
                    Ok(s) => s,
                    Err(why) => return Ok(ToolOutput::failed(why)),
                };
                let request = ImageRequest {
                    model: self.model.model.to_string(),
                    prompt: args.prompt,
                    size: args.size.map(|s| s.as_str().to_owned()),
                    quality: args.quality.map(|q| q.as_str().to_owned()),
                    n: 1,
                };
                return Ok(match provider.edit_images(request, source).await {
                    Ok(d) => self.drawn("Edited into", d),
                    Err(e) => {
                        ToolOutput::failed(format!("{} could not edit it: {e}", self.model.key()))
                    }
                });
            }
            let args: GenerateArgs = match serde_json::from_value(args) {
                Ok(a) => a,
                Err(e) => return invalid(e),
            };
            let request = ImageRequest {
                model: self.model.model.to_string(),
                prompt: args.prompt,
                size: args.size.map(|s| s.as_str().to_owned()),
                quality: args.quality.map(|q| q.as_str().to_owned()),
                n: args.n.unwrap_or(1).clamp(1, 4),
            };
            Ok(match provider.generate_images(request).await {
                Ok(d) => self.drawn("Drew", d),
                Err(e) => {
                    ToolOutput::failed(format!("{} could not draw it: {e}", self.model.key()))
                }
            })
        }
        .boxed()
    }
}
