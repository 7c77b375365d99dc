//! Embeddings for memory search, through a model provider's embeddings API.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::state::ModelRef;
use rein_model::ModelProvider;
use rein_tools::documents::{EmbedError, Embedder};
use std::sync::Arc;

/// An [`Embedder`] over one provider and embedding model (`openai/text-embedding-3-small`).
pub struct ProviderEmbedder {
    provider: Arc<dyn ModelProvider>,
    model: ModelRef,
    key: String,
}

impl ProviderEmbedder {
    /// Embed with `model` on `provider`.
    pub fn new(provider: Arc<dyn ModelProvider>, model: ModelRef) -> Self {
        let key = format!("{}/{}", model.provider, model.model);
        Self {
            provider,
            model,
            key,
        }
    }
}

impl Embedder for ProviderEmbedder {
    fn model(&self) -> &str {
        &self.key
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        self.provider
            .embed(&self.model.model, texts.to_vec())
            .map(|r| r.map_err(|e| EmbedError(Box::new(e))))
            .boxed()
    }
}
