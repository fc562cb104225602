-- Drops the document types 0010_schema_types.sql added. The code before it
-- read every document as JSON Schema, so documents of other types go with
-- the column: their revisions, the readers and references that name them,
-- and their global ids (never handed out again: AUTOINCREMENT). No row of a
-- log names them: rows are written by Go types, whose schemas are JSON.
DELETE FROM schema_reference WHERE EXISTS (SELECT 1 FROM schema_revision r WHERE r.schema_type <> 'JSON'
    AND ((r.stream_id = schema_reference.stream_id AND r.version = schema_reference.version AND r.revision = schema_reference.revision)
      OR (r.stream_id = schema_reference.ref_stream_id AND r.version = schema_reference.ref_version AND r.revision = schema_reference.ref_revision)));
DELETE FROM schema_reader WHERE EXISTS (SELECT 1 FROM schema_revision r WHERE r.schema_type <> 'JSON'
    AND r.stream_id = schema_reader.stream_id AND r.version = schema_reader.version AND r.revision = schema_reader.revision);
DELETE FROM schema_revision WHERE schema_type <> 'JSON';
DELETE FROM schema_id WHERE schema_type <> 'JSON';
ALTER TABLE schema_revision DROP COLUMN schema_type;
ALTER TABLE schema_id DROP COLUMN schema_type;
