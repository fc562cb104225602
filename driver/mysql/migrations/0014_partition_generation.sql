-- Each partition's append lock row carries the stream's configuration
-- generation (0011), so that an append reads it from the rows it locks
-- FOR UPDATE anyway. Reading stream_config in the append's statement
-- would share-lock that row (InnoDB locks what an INSERT ... SELECT reads)
-- and wait for maintenance, which holds it while it removes rows.
-- @unless-column stream_partition generation
ALTER TABLE stream_partition ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
UPDATE stream_partition p JOIN stream_config c ON c.id = p.stream_id SET p.generation = c.generation;
