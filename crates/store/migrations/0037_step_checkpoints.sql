-- Each step row keeps what rebuilding the state after it needs (`checkpoint.rs`): the small
-- state and next context after the step, and how to undo what it changed in the message list,
-- message bodies and tool manifests. Steps committed before this migration have none: the
-- state after them cannot be rebuilt (a fork or a replay of them is refused, saying so).
ALTER TABLE operation_steps ADD COLUMN checkpoint TEXT;
