-- What a commit rewrites shrinks to what a step changes. The order of an operation's messages
-- gets a row per position, appended as steps add messages (a step used to rewrite the whole id
-- list inside the state). What an operation was set up with (its spec and tool manifests,
-- kilobytes of JSON) moves out of the operations row, which every commit rewrites whole, into
-- `operation_setup`, written at the start and when the manifests change. Existing operations'
-- id lists and manifests are moved out of their states by the migration runner (`schema.rs`).
CREATE TABLE IF NOT EXISTS operation_messages (
    operation_id TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (operation_id, ordinal)
);
CREATE TABLE IF NOT EXISTS operation_setup (
    operation_id TEXT PRIMARY KEY,
    spec TEXT,
    tool_manifests TEXT
);
INSERT INTO operation_setup (operation_id, spec) SELECT id, spec FROM operations;
UPDATE operations SET spec = NULL;
-- Listing is newest first (`ORDER BY created_at DESC, id DESC`), filtered by status, owner or
-- neither: an index per filter that also gives the order, so a page of 10,000 parked
-- operations reads one page of rows instead of sorting them all. The old status index ended in
-- `updated_at`, which every commit changes, so each commit moved its entry; nothing reads it.
CREATE INDEX IF NOT EXISTS operations_by_status_created ON operations (status, created_at, id);
CREATE INDEX IF NOT EXISTS operations_by_owner_created ON operations (owner, created_at, id);
CREATE INDEX IF NOT EXISTS operations_by_created ON operations (created_at, id);
DROP INDEX IF EXISTS operations_by_status;
