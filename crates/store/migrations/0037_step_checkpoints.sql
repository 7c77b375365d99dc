-- Each step row keeps what rebuilding the state after it needs (`checkpoint.rs`): the small
-- state and next context after the step, and how to undo what it changed in the message list,
-- message bodies and tool manifests. Steps committed before this migration have none: the
-- state after them cannot be rebuilt (a fork or a replay of them is refused, saying so).
-- `operation_setup.first_checkpoint` is the same for the state an operation started with
-- (before its first step), written when it is created or, queued, when it becomes ready.
ALTER TABLE operation_steps ADD COLUMN checkpoint TEXT;
ALTER TABLE operation_setup ADD COLUMN first_checkpoint TEXT;
