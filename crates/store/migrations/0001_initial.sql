-- Portable between SQLite and PostgreSQL: TEXT and BIGINT only, JSON stored as TEXT,
-- composite keys instead of sequences.
CREATE TABLE IF NOT EXISTS agents (
    name TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS topics (
    id TEXT PRIMARY KEY,
    agent TEXT,
    title TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    topic_id TEXT NOT NULL,
    parent_id TEXT,
    role TEXT NOT NULL,
    tool_call_id TEXT,
    status TEXT,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_topic ON messages (topic_id, created_at);

CREATE TABLE IF NOT EXISTS operations (
    id TEXT PRIMARY KEY,
    agent TEXT,
    topic_id TEXT NOT NULL,
    trigger_kind TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    status TEXT NOT NULL,
    finish_reason TEXT,
    finish_detail TEXT,
    step_count BIGINT NOT NULL,
    max_steps BIGINT,
    commit_seq BIGINT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    total_tokens BIGINT NOT NULL,
    cost_nanos BIGINT NOT NULL,
    approval_requests BIGINT NOT NULL,
    cancel_requested BIGINT NOT NULL,
    error TEXT,
    parent_operation TEXT,
    state TEXT NOT NULL,
    next_context TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS operations_by_status ON operations (status, updated_at);

CREATE TABLE IF NOT EXISTS operation_steps (
    operation_id TEXT NOT NULL,
    step_index BIGINT NOT NULL,
    status TEXT NOT NULL,
    instructions TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (operation_id, step_index)
);

CREATE TABLE IF NOT EXISTS operation_events (
    operation_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    step BIGINT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (operation_id, seq)
);

CREATE TABLE IF NOT EXISTS tool_executions (
    operation_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    step_index BIGINT NOT NULL,
    tool TEXT NOT NULL,
    effect TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (operation_id, tool_call_id)
);

CREATE TABLE IF NOT EXISTS interventions (
    operation_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    call TEXT NOT NULL,
    owner TEXT,
    status TEXT NOT NULL,
    reason TEXT,
    decided_by TEXT,
    decided_at TEXT,
    expires_at TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (operation_id, tool_call_id)
);
