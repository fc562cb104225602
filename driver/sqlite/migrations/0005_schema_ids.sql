-- Global schema ids, one per distinct fingerprint across streams (the id a
-- Confluent-compatible client sees), and the references a revision makes
-- to other revisions (a shared type recorded once as its own schema).
-- AUTOINCREMENT: an id is never handed out twice, even after deletions.
CREATE TABLE schema_id (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT    NOT NULL UNIQUE,
    schema_json TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

-- Revisions recorded before this migration get ids in the order they were
-- first recorded.
INSERT INTO schema_id (fingerprint, schema_json, created_at)
SELECT fingerprint, MIN(schema_json), MIN(created_at) FROM schema_revision
GROUP BY fingerprint ORDER BY MIN(created_at), fingerprint;

-- ref_fingerprint pins the referenced revision's content, so a reference
-- never attaches to another stream that later reuses a deleted stream's id.
CREATE TABLE schema_reference (
    stream_id       INTEGER NOT NULL,
    version         INTEGER NOT NULL,
    revision        INTEGER NOT NULL,
    position        INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    ref_stream_id   INTEGER NOT NULL,
    ref_version     INTEGER NOT NULL,
    ref_revision    INTEGER NOT NULL,
    ref_fingerprint TEXT    NOT NULL,
    PRIMARY KEY (stream_id, version, revision, position)
);
CREATE INDEX schema_reference_target ON schema_reference (ref_stream_id, ref_version, ref_revision);
