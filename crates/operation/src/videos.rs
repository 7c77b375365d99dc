//! `video.generate`: a clip rendered by the video model this host names (`video_model` in the
//! configuration: Gemini's Veo, [`rein_model::video`]). A render is a job at the provider that
//! takes minutes, so the call submits it, records the job with its execution
//! ([`rein_tools::CallJob`]) before anything else, polls until it is done and downloads each
//! video as a file of the call (an artifact of the conversation the web app plays). Rendering
//! again costs again, so the call runs at most once; a process that stops while it waits (a
//! restart, a crash) leaves the job recorded, and the re-run step waits for that same job
//! instead of submitting another. What it cost is the catalog's price per second of video.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::Usd;
use rein_core::engine::ports::{PortError, ToolFile, ToolOutput};
use rein_core::state::ModelRef;
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use rein_model::Catalog;
use rein_model::video::{VideoProgress, VideoRequest};
use rein_tools::{Tool, ToolContext};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tool's identifier.
pub const IDENTIFIER: &str = "video";

/// How long a call waits for its render before it gives up waiting (the job is named in the
/// result, so a person can fetch it from the provider).
pub const MAX_WAIT: Duration = Duration::from_secs(20 * 60);

/// How often a render is polled unless the configuration says otherwise (`video_poll_secs`).
pub const DEFAULT_POLL: Duration = Duration::from_secs(10);

/// How many polls in a row may fail (the provider unreachable for a moment) before the call
/// gives up waiting.
const POLL_FAILURES: u32 = 5;

/// The ratios Veo renders.
#[derive(Clone, Copy, Debug, serde::Deserialize, schemars::JsonSchema)]
enum Ratio {
    #[serde(rename = "16:9")]
    Landscape,
    #[serde(rename = "9:16")]
    Portrait,
}

impl Ratio {
    fn as_str(self) -> &'static str {
        match self {
            Ratio::Landscape => "16:9",
            Ratio::Portrait => "9:16",
        }
    }
}

/// The resolutions Veo renders.
#[derive(Clone, Copy, Debug, serde::Deserialize, schemars::JsonSchema)]
enum Resolution {
    #[serde(rename = "720p")]
    Hd,
    #[serde(rename = "1080p")]
    FullHd,
}

impl Resolution {
    fn as_str(self) -> &'static str {
        match self {
            Resolution::Hd => "720p",
            Resolution::FullHd => "1080p",
        }
    }
}

/// The lengths Veo 3 renders, in seconds. The schema says 4 to 8 (Gemini takes an
/// enumeration of strings only); a call asking for 5 or 7 is refused before anything is sent.
const LENGTHS: [u32; 3] = [4, 6, 8];

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GenerateArgs {
    /// What the video shows and what is heard, in detail
    #[schemars(length(min = 1, max = 4000))]
    prompt: String,
    /// What it must not show
    #[serde(default)]
    #[schemars(length(max = 1000))]
    negative_prompt: Option<String>,
    /// Its shape (default 16:9)
    #[serde(default)]
    aspect_ratio: Option<Ratio>,
    /// Its resolution (default 720p)
    #[serde(default)]
    resolution: Option<Resolution>,
    /// Its length in seconds: 4, 6 or 8 (default 8)
    #[serde(default)]
    #[schemars(range(min = 4, max = 8))]
    seconds: Option<u32>,
}

/// `video.generate` with `model`.
pub struct VideoTool {
    /// Where the model's provider comes from.
    pub models: Arc<dyn crate::models::ModelSource>,
    /// Prices the render.
    pub catalog: Arc<Catalog>,
    /// The video model.
    pub model: ModelRef,
    /// How often a render is polled.
    pub poll: Duration,
}

impl VideoTool {
    /// What `seconds` of video cost with this model (nothing when the catalog has no price).
    fn price(&self, seconds: u32) -> Usd {
        self.catalog
            .lookup(&self.model.provider, &self.model.model)
            .and_then(|m| m.media.video(seconds))
            .unwrap_or(Usd::ZERO)
    }

