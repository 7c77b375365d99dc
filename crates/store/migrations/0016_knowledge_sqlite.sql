-- SQLite's full-text index of knowledge chunks (BM25 ranking).
CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5(text, kb_id UNINDEXED, path UNINDEXED, ordinal UNINDEXED);
