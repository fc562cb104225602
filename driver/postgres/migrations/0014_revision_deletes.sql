-- A soft deletion of a stream's schema revision (Registry.DeleteRevision):
-- the revision is hidden from lookups, listings and the level's checks, and
-- its number is never given again. Only revisions no row of the log and no
-- group's reader needs are deleted (docs/decisions.md). Registering the
-- text of a soft-deleted revision again records a new revision, so a
-- fingerprint is unique among a version's live revisions only.
ALTER TABLE schema_revision ADD COLUMN deleted boolean NOT NULL DEFAULT false;
ALTER TABLE schema_revision DROP CONSTRAINT schema_revision_stream_id_version_fingerprint_key;
CREATE UNIQUE INDEX schema_revision_live_fingerprint ON schema_revision (stream_id, version, fingerprint) WHERE NOT deleted;
