//! Token estimation with OpenAI's BPE vocabularies (tiktoken-rs). Other providers tokenize
//! differently; a per-provider factor (from the catalog) scales the count. Per-message and
//! per-tool overheads follow OpenAI's published chat accounting (a few tokens per message).
//!
//! The brain measures the whole conversation and every offered tool before each step (the
//! compression threshold); BPE-encoding all of it again each time made token counting the
//! largest CPU cost of a durable step. Messages and manifests are immutable behind their
//! `Arc`s, so an estimator remembers each one's count by its allocation, holding the `Arc`
//! so the address cannot be reused while remembered.

use rein_core::agent::{HeuristicEstimator, TokenEstimator};
use rein_core::message::{ContentPart, Message};
use rein_core::tool::ToolManifest;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use tiktoken_rs::CoreBPE;

/// A BPE vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o and later.
    O200k,
    /// GPT-4 and GPT-3.5.
    Cl100k,
}

/// Tokens an image is counted as (a high-detail 512×512 tile set, OpenAI's accounting).
const IMAGE_TOKENS: u64 = 765;
/// The `<file name=… type=…>` block around an inlined file.
const FILE_WRAPPER: u64 = 16;
/// Chat framing per message (role, separators).
const PER_MESSAGE: u64 = 4;
/// Framing per tool definition.
const PER_TOOL: u64 = 8;

fn vocabulary(encoding: Encoding) -> Option<&'static CoreBPE> {
    // Building a vocabulary parses ~200k ranks (tens of milliseconds): once per process.
    static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    match encoding {
        Encoding::O200k => O200K.get_or_init(|| tiktoken_rs::o200k_base().ok()),
        Encoding::Cl100k => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().ok()),
    }
    .as_ref()
}

/// Past this many remembered counts an estimator forgets them all (a long run's counts are
/// recomputed once rather than kept forever).
const MEMO_LIMIT: usize = 4096;

/// Past this many remembered text counts they are all forgotten.
const CONTENT_MEMO_LIMIT: usize = 16_384;

/// Unscaled counts by the address of the `Arc` they were counted from (kept alive here).
struct Memo<T> {
    entries: Mutex<HashMap<usize, (Arc<T>, u64)>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Memo<T> {
    /// The remembered count of `item`, if any.
    fn get(&self, item: &Arc<T>) -> Option<u64> {
        let key = Arc::as_ptr(item) as usize;
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .map(|(_, n)| *n)
    }

    fn count(&self, item: &Arc<T>, measure: impl FnOnce(&T) -> u64) -> u64 {
        let key = Arc::as_ptr(item) as usize;
        if let Some((_, n)) = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return *n;
        }
        let n = measure(item);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= MEMO_LIMIT {
            entries.clear();
        }
        entries.insert(key, (Arc::clone(item), n));
        n
    }
}

/// Counts of texts (unscaled) by vocabulary and a hash of their content, shared by every
/// estimator of the process: the same tool schemas and system blocks recur in every run, and
/// a server makes a driver (and so an estimator) per run. Numbers only, so keeping them costs
/// little.
static TEXTS: std::sync::LazyLock<Mutex<HashMap<(Encoding, u64), u64>>> =
    std::sync::LazyLock::new(Mutex::default);

/// Counts tokens with a tiktoken vocabulary, scaled by a provider factor. Clones share what
/// they remember.
#[derive(Clone)]
pub struct TiktokenEstimator {
    encoding: Encoding,
    factor: f64,
    messages: Arc<Memo<Message>>,
    tools: Arc<Memo<ToolManifest>>,
}

impl std::fmt::Debug for TiktokenEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenEstimator")
            .field("encoding", &self.encoding)
            .field("factor", &self.factor)
            .finish_non_exhaustive()
    }
}

impl Default for TiktokenEstimator {
    fn default() -> Self {
        Self::new(Encoding::O200k, 1.0)
    }
}

impl TiktokenEstimator {
    /// An estimator over `encoding`, multiplying counts by `factor` (1.0 for OpenAI models;
    /// above 1 for providers whose tokenizers split text finer).
    pub fn new(encoding: Encoding, factor: f64) -> Self {
        Self {
            encoding,
            factor: if factor.is_finite() && factor > 0.0 {
                factor
            } else {
                1.0
            },
            messages: Arc::default(),
            tools: Arc::default(),
        }
    }

    /// Tokens of one text, unscaled.
    pub fn text(&self, text: &str) -> u64 {
        match vocabulary(self.encoding) {
            Some(bpe) => bpe.encode_ordinary(text).len() as u64,
            // The vocabulary ships inside tiktoken-rs; should it ever fail to load, fall back to
            // bytes/4 rather than refusing to estimate.
            None => text.len().div_ceil(4) as u64,
        }
    }

    /// Tokens of one text, scaled as every other count here (what a budget in tokens is
    /// measured with).
    pub fn text_tokens(&self, text: &str) -> u64 {
        self.scale(self.text(text))
    }

    /// Tokens of one message as [`TokenEstimator::messages`] counts it (scaled). A count
    /// remembered by the message's address is used, but none is added there: a message made for
    /// one request (by a context processor) would crowd out the transcript's. Its texts are
    /// remembered by content instead (the system block a processor rebuilds for every call is
    /// the same text call after call).
    pub fn message_tokens(&self, m: &Arc<Message>) -> u64 {
        if vocabulary(self.encoding).is_none() {
            return HeuristicEstimator.messages(std::slice::from_ref(m));
        }
        match self.messages.get(m) {
            Some(n) => self.scale(n),
            None => self.scale(self.message_with(m, |t| self.text_by_content(t))),
        }
    }

