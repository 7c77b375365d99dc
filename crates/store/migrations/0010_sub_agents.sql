-- Sub-agents and groups.
--
-- Sub-agents: a child operation records its root and depth; its messages live in a thread of
-- the parent's topic (a thread per child, named by the child's operation id), hanging from the
-- parent's tool message that delegated it. A topic's own conversation is its messages outside
-- any thread.
ALTER TABLE operations ADD COLUMN root_operation TEXT;
ALTER TABLE operations ADD COLUMN depth BIGINT NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS operations_by_parent ON operations (parent_operation, created_at);
ALTER TABLE messages ADD COLUMN thread_id TEXT;
CREATE INDEX IF NOT EXISTS messages_by_thread ON messages (thread_id, created_at);
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    topic_id TEXT NOT NULL,
    parent_message_id TEXT,
    operation_id TEXT NOT NULL,
    parent_operation TEXT NOT NULL,
    agent TEXT,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_by_topic ON threads (topic_id, created_at);
-- A group: a saved set of agents with a supervisor (its configuration, like an agent's, is
-- JSON that rein_operation::GroupProfile defines), per owner.
CREATE TABLE IF NOT EXISTS agent_groups (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (owner, name)
);
