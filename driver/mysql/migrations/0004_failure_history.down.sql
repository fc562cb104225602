-- Drops the failure history 0004_failure_history.sql added. MySQL has no
-- DROP COLUMN IF EXISTS: the directive runs the statement only while the
-- column is there.
-- @if-column delivery_exception failures
ALTER TABLE delivery_exception DROP COLUMN failures;
