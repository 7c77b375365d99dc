-- Admission counts an owner's operations under a live lease before each run. The only index
-- with `owner` first is ordered by creation, so that count read every operation the owner ever
-- ran (a single-user server: every operation), and grew with the database. With this index it
-- reads the live leases alone.
CREATE INDEX IF NOT EXISTS operations_by_owner_lease ON operations (owner, lease_until);
