-- A memory private to one agent (its name; NULL: shared by the user's agents). Merging and
-- replacing happen within one of these pools; a forgotten text stays forgotten in all of them.
ALTER TABLE memories ADD COLUMN private_to TEXT;
CREATE INDEX IF NOT EXISTS memories_by_pool ON memories (owner, private_to);
