-- Drops the global schema ids and the references 0005_schema_ids.sql added.
-- Revisions stay; ids handed out before are forgotten.
DROP TABLE schema_reference;
DROP TABLE schema_id;
