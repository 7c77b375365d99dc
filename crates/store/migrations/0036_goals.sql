-- Goals: an objective worked towards over many operations. `graph` is the goal as rein-core's
-- `Goal` (JSON: works, attempts, verdicts, plan revisions); `settings` how it runs (agent,
-- planner, verifier, budget); `seq` counts its commits (each writes the graph and one event
-- of `goal_events`, only if `seq` is still the one read). What the goal's own model calls
-- (planning, verification, acceptance) cost is kept beside it; its works' operations carry
-- their own. A process advancing a goal claims it (`claimed_by` until `claimed_until`), so two
-- servers on one database never both ask its planner or verifier. Instants are microseconds.
CREATE TABLE IF NOT EXISTS goals (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    objective TEXT NOT NULL,
    status TEXT NOT NULL,
    settings TEXT NOT NULL,
    graph TEXT NOT NULL,
    seq BIGINT NOT NULL,
    spent_nanos BIGINT NOT NULL DEFAULT 0,
    spent_tokens BIGINT NOT NULL DEFAULT 0,
    claimed_by TEXT,
    claimed_until BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS goals_owner ON goals (owner, created_at);
CREATE INDEX IF NOT EXISTS goals_status ON goals (status);
CREATE TABLE IF NOT EXISTS goal_events (
    goal_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event TEXT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (goal_id, seq)
);
