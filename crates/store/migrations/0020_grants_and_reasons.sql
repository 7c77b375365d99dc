-- Why a pending call asks: the checker's decision as JSON (source, rule, explanation, the
-- command's node), shown to whoever decides it. The decision's own note (a rejection's reason,
-- a question's answer) keeps its values under the name `outcome`.
ALTER TABLE interventions RENAME COLUMN reason TO outcome;
ALTER TABLE interventions ADD COLUMN reason TEXT;
-- A person's "always for this tool": one tool within one scope (`operation`: the tree whose
-- root is `target`; `topic`; `agent`: the owner's agent named `target`). A revoked grant keeps
-- its row for the record and covers nothing.
CREATE TABLE IF NOT EXISTS grants (
    id TEXT PRIMARY KEY,
    owner TEXT,
    scope TEXT NOT NULL,
    target TEXT NOT NULL,
    tool TEXT NOT NULL,
    operation_id TEXT,
    tool_call_id TEXT,
    created_by TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    revoked_by TEXT
);
CREATE INDEX IF NOT EXISTS grants_by_target ON grants (scope, target);
-- One active grant per owner, scope, target and tool: two "always" given at the same moment
-- (two servers, two tabs) make one grant, so revoking it revokes all that covers the tool.
CREATE UNIQUE INDEX IF NOT EXISTS grants_active
    ON grants (COALESCE(owner, ''), scope, target, tool) WHERE revoked_at IS NULL;
