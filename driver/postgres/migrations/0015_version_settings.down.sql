-- Drops the per-version settings 0015_version_settings.sql added; the
-- streams' and the registry-wide settings stay. The code before it judges
-- every version of a stream by the stream's settings.
DELETE FROM registry_setting WHERE version <> 0;
ALTER TABLE registry_setting DROP CONSTRAINT registry_setting_pkey, ADD PRIMARY KEY (stream_id);
ALTER TABLE registry_setting DROP COLUMN version;
