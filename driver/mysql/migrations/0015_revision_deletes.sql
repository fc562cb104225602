-- A soft deletion of a stream's schema revision (Registry.DeleteRevision):
-- the revision is hidden from lookups, listings and the level's checks, and
-- its number is never given again. Only revisions no row of the log and no
-- group's reader needs are deleted (docs/decisions.md). Registering the
-- text of a soft-deleted revision again records a new revision, so a
-- fingerprint is unique among a version's live revisions only: the unique
-- key moves to a generated column that is NULL for a deleted revision
-- (NULLs never collide). Guarded, as in 0003, so a migration that died
-- half-way runs again; the key moves in one statement.
-- @unless-column schema_revision deleted
ALTER TABLE schema_revision ADD COLUMN deleted TINYINT NOT NULL DEFAULT 0;
-- @unless-column schema_revision live_fingerprint
ALTER TABLE schema_revision ADD COLUMN live_fingerprint VARCHAR(128) AS (IF(deleted = 0, fingerprint, NULL)) VIRTUAL,
    ADD UNIQUE KEY schema_revision_live_fingerprint (stream_id, version, live_fingerprint),
    DROP INDEX schema_revision_fingerprint;
