-- The second half of migration 11, run after its values were converted (see 0011_instants.sql).
DROP INDEX IF EXISTS operations_by_lease;
ALTER TABLE operations DROP COLUMN lease_until;
ALTER TABLE operations DROP COLUMN recovery_retry_at;
ALTER TABLE operations RENAME COLUMN lease_until_us TO lease_until;
ALTER TABLE operations RENAME COLUMN recovery_retry_at_us TO recovery_retry_at;
CREATE INDEX IF NOT EXISTS operations_by_lease ON operations (lease_until);
DROP TABLE task_deliveries;
ALTER TABLE task_deliveries_v11 RENAME TO task_deliveries;
CREATE INDEX IF NOT EXISTS task_deliveries_due ON task_deliveries (status, due_at);