    /// [`Self::text_tokens`], remembered by the text's content: for what a request carries
    /// call after call (tool schemas above all), where encoding again would cost far more than
    /// the hash.
    pub fn remembered_text_tokens(&self, text: &str) -> u64 {
        self.scale(self.text_by_content(text))
    }

    /// Tokens of `text`, remembered by a hash of its content (hashing costs a fraction of
    /// encoding, even for a short text).
    fn text_by_content(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            (self.encoding, h.finish())
        };
        if let Some(n) = TEXTS.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return *n;
        }
        let n = self.text(text);
        let mut texts = TEXTS.lock().unwrap_or_else(|p| p.into_inner());
        if texts.len() >= CONTENT_MEMO_LIMIT {
            texts.clear();
        }
        texts.insert(key, n);
        n
    }

    /// Tokens of every API of one tool, as [`TokenEstimator::tools`] counts it (scaled,
    /// remembered).
    pub fn manifest_tokens(&self, m: &Arc<ToolManifest>) -> u64 {
        self.scale(self.tools.count(m, |m| self.manifest(m)))
    }

    /// Tokens of one tool API offered to the model, counted as [`TokenEstimator::tools`]
    /// counts each API (scaled).
    pub fn function_tokens(&self, identifier: &str, api: &rein_core::tool::ToolApi) -> u64 {
        self.scale(
            PER_TOOL
                + self.text(identifier)
                + self.text(&api.name)
                + self.text_by_content(&api.description)
                + self.text_by_content(&api.parameters.to_string()),
        )
    }

    fn scale(&self, tokens: u64) -> u64 {
        (tokens as f64 * self.factor).ceil() as u64
    }

    fn message(&self, m: &Message) -> u64 {
        self.message_with(m, |t| self.text(t))
    }

    /// `message` with every text in it counted by `count`.
    fn message_with(&self, m: &Message, count: impl Fn(&str) -> u64) -> u64 {
        let mut n = PER_MESSAGE;
        for p in &m.content {
            n += match p {
                ContentPart::Text { text } => count(text),
                ContentPart::Image { .. } => IMAGE_TOKENS,
                // Counted whole: conservative where the pipeline later cuts a long file.
                ContentPart::File { name, text, .. } => {
                    count(name) + text.as_deref().map_or(0, &count) + FILE_WRAPPER
                }
            };
        }
        for c in &m.tool_calls {
            n += PER_MESSAGE + count(&c.identifier) + count(&c.api) + count(&c.arguments);
        }
        if let Some(r) = &m.reasoning {
            n += count(&r.text);
        }
        n
    }

    fn manifest(&self, m: &ToolManifest) -> u64 {
        m.apis
            .iter()
            .map(|a| {
                // A manifest read back for each run is a new value with the same schemas.
                PER_TOOL
                    + self.text(&m.identifier)
                    + self.text(&a.name)
                    + self.text_by_content(&a.description)
                    + self.text_by_content(&a.parameters.to_string())
            })
            .sum()
    }
}

impl TokenEstimator for TiktokenEstimator {
    fn messages(&self, messages: &[Arc<Message>]) -> u64 {
        if vocabulary(self.encoding).is_none() {
            return HeuristicEstimator.messages(messages);
        }
        self.scale(
            messages
                .iter()
                .map(|m| self.messages.count(m, |m| self.message(m)))
                .sum(),
        )
    }

    fn tools(&self, manifests: &BTreeMap<String, Arc<ToolManifest>>) -> u64 {
        let n: u64 = manifests
            .values()
            .map(|m| self.tools.count(m, |m| self.manifest(m)))
            .sum();
        self.scale(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        let e = TiktokenEstimator::default();
        // "hello world" is two tokens in both OpenAI vocabularies.
        assert_eq!(e.text("hello world"), 2);
        assert_eq!(
            TiktokenEstimator::new(Encoding::Cl100k, 1.0).text("hello world"),
            2
        );
        let msgs = vec![Arc::new(Message::user("hello world"))];
        assert_eq!(e.messages(&msgs), PER_MESSAGE + 2);
        let scaled = TiktokenEstimator::new(Encoding::O200k, 1.5);
        assert_eq!(scaled.messages(&msgs), 9);
    }

    #[test]
    fn remembered_counts_match_fresh_ones_and_follow_changes() {
        let e = TiktokenEstimator::default();
        let a = Arc::new(Message::user("hello world"));
        let b = Arc::new(Message::assistant(
            "a somewhat longer answer than the question",
        ));
        let first = e.messages(&[Arc::clone(&a), Arc::clone(&b)]);
        // Counted again from memory, and equal to what a new estimator counts.
        assert_eq!(e.messages(&[Arc::clone(&a), Arc::clone(&b)]), first);
        assert_eq!(
            TiktokenEstimator::default().messages(&[Arc::clone(&a), Arc::clone(&b)]),
            first
        );
        // A changed message is a new allocation: counted anew.
        let mut changed = (*b).clone();
        changed.content = vec![ContentPart::Text {
            text: "short".into(),
        }];
        let changed = Arc::new(changed);
        assert_eq!(
            e.messages(&[Arc::clone(&a), changed]),
            2 * PER_MESSAGE + 2 + e.text("short")
        );
    }

    #[test]
    fn images_and_tool_calls_count() {
        let e = TiktokenEstimator::default();
        let mut m = Message::user("look");
        m.content.push(ContentPart::Image {
            url: "data:image/png;base64,AAAA".into(),
            media_type: Some("image/png".into()),
            detail: None,
        });
        let with_image = e.messages(&[Arc::new(m)]);
        assert_eq!(with_image, PER_MESSAGE + e.text("look") + IMAGE_TOKENS);
    }
}
