-- Removes the record of settles in callers' transactions (0009_lease_pause.sql).
DROP TABLE lease_pause;
