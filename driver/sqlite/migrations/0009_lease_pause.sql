-- A settle in the caller's transaction (AckTx, RetryTx, DeadTx) holds the
-- file's one writer until that transaction ends, so no member's heartbeat
-- can extend a lease meanwhile. The settle records here, in that
-- transaction, when it took place; the first claim or extension after the
-- COMMIT gives every lease that was live then the time since (leases do not
-- run while nobody can extend them) and deletes the record (pause.go).
CREATE TABLE lease_pause (since INTEGER NOT NULL);
