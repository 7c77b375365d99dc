-- The conversation tree: the message a topic's active branch runs through (NULL: the newest
-- message), and where its title came from ('prompt' — the start of its first message —,
-- 'model' or 'user'; NULL reads as 'prompt'), so a generated title never replaces a chosen one.
ALTER TABLE topics ADD COLUMN active_message TEXT;
ALTER TABLE topics ADD COLUMN title_source TEXT;
CREATE INDEX IF NOT EXISTS topics_by_owner ON topics (owner, created_at);
