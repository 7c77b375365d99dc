-- Knowledge bases get an embedding model (none: full-text retrieval only) and a generation,
-- bumped by every write to their chunks or vectors, by which a process's in-memory vector
-- index knows it is stale. Ingestion is a durable job: the files to add are recorded first
-- (`knowledge_job_files`, per backend), each marked done in the transaction that writes it.
ALTER TABLE knowledge_bases ADD COLUMN embed_model TEXT;
ALTER TABLE knowledge_bases ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS knowledge_jobs (
    id TEXT PRIMARY KEY,
    kb_id TEXT NOT NULL,
    state TEXT NOT NULL,
    chunk_tokens BIGINT NOT NULL,
    overlap_tokens BIGINT NOT NULL,
    error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS knowledge_jobs_by_base ON knowledge_jobs (kb_id, state);
