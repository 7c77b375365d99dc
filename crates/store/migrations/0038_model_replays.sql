-- What replayed model calls spent (`rein op replay`): they are no operation of their own, yet
-- they cost money, so usage sums and spending caps count them beside operations. One row per
-- call answered; instants are text like operations' (usage groups by their first ten
-- characters, the UTC day).
CREATE TABLE IF NOT EXISTS model_replays (
    id TEXT PRIMARY KEY,
    owner TEXT,
    operation_id TEXT NOT NULL,
    step BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_nanos BIGINT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS model_replays_by_owner ON model_replays (owner, created_at);
