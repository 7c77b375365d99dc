//! When to compress: token estimation and the compression threshold.

use crate::message::{ContentPart, Message, MessageKind};
use crate::tool::ToolManifest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Estimates tokens. rein-context provides a tiktoken-backed estimator; the heuristic here keeps
/// the core dependency-free.
pub trait TokenEstimator: Send + Sync {
    /// Tokens of the messages as a model would see them.
    fn messages(&self, messages: &[Arc<Message>]) -> u64;
    /// Tokens of the tool definitions offered with them.
    fn tools(&self, manifests: &BTreeMap<String, Arc<ToolManifest>>) -> u64;
}

/// About four bytes per token plus per-message overhead; images count a flat 1,000 tokens.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicEstimator;

fn bytes_to_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

impl TokenEstimator for HeuristicEstimator {
    fn messages(&self, messages: &[Arc<Message>]) -> u64 {
        messages
            .iter()
            .map(|m| {
                let content: u64 = m
                    .content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => bytes_to_tokens(text.len()),
                        ContentPart::Image { .. } => 1_000,
                        ContentPart::File { name, text, .. } => {
                            bytes_to_tokens(name.len() + text.as_ref().map_or(0, String::len)) + 16
                        }
                    })
                    .sum();
                let calls: u64 = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        bytes_to_tokens(c.identifier.len() + c.api.len() + c.arguments.len()) + 4
                    })
                    .sum();
                let reasoning = m
                    .reasoning
                    .as_ref()
                    .map_or(0, |r| bytes_to_tokens(r.text.len()));
                4 + content + calls + reasoning
            })
            .sum()
    }

    fn tools(&self, manifests: &BTreeMap<String, Arc<ToolManifest>>) -> u64 {
        manifests
            .values()
            .flat_map(|m| &m.apis)
            .map(|a| {
                bytes_to_tokens(a.name.len() + a.description.len() + json_len(&a.parameters)) + 8
            })
            .sum()
    }
}

/// Approximate serialized length of a JSON value, without serializing it.
fn json_len(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    match v {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|i| json_len(i) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_len(v))
                .sum::<usize>()
        }
    }
}

/// When the agent compresses context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionConfig {
    /// Compression on/off.
    pub enabled: bool,
    /// The model's context window.
    pub window_tokens: u64,
    /// The model's maximum output; headroom is kept for it.
    pub max_output_tokens: Option<u64>,
    /// Explicit threshold as a fraction of the window (overrides the headroom rule).
    pub threshold_ratio: Option<f64>,
    /// Once a summary exists, the threshold is at least this fraction (hysteresis).
    pub recompression_ratio: f64,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            window_tokens: 128_000,
            max_output_tokens: None,
            threshold_ratio: None,
            recompression_ratio: 0.65,
        }
    }
}

impl CompressionConfig {
    /// Token count above which the context is compressed.
    pub fn threshold(&self, has_summary: bool) -> u64 {
        let w = self.window_tokens as f64;
        let base = match self.threshold_ratio {
            Some(r) => (w * r.clamp(0.0, 1.0)).floor(),
            None => {
                let out = self.max_output_tokens.unwrap_or(20_000).min(20_000) as f64;
                (w - out - 13_000.0).max((w * 0.5).floor())
            }
        };
        let t = if has_summary {
            base.max((w * self.recompression_ratio).floor())
        } else {
            base
        };
        t as u64
    }
}

/// The text of every compression summary in the messages, joined by blank lines.
pub fn existing_summary(messages: &[Arc<Message>]) -> Option<String> {
    let parts: Vec<String> = messages
        .iter()
        .filter(|m| m.kind == MessageKind::CompressionSummary)
        .map(|m| m.text_content())
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_uses_headroom_floor_and_hysteresis() {
        let c = CompressionConfig::default();
        assert_eq!(c.threshold(false), 128_000 - 20_000 - 13_000);
        let small = CompressionConfig {
            window_tokens: 32_000,
            ..Default::default()
        };
        assert_eq!(small.threshold(false), 16_000, "floor at half the window");
        assert_eq!(small.threshold(true), 20_800, "0.65 once a summary exists");
        let explicit = CompressionConfig {
            threshold_ratio: Some(0.8),
            ..Default::default()
        };
        assert_eq!(explicit.threshold(false), 102_400);
    }
}
