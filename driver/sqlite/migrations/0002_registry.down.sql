-- Removes the schema registry: its settings, revisions and readers, and the
-- converter versions of groups. Streams, groups and deliveries stay.
ALTER TABLE consumer_group DROP COLUMN converts_from;
DROP TABLE schema_reader;
DROP TABLE schema_revision;
DROP TABLE registry_setting;
