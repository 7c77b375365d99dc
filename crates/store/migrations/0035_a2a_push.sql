-- Where an A2A client asked to be told of a task's updates (a task is an operation): the URL
-- rein posts each update to, the token it echoes (`X-A2A-Notification-Token`), and the
-- `Authorization` it sends (scheme and credentials), per task and configuration id.
-- Instants are microseconds.
CREATE TABLE IF NOT EXISTS a2a_push_configs (
    operation_id TEXT NOT NULL,
    id TEXT NOT NULL,
    owner TEXT NOT NULL,
    url TEXT NOT NULL,
    token TEXT,
    auth_scheme TEXT,
    auth_credentials TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (operation_id, id)
);
