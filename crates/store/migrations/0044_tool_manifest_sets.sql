-- An operation's tool manifests (every tool it may call, with its description and parameters)
-- were stored again with each operation in `operation_setup.tool_manifests`: about 14 KB per
-- operation, most of a busy server's database, for the few sets its agents actually use. Each
-- distinct set is now stored once, keyed by the SHA-256 of its JSON, and an operation's setup
-- names its set by that hash. Operations set up before this migration keep theirs inline
-- (`tool_manifests`, read when `manifests_hash` is NULL). A set stays when the operations that
-- used it are deleted: it holds tool definitions, not conversation content, and sets are few.
CREATE TABLE IF NOT EXISTS tool_manifest_sets (
    hash TEXT PRIMARY KEY,
    manifests TEXT NOT NULL
);
ALTER TABLE operation_setup ADD COLUMN manifests_hash TEXT;
