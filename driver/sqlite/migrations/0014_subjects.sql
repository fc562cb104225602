-- Free subjects (issue #27): registry subjects named as Kafka clients name
-- them ("orders-value", "shop.orders.OrderPlaced"), bound to no stream. A
-- subject has its own level and mode (empty: unset), also before its first
-- version; each version points at a global schema id (schema_id keeps the
-- document, its type and fingerprint). deleted marks a soft deletion.
CREATE TABLE registry_subject (
    name       TEXT    NOT NULL PRIMARY KEY,
    level      TEXT    NOT NULL DEFAULT '',
    mode       TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);

CREATE TABLE subject_version (
    subject    TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    schema_id  INTEGER NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (subject, version)
);
CREATE INDEX subject_version_schema ON subject_version (schema_id);

-- The subject versions a version's document refers to by name.
CREATE TABLE subject_reference (
    subject     TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    ref_subject TEXT    NOT NULL,
    ref_version INTEGER NOT NULL,
    PRIMARY KEY (subject, version, position)
);
CREATE INDEX subject_reference_target ON subject_reference (ref_subject, ref_version);
