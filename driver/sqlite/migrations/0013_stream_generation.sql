-- A stream's configuration generation: Stream.Alter moves it on, and appends
-- and claims planned with another one are refused as stale (streams.go).
ALTER TABLE stream_config ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
