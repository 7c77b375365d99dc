INSERT INTO memory_epoch (id, since) VALUES (1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) ON CONFLICT (id) DO NOTHING;
