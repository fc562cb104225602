-- A compatibility level and mode per stream version (issue #27): a
-- stream-bound subject ({stream}-v{N}) has settings of its own, as a free
-- subject has. A settings row is now a (stream, version) scope: version 0
-- is the whole stream, and stream 0 version 0 stays registry-wide. SQLite
-- cannot change a primary key, so the table is rebuilt (it is small).
CREATE TABLE registry_setting_new (
    stream_id INTEGER NOT NULL,
    version   INTEGER NOT NULL DEFAULT 0,
    level     TEXT    NOT NULL DEFAULT '',
    mode      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (stream_id, version)
);
INSERT INTO registry_setting_new (stream_id, version, level, mode) SELECT stream_id, 0, level, mode FROM registry_setting;
DROP TABLE registry_setting;
ALTER TABLE registry_setting_new RENAME TO registry_setting;
