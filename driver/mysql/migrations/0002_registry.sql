-- The schema registry: settings per scope (stream_id 0 is registry-wide,
-- an empty string is unset), revisions per (stream, version), and the reader
-- revision each group registered at a version.
--
-- A scope's settings row doubles as the lock that serializes schema
-- registrations of a stream (RecordSchema locks it FOR UPDATE).
CREATE TABLE IF NOT EXISTS registry_setting (
    stream_id BIGINT      NOT NULL,
    level     VARCHAR(64) NOT NULL DEFAULT '',
    mode      VARCHAR(64) NOT NULL DEFAULT '',
    PRIMARY KEY (stream_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS schema_revision (
    stream_id   BIGINT      NOT NULL,
    version     INT         NOT NULL,
    revision    INT         NOT NULL,
    fingerprint VARCHAR(128) NOT NULL,
    schema_json LONGTEXT    NOT NULL CHECK (JSON_VALID(schema_json)),
    created_at  DATETIME(6) NOT NULL,
    PRIMARY KEY (stream_id, version, revision),
    UNIQUE KEY schema_revision_fingerprint (stream_id, version, fingerprint)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS schema_reader (
    stream_id     BIGINT       NOT NULL,
    group_name    VARCHAR(128) NOT NULL,
    version       INT          NOT NULL,
    revision      INT          NOT NULL,
    registered_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (stream_id, group_name, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
