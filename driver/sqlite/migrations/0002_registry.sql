-- The schema registry: settings per scope (stream_id 0 is registry-wide,
-- an empty string is unset), revisions per (stream, version), and the reader
-- revision each group registered at a version.
CREATE TABLE registry_setting (
    stream_id INTEGER PRIMARY KEY,
    level     TEXT NOT NULL DEFAULT '',
    mode      TEXT NOT NULL DEFAULT ''
);

CREATE TABLE schema_revision (
    stream_id   INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    revision    INTEGER NOT NULL,
    fingerprint TEXT    NOT NULL,
    schema_json TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (stream_id, version, revision),
    UNIQUE (stream_id, version, fingerprint)
);

CREATE TABLE schema_reader (
    stream_id     INTEGER NOT NULL,
    group_name    TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    revision      INTEGER NOT NULL,
    registered_at INTEGER NOT NULL,
    PRIMARY KEY (stream_id, group_name, version)
);

-- Older versions a group reads through converters, as a JSON array.
ALTER TABLE consumer_group ADD COLUMN converts_from TEXT NOT NULL DEFAULT '[]';
