-- Sign-ins from another device (`rein login URL`): the CLI holds a secret (only its SHA-256 is
-- kept, as `id`) and shows the person a short `user_code`; a signed-in person approves the code
-- and the CLI, polling with the secret, receives an API token once (`claimed_at`). Instants are
-- microseconds since the Unix epoch; a login is worth nothing after `expires_at`.
CREATE TABLE IF NOT EXISTS logins (
    id TEXT PRIMARY KEY,
    user_code TEXT NOT NULL UNIQUE,
    client TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    approved_by TEXT,
    claimed_at BIGINT
);
CREATE INDEX IF NOT EXISTS logins_by_expiry ON logins (expires_at);
