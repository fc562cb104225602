-- A compatibility level and mode per stream version (issue #27): a
-- stream-bound subject ({stream}-v{N}) has settings of its own, as a free
-- subject has. A settings row is now a (stream, version) scope: version 0
-- is the whole stream, and stream 0 version 0 stays registry-wide. The
-- key moves in the statement that adds the column, so a rerun after a
-- partial apply skips it.
-- @unless-column registry_setting version
ALTER TABLE registry_setting ADD COLUMN version INT NOT NULL DEFAULT 0, DROP PRIMARY KEY, ADD PRIMARY KEY (stream_id, version);
