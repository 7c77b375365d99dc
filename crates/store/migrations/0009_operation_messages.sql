-- The order of an operation's messages, one row per position, appended as steps add messages
-- (a step used to rewrite the whole id list inside the state), and the operation's tool
-- manifests, written when they change rather than with every step. Existing operations are
-- converted by the migration runner (`schema.rs`), which moves both out of `state`.
CREATE TABLE IF NOT EXISTS operation_messages (
    operation_id TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (operation_id, ordinal)
);
ALTER TABLE operations ADD COLUMN tool_manifests TEXT;
-- Listing is newest first (`ORDER BY created_at DESC, id DESC`), filtered by status, owner or
-- neither: an index per filter that also gives the order, so a page of 10,000 parked
-- operations reads one page of rows instead of sorting them all.
CREATE INDEX IF NOT EXISTS operations_by_status_created ON operations (status, created_at, id);
CREATE INDEX IF NOT EXISTS operations_by_owner_created ON operations (owner, created_at, id);
CREATE INDEX IF NOT EXISTS operations_by_created ON operations (created_at, id);
