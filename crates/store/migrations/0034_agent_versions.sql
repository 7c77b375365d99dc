-- Every version of an agent's configuration, written with the agent in one transaction, so a
-- person can see what changed and roll back (a rollback writes the old configuration as the
-- next version). Agents written before this migration have their later versions only.
-- Instants are microseconds.
CREATE TABLE IF NOT EXISTS agent_versions (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    version BIGINT NOT NULL,
    config TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner, name, version)
);
