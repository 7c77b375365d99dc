-- One operation at a time per conversation: an operation accepted while another of its topic
-- was running or parked waits with status `queued`; `queued` keeps what starting it takes (its
-- prompt and where it goes, as the driver deferred them) until it is activated. The index finds
-- a topic's operations by status in the transaction that creates one.
ALTER TABLE operations ADD COLUMN queued TEXT;
CREATE INDEX IF NOT EXISTS operations_by_topic_status ON operations (topic_id, status, created_at);
