-- The schema registry: settings per scope (stream_id 0 is registry-wide,
-- an empty string is unset), revisions per (stream, version), and the reader
-- revision each group registered at a version.
CREATE TABLE registry_setting (
    stream_id bigint PRIMARY KEY,
    level     text   NOT NULL DEFAULT '',
    mode      text   NOT NULL DEFAULT ''
);

CREATE TABLE schema_revision (
    stream_id   bigint      NOT NULL,
    version     integer     NOT NULL,
    revision    integer     NOT NULL,
    fingerprint text        NOT NULL,
    schema_json text        NOT NULL, -- canonical JSON, byte for byte
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (stream_id, version, revision),
    UNIQUE (stream_id, version, fingerprint)
);

CREATE TABLE schema_reader (
    stream_id     bigint      NOT NULL,
    group_name    text        NOT NULL,
    version       integer     NOT NULL,
    revision      integer     NOT NULL,
    registered_at timestamptz NOT NULL,
    PRIMARY KEY (stream_id, group_name, version)
);

-- Older versions a group reads through converters, as a JSON array.
ALTER TABLE consumer_group ADD COLUMN converts_from jsonb NOT NULL DEFAULT '[]';
