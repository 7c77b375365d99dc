-- Instants that statements compare (operation leases, recovery retries, task deliveries' due
-- times and leases) become integers: microseconds since the Unix epoch (UTC), compared as
-- numbers on both backends instead of as text. sqlx's Any driver carries no timestamp type, so
-- an integer is the typed form both backends share. Times only shown or ordered (created_at,
-- finished_at, ...) stay fixed-width RFC 3339 text.
--
-- This file adds the integer columns and the new deliveries table; the migration's Rust step
-- converts every stored value (schema.rs, `convert_instants`) and then runs
-- 0011_instants_finish.sql, which drops the text columns and gives the new ones their names.
ALTER TABLE operations ADD COLUMN lease_until_us BIGINT;
ALTER TABLE operations ADD COLUMN recovery_retry_at_us BIGINT;
CREATE TABLE task_deliveries_v11 (
    task_id TEXT NOT NULL,
    due_at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    generation TEXT NOT NULL,
    status TEXT NOT NULL,
    claimed_by TEXT,
    lease_until BIGINT,
    reason TEXT,
    operation_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (task_id, due_at, kind)
);
