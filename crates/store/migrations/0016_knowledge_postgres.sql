-- PostgreSQL's full-text index of knowledge chunks.
ALTER TABLE knowledge_chunks ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED;
CREATE INDEX IF NOT EXISTS knowledge_chunks_tsv ON knowledge_chunks USING GIN (tsv);
