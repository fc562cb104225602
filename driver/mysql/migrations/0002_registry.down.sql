-- Drops what 0002_registry.sql created: the registry's settings, revisions
-- and readers (the schemas every stream registered). Streams, groups and
-- deliveries stay.
DROP TABLE IF EXISTS schema_reader;
DROP TABLE IF EXISTS schema_revision;
DROP TABLE IF EXISTS registry_setting;
