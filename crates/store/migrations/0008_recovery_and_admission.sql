-- Why the last process that tried could not resume an operation (missing key, unknown
-- provider, missing MCP server, ...), how often it tried, and when recovery tries again; what a
-- running operation is doing now (model call, tools, backing off); and an index for counting
-- the operations running under a live lease (admission limits).
ALTER TABLE operations ADD COLUMN recovery_error TEXT;
ALTER TABLE operations ADD COLUMN recovery_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN recovery_retry_at TEXT;
ALTER TABLE operations ADD COLUMN activity TEXT;
CREATE INDEX IF NOT EXISTS operations_by_lease ON operations (lease_until);
