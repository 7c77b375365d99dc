-- A chunk's embedding: little-endian f32s, unit length, for its base's embedding model.
CREATE TABLE IF NOT EXISTS knowledge_vectors (
    kb_id TEXT NOT NULL,
    path TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (kb_id, path, ordinal)
);
-- A file of an ingestion job: read from `source` (a local path) or `content` (uploaded);
-- `outcome` is set when it has been written (NULL: still to do).
CREATE TABLE IF NOT EXISTS knowledge_job_files (
    job_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    path TEXT NOT NULL,
    source TEXT,
    content BLOB,
    outcome TEXT,
    PRIMARY KEY (job_id, seq)
);
-- Each chunk names its full-text row (an explicit FTS5 rowid, stable across VACUUM), so a
-- file's rows are deleted by key instead of by scanning the index's unindexed columns.
ALTER TABLE knowledge_chunks ADD COLUMN fts_rowid BIGINT;
DELETE FROM knowledge_fts;
INSERT INTO knowledge_fts (rowid, text, kb_id, path, ordinal) SELECT rowid, text, kb_id, path, ordinal FROM knowledge_chunks;
UPDATE knowledge_chunks SET fts_rowid = rowid;
