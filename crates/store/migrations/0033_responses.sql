-- What a Responses API request asked for, beside the operation that answers it (the response
-- *is* the operation): the model as named, the instructions, the response it continues,
-- whether it runs in the background (0/1), and the caller's metadata (a JSON object), so the
-- response reads back as it was asked. Instants are microseconds.
CREATE TABLE IF NOT EXISTS responses (
    operation_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    model TEXT NOT NULL,
    instructions TEXT,
    previous_response_id TEXT,
    background BIGINT NOT NULL,
    metadata TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
