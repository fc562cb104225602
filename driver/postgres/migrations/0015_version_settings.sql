-- A compatibility level and mode per stream version (issue #27): a
-- stream-bound subject ({stream}-v{N}) has settings of its own, as a free
-- subject has. A settings row is now a (stream, version) scope: version 0
-- is the whole stream, and stream 0 version 0 stays registry-wide.
ALTER TABLE registry_setting ADD COLUMN version integer NOT NULL DEFAULT 0;
ALTER TABLE registry_setting DROP CONSTRAINT registry_setting_pkey, ADD PRIMARY KEY (stream_id, version);
