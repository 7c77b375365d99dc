-- The outside job an at-most-once tool call started and waits for (a video render's operation
-- name), written as soon as the job exists: a step re-run after a crash finds the call running
-- with its job and waits for that job instead of settling the call as interrupted or starting
-- another. Calls recorded before this migration have none.
ALTER TABLE tool_executions ADD COLUMN job TEXT;
