-- Tasks: the durable object that owns recurring work (instruction, assignee agent, automation,
-- policies, counters), its due fires (deliveries, one per task, due time and kind) and its runs.
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, created_at);

CREATE TABLE IF NOT EXISTS task_deliveries (
    task_id TEXT NOT NULL,
    due_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    generation TEXT NOT NULL,
    status TEXT NOT NULL,
    claimed_by TEXT,
    lease_until TEXT,
    reason TEXT,
    operation_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (task_id, due_at, kind)
);
CREATE INDEX IF NOT EXISTS task_deliveries_due ON task_deliveries (status, due_at);

CREATE TABLE IF NOT EXISTS task_runs (
    operation_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    trigger_kind TEXT NOT NULL,
    due_at TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    outcome TEXT,
    brief TEXT,
    cost_nanos BIGINT
);
CREATE INDEX IF NOT EXISTS task_runs_by_task ON task_runs (task_id, started_at);
CREATE INDEX IF NOT EXISTS task_runs_open ON task_runs (finished_at, started_at);
