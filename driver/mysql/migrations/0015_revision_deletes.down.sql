-- Drops the soft deletions 0015_revision_deletes.sql added. The code before
-- it would read a soft-deleted revision as live again, so soft-deleted
-- revisions go, with the references they make (no revision may reference a
-- deleted one, and no reader or row uses one). The live revisions of a
-- version have distinct fingerprints, so the unique key comes back. Each
-- step runs only while what it removes is there, so a rerun after a
-- partial apply skips the steps done.
-- @if-column schema_revision deleted
DELETE f FROM schema_reference f JOIN schema_revision r ON r.deleted <> 0
    AND r.stream_id = f.stream_id AND r.version = f.version AND r.revision = f.revision;
-- @if-column schema_revision deleted
DELETE FROM schema_revision WHERE deleted <> 0;
-- @if-column schema_revision live_fingerprint
ALTER TABLE schema_revision ADD UNIQUE KEY schema_revision_fingerprint (stream_id, version, fingerprint),
    DROP INDEX schema_revision_live_fingerprint, DROP COLUMN live_fingerprint;
-- @if-column schema_revision deleted
ALTER TABLE schema_revision DROP COLUMN deleted;
