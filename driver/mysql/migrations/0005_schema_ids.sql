-- Global schema ids, one per distinct fingerprint across streams (the id a
-- Confluent-compatible client sees), and the references a revision makes
-- to other revisions (a shared type recorded once as its own schema).
CREATE TABLE IF NOT EXISTS schema_id (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    fingerprint VARCHAR(128) NOT NULL,
    schema_json LONGTEXT     NOT NULL,
    created_at  DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY schema_id_fingerprint (fingerprint)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Revisions recorded before this migration get ids in the order they were
-- first recorded (INSERT IGNORE: a rerun after a partial apply adds none twice).
INSERT IGNORE INTO schema_id (fingerprint, schema_json, created_at)
SELECT fingerprint, MIN(schema_json), MIN(created_at) FROM schema_revision
GROUP BY fingerprint ORDER BY MIN(created_at), fingerprint;

-- ref_fingerprint pins the referenced revision's content.
CREATE TABLE IF NOT EXISTS schema_reference (
    stream_id       BIGINT       NOT NULL,
    version         INT          NOT NULL,
    revision        INT          NOT NULL,
    position        INT          NOT NULL,
    name            VARCHAR(255) NOT NULL,
    ref_stream_id   BIGINT       NOT NULL,
    ref_version     INT          NOT NULL,
    ref_revision    INT          NOT NULL,
    ref_fingerprint VARCHAR(128) NOT NULL,
    PRIMARY KEY (stream_id, version, revision, position),
    KEY schema_reference_target (ref_stream_id, ref_version, ref_revision)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
