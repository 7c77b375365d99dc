-- Which process runs an operation, until when (renewed while it runs): a process that starts
-- resumes only operations whose lease has run out.
ALTER TABLE operations ADD COLUMN lease_owner TEXT;
ALTER TABLE operations ADD COLUMN lease_until TEXT;
