-- The working directory a user chose for their operations on a server (inside a root the
-- admin allows: `rein serve --user-workdir-root`; NULL: the server's own, if any).
ALTER TABLE users ADD COLUMN working_directory TEXT;
