//! The server's knowledge ingester: runs the ingestion jobs uploads record
//! ([`crate::routes::knowledge`]), woken by each upload and looking every `every` for jobs
//! left running by a process that stopped (this one before a restart, or another server on the
//! same database), so a job is finished whoever recorded it. Jobs run one at a time, through
//! the same code as `rein kb add` (`rein_operation::knowledge::ingest`), embedding with the
//! base's owner's providers (their own, over this server's). Two servers that pick up the same job write the same files
//! (a file is replaced whole), so sharing costs work, never correctness.

use rein_store::{Knowledge, KnowledgeJobs};
use std::time::Duration;

/// Run ingestion jobs until `app` shuts down.
pub async fn ingest_loop(app: crate::AppState, every: Duration) {
    loop {
        match app.store.running_ingest_jobs(16).await {
            Ok(jobs) => {
                for job in jobs {
                    if app.shutdown.is_cancelled() {
                        return;
                    }
                    // Embedded with the base's owner's providers (their own key for it,
                    // where they brought one).
                    let owner = match app.store.knowledge_base_by_id(&job.kb_id).await {
                        Ok(kb) => kb.and_then(|kb| kb.owner),
                        Err(e) => {
                            tracing::warn!(job = %job.id, error = %e, "cannot read the job's base");
                            continue;
                        }
                    };
                    let models = match app.runner.host.models_of(owner.as_deref()).await {
                        Ok(m) => m,
                        Err(e) => {
                            tracing::warn!(job = %job.id, error = %e, "cannot read the owner's providers");
                            continue;
                        }
                    };
                    match rein_operation::knowledge::ingest::run(
                        &*app.store,
                        Some(&*models),
                        &job.id,
                        &|_| {},
                    )
                    .await
                    {
                        Ok(done) => tracing::info!(
                            job = %done.id,
                            state = ?done.state,
                            files = done.files,
                            error = done.error.as_deref().unwrap_or(""),
                            "ingestion job ended"
                        ),
                        Err(e) => {
                            tracing::warn!(job = %job.id, error = %e, "ingestion job could not run")
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list ingestion jobs"),
        }
        tokio::select! {
            _ = app.shutdown.cancelled() => return,
            _ = app.ingest.notified() => {}
            _ = tokio::time::sleep(every) => {}
        }
    }
}
