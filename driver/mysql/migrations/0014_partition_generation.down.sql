-- Removes the partitions' generation (0014_partition_generation.sql).
ALTER TABLE stream_partition DROP COLUMN generation;