    /// Wait for `job` until it is done, failed or [`MAX_WAIT`] passed; `resumed`: an earlier
    /// run submitted it (so its first poll is now).
    async fn wait(
        &self,
        provider: &dyn rein_model::ModelProvider,
        job: &str,
        resumed: bool,
    ) -> Result<Vec<String>, String> {
        let started = Instant::now();
        let mut failures = 0u32;
        let mut first = true;
        loop {
            if !(first && resumed) {
                tokio::time::sleep(self.poll).await;
            }
            first = false;
            match provider.video_progress(job.to_owned()).await {
                Ok(VideoProgress::Done(addresses)) => return Ok(addresses),
                Ok(VideoProgress::Failed(why)) => {
                    return Err(format!("{} could not render it: {why}", self.model.key()));
                }
                Ok(VideoProgress::Rendering) => failures = 0,
                Err(e) => {
                    failures += 1;
                    tracing::warn!(job, error = %e, failures, "polling a video render failed");
                    if failures >= POLL_FAILURES {
                        return Err(format!(
                            "The render {job} could not be polled ({e}); it may still finish at {}.",
                            self.model.provider
                        ));
                    }
                }
            }
            if started.elapsed() > MAX_WAIT {
                return Err(format!(
                    "The render {job} was still running after {} minutes; it was not waited for further.",
                    MAX_WAIT.as_secs() / 60
                ));
            }
        }
    }
}

impl Tool for VideoTool {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Video".into(),
            description: format!("Render short videos ({}).", self.model.key()),
            system_role: None,
            apis: vec![ToolApi {
                name: "generate".into(),
                description: "Render a short video (with sound) from a description; it takes minutes, costs by the second, and is shown to the person and kept with the conversation.".into(),
                parameters: rein_tools::parameters_of::<GenerateArgs>(),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::AtMostOnce
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let provider = match self.models.provider(&self.model) {
                Ok(p) => p,
                Err(e) => {
                    return Ok(ToolOutput::failed(match &cx.job.started {
                        Some(job) => format!("{e}; the render {job} was not waited for"),
                        None => format!("{e}; nothing was rendered"),
                    }));
                }
            };
            let args: GenerateArgs = match serde_json::from_value(args) {
                Ok(a) => a,
                Err(e) => {
                    return Ok(ToolOutput::failed(format!(
                        "Invalid arguments for `video/generate`: {e}"
                    )));
                }
            };
            if let Some(n) = args.seconds.filter(|n| !LENGTHS.contains(n)) {
                return Ok(ToolOutput::failed(format!(
                    "Invalid arguments for `video/generate`: seconds is 4, 6 or 8, not {n}; nothing was rendered"
                )));
            }
            let request = VideoRequest {
                model: self.model.model.to_string(),
                prompt: args.prompt,
                negative_prompt: args.negative_prompt,
                aspect_ratio: args.aspect_ratio.map(|r| r.as_str().to_owned()),
                resolution: args.resolution.map(|r| r.as_str().to_owned()),
                seconds: args.seconds,
            };
            let seconds = request.length();
            let (job, resumed) = match cx.job.started.clone() {
                Some(job) => (job, true),
                None => match provider.submit_video(request).await {
                    Ok(job) => {
                        // Durable before the wait: a restart waits for this job again.
                        cx.job.record(&job).await?;
                        (job, false)
                    }
                    Err(e) => {
                        return Ok(ToolOutput::failed(format!(
                            "{} could not start the render: {e}",
                            self.model.key()
                        )));
                    }
                },
            };
            // The render is paid for once it was accepted, whatever happens to the wait.
            let cost = self.price(seconds);
            let addresses = match self.wait(provider.as_ref(), &job, resumed).await {
                Ok(a) => a,
                Err(why) => {
                    let mut out = ToolOutput::failed(why);
                    out.cost = cost;
                    return Ok(out);
                }
            };
            let mut files = Vec::with_capacity(addresses.len());
            for (i, address) in addresses.into_iter().enumerate() {
                match provider.download_video(address).await {
                    Ok(bytes) => files.push(ToolFile {
                        name: format!("video-{}.mp4", i + 1),
                        media_type: "video/mp4".into(),
                        bytes,
                    }),
                    Err(e) => {
                        let mut out = ToolOutput::failed(format!(
                            "The render {job} finished but its video could not be downloaded: {e}"
                        ));
                        out.cost = cost;
                        return Ok(out);
                    }
                }
            }
            let mut out = ToolOutput::ok(format!(
                "Rendered {} video{} of {seconds} s with {}.",
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                self.model.key()
            ));
            out.cost = cost;
            out.files = files;
            Ok(out)
        }
        .boxed()
    }
}
