//! Running an ingestion job (`rein kb add`, an upload to `rein serve`): each file still to do is
//! read (from its local path or its uploaded bytes), hashed, and left as it is when its
//! content is what the base already has, else parsed, cut into chunks and written whole with
//! its job entry marked done (one transaction: a job stopped at any point and resumed never
//! writes a file twice nor leaves half of one). Then the base's chunks without a vector of its
//! embedding model are embedded in batches, each retried with backoff, and stored. A job whose
//! embedding fails is `failed` with the error; its chunks are already searchable by full text,
//! and resuming it embeds what is left.

use crate::knowledge::retrieve::embedder_for;
use crate::models::ModelSource;
use rein_knowledge::{ChunkOptions, Parsed, chunk, parse};
use rein_store::{FileOutcome, IngestJob, IngestState, JobFile, NewChunk, Store, StoreError};
use rein_tools::documents::Embedder;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

/// Files larger than this are skipped, saying so (rather than index a dump).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Chunks embedded per request.
pub const EMBED_BATCH: u32 = 64;

/// Tries per batch before the job fails.
const EMBED_TRIES: u32 = 4;

/// What a running job reports as it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// A file was handled.
    File {
        /// Its name in the base.
        path: String,
        /// What happened.
        outcome: FileOutcome,
        /// Files of the job handled so far.
        done: u64,
        /// Files of the job.
        total: u64,
    },
    /// Chunks have vectors of the base's model.
    Embedded {
        /// Chunks of the base with a vector.
        done: u64,
        /// Chunks of the base.
        total: u64,
    },
}

/// Why a job could not run at all (a failure while running is recorded on the job instead).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such job, or its base is gone.
    #[error("no ingestion job {0}")]
    UnknownJob(String),
}

/// The SHA-256 of `bytes`, in hex: a file's identity for "unchanged".
pub fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Run (or resume) job `id` to its end; `models` embeds for a base with an embedding model.
/// Returns the job as it ended (`done`, or `failed` with why).
pub async fn run(
    store: &dyn Store,
    models: Option<&dyn ModelSource>,
    id: &str,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<IngestJob, IngestError> {
    let job = store
        .ingest_job(id)
        .await?
        .ok_or_else(|| IngestError::UnknownJob(id.to_owned()))?;
    let kb = store
        .knowledge_base_by_id(&job.kb_id)
        .await?
        .ok_or_else(|| IngestError::UnknownJob(id.to_owned()))?;
    if job.state != IngestState::Running {
        store
            .set_ingest_state(id, IngestState::Running, None)
            .await?;
    }
    let opts = ChunkOptions {
        max_tokens: usize::try_from(job.chunk_tokens).unwrap_or(400).max(1),
        overlap_tokens: usize::try_from(job.overlap_tokens).unwrap_or(0),
    };
    let pending = store.pending_job_files(id).await?;
    for (done, file) in (job.files_done + 1..).zip(pending) {
        let outcome = write_file(store, &kb.id, id, &file, &opts).await?;
        progress(Progress::File {
            path: file.path,
            outcome,
            done,
            total: job.files,
        });
        crate::driver::pause_in_ingestion("file", done).await;
    }
    if let Some(model) = kb.embed_model.as_deref() {
        let embedded = match models {
            Some(models) => embedder_for(models, model).map_err(|e| e.to_string()),
            None => Err("no model providers in this process".to_owned()),
        };
        let result = match embedded {
            Ok(embedder) => embed_pending(store, &kb.id, model, &*embedder, progress).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            let why = format!("embedding with {model}: {e}");
            store
                .set_ingest_state(id, IngestState::Failed, Some(&why))
                .await?;
            return store
                .ingest_job(id)
                .await?
                .ok_or_else(|| IngestError::UnknownJob(id.to_owned()));
        }
    }
    store.set_ingest_state(id, IngestState::Done, None).await?;
    store
        .ingest_job(id)
        .await?
        .ok_or_else(|| IngestError::UnknownJob(id.to_owned()))
}

/// Read, compare, parse, chunk and write one file of a job; what happened.
async fn write_file(
    store: &dyn Store,
    kb: &str,
    job: &str,
    file: &JobFile,
    opts: &ChunkOptions,
) -> Result<FileOutcome, StoreError> {
    let entry = Some((job, file.seq));
    let bytes = match (&file.content, &file.source) {
        (Some(bytes), _) => bytes.clone(),
        (None, Some(source)) => match read_source(Path::new(source)) {
            Ok(b) => b,
            Err(why) => {
                let outcome = FileOutcome::Skipped(why);
                store.finish_job_file(job, file.seq, &outcome).await?;
                return Ok(outcome);
            }
        },
        (None, None) => {
            let outcome = FileOutcome::Skipped("its upload is gone".to_owned());
            store.finish_job_file(job, file.seq, &outcome).await?;
            return Ok(outcome);
        }
    };
    let hash = content_hash(&bytes);
    if store
        .knowledge_file(kb, &file.path)
        .await?
        .is_some_and(|f| f.content_hash == hash)
    {
        store
            .finish_job_file(job, file.seq, &FileOutcome::Unchanged)
            .await?;
        return Ok(FileOutcome::Unchanged);
    }
    match parse(Path::new(&file.path), &bytes) {
        Parsed::Skipped { reason } => {
            store
                .put_knowledge_file(kb, &file.path, &hash, &[], Some(&reason), entry)
                .await?;
            Ok(FileOutcome::Skipped(reason))
        }
        Parsed::Text { text, format } => {
            let chunks: Vec<NewChunk> = chunk(&text, format, opts)
                .into_iter()
                .map(|c| NewChunk {
                    headings: c.headings,
                    line_start: c.line_start as u64,
                    line_end: c.line_end as u64,
                    text: c.text,
                })
                .collect();
            store
                .put_knowledge_file(kb, &file.path, &hash, &chunks, None, entry)
                .await?;
            Ok(FileOutcome::Indexed {
                chunks: chunks.len() as u64,
            })
        }
    }
}

/// A local file's bytes, or why it cannot be indexed.
fn read_source(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))
}

