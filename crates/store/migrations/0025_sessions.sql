-- Signing in by name and password (the web UI): a user's password as its argon2id PHC string
-- (NULL: none, tokens only); browser sessions, of which only the cookie secret's SHA-256 is kept
-- (`secret_hash`), ending at `expires_at`, when revoked, or while their user is disabled; and API
-- tokens that expire or carry only some scopes (NULL: never; every scope the user's role has).
-- Instants are microseconds since the Unix epoch.
ALTER TABLE users ADD COLUMN password_hash TEXT;
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN scopes TEXT;
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    client TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions (user_id, created_at);
