-- What a task run hands to the next: its handoff (title, summary, key findings, next action),
-- as JSON on the run.
ALTER TABLE task_runs ADD COLUMN handoff TEXT;
