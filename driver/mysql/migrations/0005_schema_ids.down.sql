-- Drops the global schema ids and the references 0005_schema_ids.sql added.
-- Revisions stay; ids handed out before are forgotten.
DROP TABLE IF EXISTS schema_reference;
DROP TABLE IF EXISTS schema_id;
