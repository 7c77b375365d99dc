-- What each operation may do (model, system role, allowed tools, approval mode, budgets, ...),
-- written when it starts and read back by every process that continues it; and a version per
-- agent, counted up on every change, so an operation records which version it started from.
ALTER TABLE operations ADD COLUMN spec TEXT;
ALTER TABLE agents ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
