-- Briefs: durable reports that ask a person for attention (a task run's result or error, a
-- decision an agent needs, an insight), with their read and resolved state; each user's hook
-- for urgent briefs (a URL that receives a signed POST); and the outbox of hook deliveries,
-- retried until delivered (next attempt as integer microseconds, compared by statements).
CREATE TABLE IF NOT EXISTS briefs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    task_id TEXT,
    operation_id TEXT,
    agent TEXT,
    kind TEXT NOT NULL,
    priority TEXT NOT NULL,
    title TEXT NOT NULL,
    summary TEXT NOT NULL,
    body TEXT NOT NULL,
    read_at TEXT,
    resolved_at TEXT,
    resolution TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS briefs_by_owner ON briefs (owner, created_at);
CREATE INDEX IF NOT EXISTS briefs_by_task ON briefs (task_id, resolved_at);
CREATE TABLE IF NOT EXISTS brief_hooks (
    owner TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS brief_notices (
    brief_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    delivered_at TEXT,
    last_error TEXT
);
CREATE INDEX IF NOT EXISTS brief_notices_due ON brief_notices (delivered_at, next_at);
