-- The bytes of uploaded files, once per owner and content.
CREATE TABLE IF NOT EXISTS file_blobs (
    owner TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    content BYTEA NOT NULL,
    PRIMARY KEY (owner, sha256)
);
