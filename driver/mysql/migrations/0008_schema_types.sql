-- The language of each registered document ("JSON", "AVRO", "PROTOBUF"),
-- as Confluent's schemaType names it. Every document recorded before this
-- migration is a JSON Schema. The type is part of the fingerprint (for
-- every type but JSON, whose fingerprints stay as they were), so the same
-- text as JSON and as AVRO is two revisions with two global ids. Each
-- change is guarded, as in 0003, so a migration that died half-way runs
-- again.
-- @unless-column schema_revision schema_type
ALTER TABLE schema_revision ADD COLUMN schema_type VARCHAR(32) NOT NULL DEFAULT 'JSON';
-- @unless-column schema_id schema_type
ALTER TABLE schema_id ADD COLUMN schema_type VARCHAR(32) NOT NULL DEFAULT 'JSON';

-- A document of another type need not be JSON (Protobuf is text), so the
-- JSON_VALID check 0002 put on schema_revision.schema_json goes (restated
-- column on MariaDB, dropped constraint on MySQL; a small table). sqlstreams
-- parses every document before it stores it. Going down keeps it off.
-- @drop-checks schema_revision schema_json LONGTEXT NOT NULL
