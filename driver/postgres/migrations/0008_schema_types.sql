-- The language of each registered document ("JSON", "AVRO", "PROTOBUF"),
-- as Confluent's schemaType names it. Every document recorded before this
-- migration is a JSON Schema. The type is part of the fingerprint (for
-- every type but JSON, whose fingerprints stay as they were), so the same
-- text as JSON and as AVRO is two revisions with two global ids.
ALTER TABLE schema_revision ADD COLUMN schema_type text NOT NULL DEFAULT 'JSON';
ALTER TABLE schema_id ADD COLUMN schema_type text NOT NULL DEFAULT 'JSON';
