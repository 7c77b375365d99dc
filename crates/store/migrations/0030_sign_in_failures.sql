-- Failed sign-ins by name (lowercased), so every server on the database counts them together:
-- a name locked on one replica is locked on all. Rows older than the counting window are
-- deleted as new ones are written. Instants are microseconds.
CREATE TABLE IF NOT EXISTS sign_in_failures (
    name TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS sign_in_failures_by_name ON sign_in_failures (name, at);
CREATE INDEX IF NOT EXISTS sign_in_failures_by_time ON sign_in_failures (at);
