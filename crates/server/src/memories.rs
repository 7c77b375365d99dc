//! The server's memory extractor: reads its users' finished conversations for what to
//! remember about them (`rein_operation::memories`), with the server's system model and the
//! same embedder as the memory tool (`REIN_EMBED_MODEL`, as in the CLI). It looks every `every`;
//! the queue is the store's, so extractions left by a restart, or by another server on the same
//! database, are done by whichever looks first (applying is one transaction per conversation,
//! and a conversation already applied is no longer in the queue). Without a system model the
//! server does not learn.

use rein_operation::memories::Extractor;
use std::time::Duration;

/// Extract memories until `app` shuts down.
pub async fn extraction_loop(app: crate::AppState, every: Duration) {
    let host = &app.runner.host;
    let Some(model) = host.system_model.clone() else {
        tracing::info!("no system model: the server does not learn memories from conversations");
        return;
    };
    let embedder = host.embedder.as_ref().map(|(provider, model)| {
        rein_operation::ProviderEmbedder::new(std::sync::Arc::clone(provider), model.clone())
    });
    loop {
        let extractor = Extractor {
            store: &*app.store,
            models: &*host.models,
            model: &model,
            embedder: embedder
                .as_ref()
                .map(|e| e as &dyn rein_tools::documents::Embedder),
            cancel: app.shutdown.child_token(),
        };
        match extractor.run_pending(20).await {
            Ok(done) => {
                for d in done {
                    if let Ok(a) = d.outcome {
                        tracing::info!(
                            operation = %d.operation_id,
                            added = a.added,
                            replaced = a.replaced,
                            merged = a.merged,
                            "memories extracted"
                        );
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the memory extraction queue"),
        }
        tokio::select! {
            _ = app.shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
