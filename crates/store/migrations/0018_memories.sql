-- Memories a model extracted from conversations (per user; `agent` is where one came from).
-- A memory replaced by a contradicting one keeps its row with `superseded_by` (its history);
-- a forgotten one keeps only `text_key`, the hash of its normalised text, so the same fact is
-- never extracted (nor injected) again. `memory_extractions` is the durable queue of finished
-- operations read for memories; `memory_epoch` is when extraction began on this database
-- (operations that finished before are not read).
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    owner TEXT,
    agent TEXT,
    category TEXT NOT NULL,
    subject TEXT NOT NULL,
    text TEXT NOT NULL,
    text_key TEXT NOT NULL,
    source_operation TEXT,
    source_message TEXT,
    embedding TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    superseded_by TEXT,
    forgotten BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS memories_by_owner ON memories (owner, subject);
CREATE TABLE IF NOT EXISTS memory_settings (
    owner TEXT PRIMARY KEY,
    extraction BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_extractions (
    operation_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    error TEXT,
    retry_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_epoch (
    id BIGINT PRIMARY KEY,
    since TEXT NOT NULL
);
