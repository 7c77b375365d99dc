-- Files users upload to send with a message (`POST /v1/files`): each row is one upload, named
-- as it was sent, its type sniffed from its content; the bytes are kept once per owner and
-- content (`file_blobs`, per backend), shared by that owner's uploads of the same content and
-- deleted with the last of them. Instants are microseconds.
CREATE TABLE IF NOT EXISTS files (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    name TEXT NOT NULL,
    media_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_by_owner ON files (owner, created_at);
CREATE INDEX IF NOT EXISTS files_by_content ON files (owner, sha256);