/// Embed every chunk of `kb` without a vector of `model`, a batch at a time.
async fn embed_pending(
    store: &dyn Store,
    kb: &str,
    model: &str,
    embedder: &dyn Embedder,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<(), String> {
    let store_err = |e: StoreError| e.to_string();
    // Passes over the base in chunk order, each reading every chunk once; another pass only
    // when this one stored something (chunks written behind it meanwhile are caught then).
    let mut after: Option<(String, u64)> = None;
    let mut stored_in_pass = 0;
    // Counted once; progress then adds what each batch stored.
    let (mut done, total) = store.embedding_counts(kb, model).await.map_err(store_err)?;
    loop {
        let batch = store
            .pending_embeddings(
                kb,
                model,
                after.as_ref().map(|(p, o)| (p.as_str(), *o)),
                EMBED_BATCH,
            )
            .await
            .map_err(store_err)?;
        let Some(last) = batch.last() else {
            if after.is_none() || stored_in_pass == 0 {
                return Ok(());
            }
            after = None;
            stored_in_pass = 0;
            continue;
        };
        after = Some((last.path.clone(), last.ordinal));
        let texts: Vec<String> = batch.iter().map(|c| c.text.clone()).collect();
        let vectors = embed_with_retries(embedder, &texts).await?;
        let pairs: Vec<_> = batch.into_iter().zip(vectors).collect();
        let stored = store
            .put_knowledge_vectors(kb, model, &pairs)
            .await
            .map_err(store_err)?;
        stored_in_pass += stored;
        if stored == 0 {
            // Every chunk of the batch changed under it, or the base's model did.
            let still = store
                .knowledge_base_by_id(kb)
                .await
                .map_err(store_err)?
                .and_then(|b| b.embed_model);
            if still.as_deref() != Some(model) {
                return Ok(());
            }
        }
        done += stored;
        progress(Progress::Embedded { done, total });
        crate::driver::pause_in_ingestion("embedded", done).await;
    }
}

/// One batch's vectors, retried with exponential backoff (0.5 s, 1 s, 2 s).
async fn embed_with_retries(
    embedder: &dyn Embedder,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, String> {
    let mut last = String::new();
    for attempt in 0..EMBED_TRIES {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 << (attempt - 1))).await;
        }
        match embedder.embed(texts).await {
            Ok(v) if v.len() == texts.len() => return Ok(v),
            Ok(v) => {
                last = format!("{} vectors for {} texts", v.len(), texts.len());
            }
            Err(e) => {
                tracing::warn!(model = embedder.model(), attempt, error = %e, "embedding failed");
                last = e.to_string();
            }
        }
    }
    Err(last)
}
