-- Evaluation runs (`rein eval run`): a dataset's cases run as operations by one or more agents,
-- each case's assertions judged. `summary` is what a listing shows (per agent: pass rate, cost,
-- latency); `body` the whole run, both JSON written by rein-operation's evals. Instants are
-- text.
CREATE TABLE IF NOT EXISTS eval_runs (
    id TEXT PRIMARY KEY,
    owner TEXT,
    dataset TEXT NOT NULL,
    created_at TEXT NOT NULL,
    summary TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS eval_runs_by_owner ON eval_runs (owner, created_at);
