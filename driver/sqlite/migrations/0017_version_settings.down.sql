-- Drops the per-version settings 0017_version_settings.sql added; the
-- streams' and the registry-wide settings stay. The code before it judges
-- every version of a stream by the stream's settings.
CREATE TABLE registry_setting_old (
    stream_id INTEGER PRIMARY KEY,
    level     TEXT NOT NULL DEFAULT '',
    mode      TEXT NOT NULL DEFAULT ''
);
INSERT INTO registry_setting_old (stream_id, level, mode) SELECT stream_id, level, mode FROM registry_setting WHERE version = 0;
DROP TABLE registry_setting;
ALTER TABLE registry_setting_old RENAME TO registry_setting;
