INSERT INTO memory_epoch (id, since) VALUES (1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) ON CONFLICT (id) DO NOTHING;
