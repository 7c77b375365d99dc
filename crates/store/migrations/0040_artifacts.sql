-- Files that tool calls produced (an interpreter's plot, a generated image): each row is one
-- file of one call, named as the tool named it, in its owner's conversation; the bytes are kept
-- once per owner and content in `file_blobs`, shared with uploads of the same bytes, and
-- deleted with the last row of either that refers to them. A call's files are kept once
-- (`operation_id`, `tool_call_id`, `name`), however often its step runs. Instants are
-- microseconds.
CREATE TABLE IF NOT EXISTS artifacts (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    topic_id TEXT,
    operation_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    media_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (operation_id, tool_call_id, name)
);
CREATE INDEX IF NOT EXISTS artifacts_by_owner ON artifacts (owner, created_at);
CREATE INDEX IF NOT EXISTS artifacts_by_topic ON artifacts (topic_id, created_at);
CREATE INDEX IF NOT EXISTS artifacts_by_content ON artifacts (owner, sha256);
