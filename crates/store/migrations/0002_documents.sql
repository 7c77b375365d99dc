-- Memories and notes, per scope (user and agent).
CREATE TABLE IF NOT EXISTS documents (
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, scope, id)
);
