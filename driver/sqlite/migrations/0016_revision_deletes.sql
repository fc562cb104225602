-- A soft deletion of a stream's schema revision (Registry.DeleteRevision):
-- the revision is hidden from lookups, listings and the level's checks, and
-- its number is never given again. Only revisions no row of the log and no
-- group's reader needs are deleted (docs/decisions.md). Registering the
-- text of a soft-deleted revision again records a new revision, so a
-- fingerprint is unique among a version's live revisions only: SQLite
-- cannot drop a table's UNIQUE constraint, so the table is rebuilt (it is
-- small) with a partial unique index in its place.
CREATE TABLE schema_revision_new (
    stream_id   INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    revision    INTEGER NOT NULL,
    fingerprint TEXT    NOT NULL,
    schema_json TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    schema_type TEXT    NOT NULL DEFAULT 'JSON',
    deleted     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (stream_id, version, revision)
);
INSERT INTO schema_revision_new (stream_id, version, revision, fingerprint, schema_json, created_at, schema_type)
    SELECT stream_id, version, revision, fingerprint, schema_json, created_at, schema_type FROM schema_revision;
DROP TABLE schema_revision;
ALTER TABLE schema_revision_new RENAME TO schema_revision;
CREATE UNIQUE INDEX schema_revision_live_fingerprint ON schema_revision (stream_id, version, fingerprint) WHERE deleted = 0;
