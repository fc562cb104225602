-- Drops the free subjects (0012_subjects.sql) with their versions, levels
-- and modes. No row of a log names them; the global ids and their
-- documents stay in schema_id.
DROP TABLE IF EXISTS subject_reference;
DROP TABLE IF EXISTS subject_version;
DROP TABLE IF EXISTS registry_subject;
