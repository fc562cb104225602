-- Drops what 0002_registry.sql created: the registry's settings, revisions
-- and readers, and the converter versions of groups (which then read their
-- own version only). Streams, groups and deliveries stay.
ALTER TABLE consumer_group DROP COLUMN converts_from;
DROP TABLE schema_reader;
DROP TABLE schema_revision;
DROP TABLE registry_setting;
