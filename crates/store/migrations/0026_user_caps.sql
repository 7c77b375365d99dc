-- Per-user caps an admin sets over the server's defaults: what a user's operations may cost and
-- how many tokens they may use per UTC day and month, as JSON (`Caps`; NULL: the server's
-- defaults for every one).
ALTER TABLE users ADD COLUMN caps TEXT;
