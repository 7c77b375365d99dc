-- A document's embedding as JSON ({"model": "...", "vector": [...]}), when one was made.
ALTER TABLE documents ADD COLUMN embedding TEXT;
