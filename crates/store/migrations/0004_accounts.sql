-- Users and their API tokens (only a SHA-256 of each token is kept).
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS api_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS api_tokens_by_user ON api_tokens (user_id);

-- Agents belong to a user. The table from 0001 was never written, so it is replaced.
DROP TABLE IF EXISTS agents;
CREATE TABLE agents (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (owner, name)
);

-- Who an operation and a conversation belong to (NULL: the local, single-user CLI).
ALTER TABLE operations ADD COLUMN owner TEXT;
ALTER TABLE topics ADD COLUMN owner TEXT;
CREATE INDEX IF NOT EXISTS operations_by_owner ON operations (owner, created_at);
