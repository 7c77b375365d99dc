-- MCP tool definitions pinned when first listed: a definition (description, parameters) that
-- changes afterwards is held, with the change kept beside the pin, until a person approves it.
-- `owner` is '' for the servers the process's configuration names, a user's id for the servers
-- that user defined. Instants are microseconds.
CREATE TABLE IF NOT EXISTS mcp_pins (
    owner TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    hash TEXT NOT NULL,
    definition TEXT NOT NULL,
    pinned_at BIGINT NOT NULL,
    changed_hash TEXT,
    changed_definition TEXT,
    changed_at BIGINT,
    PRIMARY KEY (owner, server, tool)
);
