-- Devices: machines that joined a server with `rein connect`, each bound to one user, with the
-- tools it announced (so operations can target it while it reconnects). A device token is an
-- API token bound to a device name: it authenticates that device's connection and nothing
-- else, and no other token can connect as a device.
ALTER TABLE api_tokens ADD COLUMN device TEXT;
CREATE TABLE IF NOT EXISTS devices (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    tools TEXT NOT NULL,
    workdir TEXT,
    platform TEXT,
    last_seen TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (owner, name)
);
