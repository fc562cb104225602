-- Drops the soft deletions 0016_revision_deletes.sql added. The code before
-- it would read a soft-deleted revision as live again, so soft-deleted
-- revisions go, with the references they make (no revision may reference a
-- deleted one, and no reader or row uses one). The live revisions of a
-- version have distinct fingerprints, so the UNIQUE constraint comes back.
DELETE FROM schema_reference WHERE EXISTS (SELECT 1 FROM schema_revision r WHERE r.deleted <> 0
    AND r.stream_id = schema_reference.stream_id AND r.version = schema_reference.version AND r.revision = schema_reference.revision);
CREATE TABLE schema_revision_old (
    stream_id   INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    revision    INTEGER NOT NULL,
    fingerprint TEXT    NOT NULL,
    schema_json TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    schema_type TEXT    NOT NULL DEFAULT 'JSON',
    PRIMARY KEY (stream_id, version, revision),
    UNIQUE (stream_id, version, fingerprint)
);
INSERT INTO schema_revision_old (stream_id, version, revision, fingerprint, schema_json, created_at, schema_type)
    SELECT stream_id, version, revision, fingerprint, schema_json, created_at, schema_type FROM schema_revision WHERE deleted = 0;
DROP TABLE schema_revision;
ALTER TABLE schema_revision_old RENAME TO schema_revision;
