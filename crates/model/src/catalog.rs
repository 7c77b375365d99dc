//! The model catalog (a data file shipped in the crate): windows, capabilities and prices.
//! A model missing from it still works: capabilities are assumed, cost is unknown, and a
//! warning names the missing entry once per model.

use crate::error::{ErrorKind, ModelError};
use crate::request::ChatRequest;
use rein_core::message::ContentPart;
use rein_core::{TokenUsage, Usd};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

const BUILTIN: &str = include_str!("../data/models.json");

/// What a model can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Capabilities {
    /// Function calling.
    pub tools: bool,
    /// Several tool calls per turn.
    pub parallel_tools: bool,
    /// Image input.
    pub vision: bool,
    /// Reasoning / thinking.
    pub reasoning: bool,
    /// Native JSON-schema output.
    pub structured_output: bool,
    /// Embeddings endpoint.
    pub embeddings: bool,
}

impl Capabilities {
    /// What an unknown model is assumed to support.
    pub const ASSUMED: Capabilities = Capabilities {
        tools: true,
        parallel_tools: true,
        vision: true,
        reasoning: false,
        structured_output: true,
        embeddings: false,
    };
}

pub use rein_core::usage::Prices;

/// One catalogued model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ModelInfo {
    /// `provider/model`.
    pub id: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens.
    pub max_output: u64,
    /// Capabilities.
    pub capabilities: Capabilities,
    /// Prices.
    pub prices: Prices,
    /// What a model that makes media costs by what it makes (it reports no tokens).
    #[serde(default, skip_serializing_if = "MediaPrices::is_none")]
    pub media: MediaPrices,
    /// Token estimation: the OpenAI vocabulary closest to the model's tokenizer (`o200k` or
    /// `cl100k`) and a factor for tokenizers that split text finer or coarser. Absent means
    /// `o200k` and 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<TokenizerHint>,
}

/// The catalog's prices for what a media model makes, which no token count says: rein's
/// media tools charge them ([`Prices`] stay what an operation's model calls cost, and what a
/// configuration or a request may set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MediaPrices {
    /// USD per second of video rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<f64>,
    /// USD per million characters spoken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_million_characters: Option<f64>,
}

impl MediaPrices {
    /// Whether no price is set.
    pub fn is_none(&self) -> bool {
        self.per_second.is_none() && self.per_million_characters.is_none()
    }

    /// The cost of `seconds` of video; `None` when the model has no price per second.
    pub fn video(&self, seconds: u32) -> Option<Usd> {
        self.per_second
            .map(|p| Usd::from_dollars(p * f64::from(seconds)))
    }

    /// The cost of speaking `characters` characters; `None` when the model has no price for
    /// them.
    pub fn speech(&self, characters: usize) -> Option<Usd> {
        self.per_million_characters
            .map(|p| Usd::from_dollars(p * characters as f64 / 1e6))
    }
}

/// How to estimate a model's token counts with an OpenAI vocabulary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct TokenizerHint {
    /// `o200k` or `cl100k`.
    pub encoding: String,
    /// Multiplier applied to the count.
    #[serde(default = "one")]
    pub factor: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Deserialize)]
struct File {
    models: Vec<ModelInfo>,
}

/// Models by `provider/model`.
#[derive(Debug, Default)]
pub struct Catalog {
    models: BTreeMap<String, Arc<ModelInfo>>,
    warned: Mutex<BTreeSet<String>>,
}

impl Catalog {
    /// The catalog shipped with rein.
    pub fn builtin() -> Result<Self, ModelError> {
        Self::from_json(BUILTIN)
    }

