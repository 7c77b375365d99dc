//! Video generation, which every provider runs as a job: submitted ([`VideoRequest`] becomes
//! the job's name), polled until it is done ([`VideoProgress`]), then each video downloaded.
//! Gemini's Veo models are the provider rein speaks to (`:predictLongRunning`, then the
//! long-running operation, then the file's download address); OpenAI's Videos API shut down on
//! 24 September 2026. The shapes written and read are here; the calls are
//! [`crate::ModelProvider::submit_video`], [`crate::ModelProvider::video_progress`] and
//! [`crate::ModelProvider::download_video`].

use crate::protocol::WireRequest;
use serde_json::{Value, json};

/// What to film.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VideoRequest {
    /// The model (`veo-3.1-generate-preview`).
    pub model: String,
    /// What the video shows (and says: Veo 3 renders sound).
    pub prompt: String,
    /// What it must not show.
    pub negative_prompt: Option<String>,
    /// `16:9` or `9:16`; none: the model's default (16:9).
    pub aspect_ratio: Option<String>,
    /// `720p` or `1080p`; none: the model's default.
    pub resolution: Option<String>,
    /// Length in seconds (Veo 3: 4, 6 or 8); none: the model's default (8).
    pub seconds: Option<u32>,
}

impl VideoRequest {
    /// How long the video will be: the seconds asked for, else Veo's default of 8 (what the
    /// render is priced by).
    pub fn length(&self) -> u32 {
        self.seconds.unwrap_or(8)
    }
}

/// Where a submitted render stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VideoProgress {
    /// Still rendering.
    Rendering,
    /// Done: the addresses its videos are downloaded from, in order.
    Done(Vec<String>),
    /// The provider gave up, or made nothing it would show (its words).
    Failed(String),
}

/// Gemini's `POST /models/{model}:predictLongRunning`.
pub fn gemini_request(req: &VideoRequest) -> WireRequest {
    let mut parameters = serde_json::Map::new();
    if let Some(n) = &req.negative_prompt {
        parameters.insert("negativePrompt".into(), json!(n));
    }
    if let Some(a) = &req.aspect_ratio {
        parameters.insert("aspectRatio".into(), json!(a));
    }
    if let Some(r) = &req.resolution {
        parameters.insert("resolution".into(), json!(r));
    }
    if let Some(s) = req.seconds {
        parameters.insert("durationSeconds".into(), json!(s));
    }
    let mut body = json!({ "instances": [{ "prompt": req.prompt }] });
    if !parameters.is_empty() {
        body["parameters"] = Value::Object(parameters);
    }
    WireRequest {
        path: format!("/models/{}:predictLongRunning", req.model),
        body,
    }
}

/// The job a `:predictLongRunning` answer names (`models/…/operations/…`).
pub fn gemini_job(answer: &Value) -> Option<String> {
    answer["name"]
        .as_str()
        .filter(|n| !n.is_empty() && !n.contains("..") && !n.starts_with('/'))
        .map(str::to_owned)
}

/// Where the long-running operation `answer` stands; `None` for an answer of another shape.
pub fn gemini_progress(answer: &Value) -> Option<VideoProgress> {
    if !answer["done"].as_bool().unwrap_or(false) {
        return answer.is_object().then_some(VideoProgress::Rendering);
    }
    if let Some(error) = answer.get("error") {
        let said = error["message"].as_str().unwrap_or("no reason given");
        return Some(VideoProgress::Failed(said.to_owned()));
    }
    let made = &answer["response"]["generateVideoResponse"];
    let uris: Vec<String> = made["generatedSamples"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["video"]["uri"].as_str().map(str::to_owned))
        .collect();
    if !uris.is_empty() {
        return Some(VideoProgress::Done(uris));
    }
    let filtered: Vec<&str> = made["raiMediaFilteredReasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Some(VideoProgress::Failed(if filtered.is_empty() {
        "the render finished without a video".to_owned()
    } else {
        format!("the video was withheld: {}", filtered.join("; "))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_names_only_what_was_asked() {
        let bare = gemini_request(&VideoRequest {
            model: "veo-3.1-generate-preview".into(),
            prompt: "A paper boat".into(),
            negative_prompt: None,
            aspect_ratio: None,
            resolution: None,
            seconds: None,
        });
        assert_eq!(
            bare.path,
            "/models/veo-3.1-generate-preview:predictLongRunning"
        );
        assert_eq!(
            bare.body,
            json!({"instances": [{"prompt": "A paper boat"}]})
        );
        let full = gemini_request(&VideoRequest {
            model: "veo-3.1-generate-preview".into(),
            prompt: "A paper boat".into(),
            negative_prompt: Some("rain".into()),
            aspect_ratio: Some("9:16".into()),
            resolution: Some("720p".into()),
            seconds: Some(4),
        });
        assert_eq!(
            full.body,
            json!({"instances": [{"prompt": "A paper boat"}], "parameters": {"negativePrompt": "rain", "aspectRatio": "9:16", "resolution": "720p", "durationSeconds": 4}})
        );
    }

    #[test]
    fn progress_is_read_from_each_shape_of_operation() {
        assert_eq!(
            gemini_progress(&json!({"name": "models/v/operations/1"})),
            Some(VideoProgress::Rendering)
        );
        assert_eq!(
            gemini_progress(
                &json!({"done": true, "response": {"generateVideoResponse": {"generatedSamples": [{"video": {"uri": "https://x/files/a:download?alt=media"}}]}}})
            ),
            Some(VideoProgress::Done(vec![
                "https://x/files/a:download?alt=media".into()
            ]))
        );
        assert_eq!(
            gemini_progress(&json!({"done": true, "error": {"code": 3, "message": "bad prompt"}})),
            Some(VideoProgress::Failed("bad prompt".into()))
        );
        assert_eq!(
            gemini_progress(
                &json!({"done": true, "response": {"generateVideoResponse": {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": ["unsafe"]}}})
            ),
            Some(VideoProgress::Failed(
                "the video was withheld: unsafe".into()
            ))
        );
        assert_eq!(gemini_progress(&json!("nonsense")), None);
        assert_eq!(
            gemini_job(&json!({"name": "models/v/operations/1"})).as_deref(),
            Some("models/v/operations/1")
        );
        assert_eq!(gemini_job(&json!({"name": "../../x"})), None);
    }
}
