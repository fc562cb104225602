-- A stream's configuration generation: Stream.Alter moves it on, and appends
-- and claims planned with another one are refused as stale. Each partition
-- row carries it too, so that an append reads it from the rows it locks: a
-- lock granted after an alter committed returns the rows as the alter left
-- them, where a read of stream_config in the same statement would still see
-- the statement's earlier snapshot.
ALTER TABLE stream_config ADD COLUMN generation bigint NOT NULL DEFAULT 0;
ALTER TABLE stream_partition ADD COLUMN generation bigint NOT NULL DEFAULT 0;