    /// A catalog from JSON text (`{"models": [...]}`).
    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        let file: File = serde_json::from_str(text).map_err(|e| {
            ModelError::new(ErrorKind::Config, format!("invalid model catalog: {e}"))
        })?;
        let mut c = Self::default();
        for m in file.models {
            c.models.insert(m.id.clone(), Arc::new(m));
        }
        Ok(c)
    }

    /// The same models at no price: a replay's, whose answers come from a cassette and cost
    /// nothing (a model still counts as priced, at zero, so no spend cap refuses it).
    pub fn free(mut self) -> Self {
        for m in self.models.values_mut() {
            Arc::make_mut(m).prices = rein_core::usage::Prices::default();
        }
        self
    }

    /// Add or replace entries (user configuration over the built-in table).
    pub fn extend(&mut self, models: impl IntoIterator<Item = ModelInfo>) {
        for m in models {
            self.models.insert(m.id.clone(), Arc::new(m));
        }
    }

    /// The entry for `provider/model`; `None` (with a warning, once) when it is missing.
    pub fn lookup(&self, provider: &str, model: &str) -> Option<Arc<ModelInfo>> {
        let provider = match crate::registry::canonical(provider) {
            // OpenAI's models behind its other protocol: the same models, the same prices.
            "openai-responses" => "openai",
            other => other,
        };
        let key = format!("{provider}/{model}");
        if let Some(m) = self.models.get(&key) {
            return Some(Arc::clone(m));
        }
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.insert(key.clone()) {
            tracing::warn!(model = %key, "model is not in the catalog: capabilities are assumed and cost is unknown");
        }
        None
    }

    /// Cost of `usage` on `provider/model`; `None` when the model is not catalogued.
    pub fn cost(&self, provider: &str, model: &str, usage: &TokenUsage) -> Option<Usd> {
        self.lookup(provider, model).map(|m| m.prices.cost(usage))
    }

    /// Every entry, by id.
    pub fn models(&self) -> impl Iterator<Item = &Arc<ModelInfo>> {
        self.models.values()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

/// Check `req` against `caps` before anything is sent. With `allow_degrade`, tools are dropped
/// and images replaced by a text note instead of failing. The images of tool results (a plot
/// a call drew) are always replaced for a model that cannot see: the person did not send
/// them, and the result's text names each one.
pub fn check_capabilities(
    req: &mut ChatRequest,
    model_id: &str,
    caps: &Capabilities,
) -> Result<(), ModelError> {
    if !req.tools.is_empty() && !caps.tools {
        if !req.allow_degrade {
            return Err(ModelError::new(
                ErrorKind::Unsupported,
                format!(
                    "{model_id} does not support tool calling, and the request offers {} tool(s)",
                    req.tools.len()
                ),
            ));
        }
        req.tools.clear();
    }
    if caps.vision {
        return Ok(());
    }
    let has_image = |m: &rein_core::message::Message| {
        m.content
            .iter()
            .any(|p| matches!(p, ContentPart::Image { .. }))
    };
    let sent = req
        .messages
        .iter()
        .any(|m| m.role != rein_core::message::Role::Tool && has_image(m));
    if sent && !req.allow_degrade {
        return Err(ModelError::new(
            ErrorKind::Unsupported,
            format!("{model_id} does not accept images, and the conversation contains some"),
        ));
    }
    for m in req.messages.iter_mut() {
        if has_image(m) {
            let tool = m.role == rein_core::message::Role::Tool;
            let msg = Arc::make_mut(m);
            for part in msg.content.iter_mut() {
                if let ContentPart::Image { url, .. } = part {
                    let note = if tool {
                        "an image the call produced".to_owned()
                    } else if url.starts_with("data:") {
                        "an attached image".to_owned()
                    } else {
                        url.clone()
                    };
                    // A result's parts are read as one text: the note starts a line.
                    let line = if tool { "\n" } else { "" };
                    *part = ContentPart::Text {
                        text: format!(
                            "{line}[image omitted: {note}; this model cannot see images]"
                        ),
                    };
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_hints_are_optional_catalog_data() {
        let c = Catalog::from_json(
            r#"{"models": [
                {"id": "x/a", "context_window": 8000, "max_output": 1000,
                 "capabilities": {"tools": true, "parallel_tools": true, "vision": false, "reasoning": false, "structured_output": false, "embeddings": false},
                 "prices": {"input": 1, "output": 2},
                 "tokenizer": {"encoding": "cl100k", "factor": 1.2}},
                {"id": "x/b", "context_window": 8000, "max_output": 1000,
                 "capabilities": {"tools": true, "parallel_tools": true, "vision": false, "reasoning": false, "structured_output": false, "embeddings": false},
                 "prices": {"input": 1, "output": 2},
                 "tokenizer": {"encoding": "o200k"}}
            ]}"#,
        )
        .unwrap();
        let a = c.lookup("x", "a").unwrap().tokenizer.clone().unwrap();
        assert_eq!((a.encoding.as_str(), a.factor), ("cl100k", 1.2));
        assert_eq!(
            c.lookup("x", "b")
                .unwrap()
                .tokenizer
                .as_ref()
                .unwrap()
                .factor,
            1.0
        );
        let builtin = Catalog::builtin().unwrap();
        assert!(
            builtin
                .lookup("openai", "gpt-4o")
                .unwrap()
                .tokenizer
                .is_none()
        );
    }

    #[test]
    fn builtin_catalog_loads_and_prices_cached_input() {
        let c = Catalog::builtin().unwrap();
        assert!(c.len() >= 30);
        let usage = TokenUsage {
            input: 1_000_000,
            output: 1_000_000,
            cached_read: 500_000,
            ..Default::default()
        };
        // gpt-4o-mini: 0.5M fresh × 0.15 + 0.5M cached × 0.075 + 1M out × 0.6
        assert_eq!(
            c.cost("openai", "gpt-4o-mini", &usage),
            Some(Usd::from_dollars(0.075 + 0.0375 + 0.6))
        );
        assert_eq!(c.cost("openai", "gpt-99", &usage), None);
    }
}
