-- Removes the configuration generation (0013_stream_generation.sql).
ALTER TABLE stream_partition DROP COLUMN generation;
ALTER TABLE stream_config DROP COLUMN generation;
