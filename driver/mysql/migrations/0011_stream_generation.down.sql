-- Removes the configuration generation (0011_stream_generation.sql).
ALTER TABLE stream_config DROP COLUMN generation;
