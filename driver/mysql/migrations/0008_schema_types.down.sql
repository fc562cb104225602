-- Drops the document types 0008_schema_types.sql added. The code before it
-- read every document as JSON Schema, so documents of other types go with
-- the column: their revisions, the readers and references that name them,
-- and their global ids (AUTO_INCREMENT never hands them out again). No row
-- of a log names them: rows are written by Go types, whose schemas are JSON.
-- The deletes run only while the column is there, so a rerun after a
-- partial apply skips them.
-- @if-column schema_revision schema_type
DELETE f FROM schema_reference f JOIN schema_revision r ON r.schema_type <> 'JSON'
    AND ((r.stream_id = f.stream_id AND r.version = f.version AND r.revision = f.revision)
      OR (r.stream_id = f.ref_stream_id AND r.version = f.ref_version AND r.revision = f.ref_revision));
-- @if-column schema_revision schema_type
DELETE d FROM schema_reader d JOIN schema_revision r ON r.schema_type <> 'JSON'
    AND r.stream_id = d.stream_id AND r.version = d.version AND r.revision = d.revision;
-- @if-column schema_revision schema_type
DELETE FROM schema_revision WHERE schema_type <> 'JSON';
-- @if-column schema_id schema_type
DELETE FROM schema_id WHERE schema_type <> 'JSON';
-- @if-column schema_revision schema_type
ALTER TABLE schema_revision DROP COLUMN schema_type;
-- @if-column schema_id schema_type
ALTER TABLE schema_id DROP COLUMN schema_type;
