-- The start of what each operation was asked (the person's message, a task's instruction, a
-- sub-agent's task), so a list of operations says what each one is about without loading its
-- messages. Operations created before it have none.
ALTER TABLE operations ADD COLUMN prompt TEXT;
