-- Drops the per-version settings 0016_version_settings.sql added; the
-- streams' and the registry-wide settings stay. The code before it judges
-- every version of a stream by the stream's settings. Each step runs only
-- while the column is there, so a rerun after a partial apply skips the
-- steps done.
-- @if-column registry_setting version
DELETE FROM registry_setting WHERE version <> 0;
-- @if-column registry_setting version
ALTER TABLE registry_setting DROP PRIMARY KEY, ADD PRIMARY KEY (stream_id), DROP COLUMN version;
