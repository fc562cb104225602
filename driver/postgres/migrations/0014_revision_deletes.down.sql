-- Drops the soft deletions 0014_revision_deletes.sql added. The code before
-- it would read a soft-deleted revision as live again, so soft-deleted
-- revisions go, with the references they make (no revision may reference a
-- deleted one, and no reader or row uses one). The live revisions of a
-- version have distinct fingerprints, so the UNIQUE constraint comes back.
DELETE FROM schema_reference f USING schema_revision r WHERE r.deleted
    AND r.stream_id = f.stream_id AND r.version = f.version AND r.revision = f.revision;
DELETE FROM schema_revision WHERE deleted;
DROP INDEX schema_revision_live_fingerprint;
ALTER TABLE schema_revision ADD CONSTRAINT schema_revision_stream_id_version_fingerprint_key UNIQUE (stream_id, version, fingerprint);
ALTER TABLE schema_revision DROP COLUMN deleted;
