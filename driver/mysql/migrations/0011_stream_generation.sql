-- A stream's configuration generation: Stream.Alter moves it on, and appends
-- and claims planned with another one are refused as stale.
-- @unless-column stream_config generation
ALTER TABLE stream_config ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
