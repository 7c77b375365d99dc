-- Roles and disabled accounts: an `admin` manages users (the API's /v1/users, `rein user`), a
-- `member` (every user so far) sees only their own things. A disabled user's tokens
-- authenticate nothing from the next request on; the user and what they made are kept.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'member';
ALTER TABLE users ADD COLUMN disabled_at TEXT;
