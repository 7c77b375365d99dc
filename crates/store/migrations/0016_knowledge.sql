-- Knowledge bases: files cut into chunks for retrieval. A file's row keeps the hash of what was
-- indexed (adding it unchanged again does nothing) or why it was skipped; its chunks keep the
-- lines they span and the headings they sit under. The full-text index is the backend's own
-- (SQLite FTS5, PostgreSQL tsvector), created beside this by the migration runner.
CREATE TABLE IF NOT EXISTS knowledge_bases (
    id TEXT PRIMARY KEY,
    owner TEXT,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS knowledge_bases_by_name ON knowledge_bases (COALESCE(owner, ''), name);
CREATE TABLE IF NOT EXISTS knowledge_files (
    kb_id TEXT NOT NULL,
    path TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    chunks BIGINT NOT NULL,
    skipped TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kb_id, path)
);
CREATE TABLE IF NOT EXISTS knowledge_chunks (
    kb_id TEXT NOT NULL,
    path TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    headings TEXT NOT NULL,
    line_start BIGINT NOT NULL,
    line_end BIGINT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (kb_id, path, ordinal)
);
