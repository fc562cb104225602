-- Drops the failure history 0004_failure_history.sql added.
ALTER TABLE delivery_exception DROP COLUMN failures;
